package model

import (
	"math"

	"nanoserve/tensor"
)

// gpt-oss's blocks (llama.cpp src/models/openai-moe.cpp).
//
// Attention: every query head h has a learned sink logit z_h that joins
// the softmax's denominator and carries no value,
//
//	a_h = Σ_p e^(s_p) V[p] / (Σ_p e^(s_p) + e^(z_h)),
//
// so a head can attend to "nothing" (attendRange). Even layers attend over
// a sliding window, odd ones over everything; q, k, v and o have biases;
// RoPE is YaRN-scaled (ropeFreqsBase, ropeMScale).
//
// Experts: the router logits r = Wr·h + br choose the top-k experts by
// logit, and their weights are the softmax over just those k logits (not a
// renormalised softmax over all experts: the same order, other values).
// Each expert is biased and uses the clamped SwiGLU
//
//	g' = min(g, 7),  u' = clamp(u, −7, 7)
//	y  = g'·σ(1.702·g') · (u' + 1)
//
// (LLM_FFN_SWIGLU_OAI_MOE, alpha 1.702, limit 7).

const (
	oaiAlpha = 1.702
	oaiLimit = 7
)

// swigluOAI sets gate[i] to the clamped SwiGLU of gate[i] and up[i].
func swigluOAI(gate, up []float32) {
	_ = up[:len(gate)]
	for i, g := range gate {
		g = min(g, oaiLimit)
		u := max(min(up[i], oaiLimit), -oaiLimit)
		sg := float32(1 / (1 + math.Exp(-float64(oaiAlpha*g))))
		gate[i] = g * sg * (u + 1)
	}
}

// routeTopKSoftmax chooses each of the n tokens' experts from their
// (biased) router logits: the used largest logits, largest first (ties:
// lower index), weighted by the softmax over the chosen logits.
func (w *moeWork) routeTopKSoftmax(n, experts, used int) {
	for i := range n {
		p := w.logits[i*experts : (i+1)*experts]
		sel, wt := w.sel[i*used:(i+1)*used], w.wt[i*used:(i+1)*used]
		topK(sel, p)
		for s, e := range sel {
			wt[s] = p[e]
		}
		tensor.Softmax(wt)
	}
}
