package model

import (
	"math"
	"slices"

	"nanoserve/tensor"
)

// Mixture-of-experts feed-forward (Mixtral, Qwen3-MoE).
//
// For a token's normalised activations h (dim), the router gives one logit
// per expert, r = Wr·h (experts), computed in float32 as llama.cpp does
// (its converters store Wr as F32). Then
//
//	p     = softmax(r)                       (experts)
//	S     = the ExpertsUsed largest p_e, in descending order (ties: lower e first)
//	w_s   = p_s / Σ_{s'∈S} p_s'              renormalised over the chosen ones
//	out   = Σ_{s∈S} w_s · Wdown_s·(silu(Wgate_s·h) ⊙ Wup_s·h)
//
// with the sum taken in the order of S, whatever other tokens chose.
//
// Only the chosen experts' matrices are read: a decode step touches
// ExpertsUsed of the Experts slabs per layer (bandwidth ∝ active
// parameters). A batch is grouped by expert, so each chosen expert's three
// matrices are multiplied once over the (token, slot) pairs that chose it,
// in batch order. Each pair's expert output lands in its own row
// (n, ExpertsUsed, dim) and the weighted sum runs per token in slot order;
// tensor.MatMul is batch invariant and SwiGLU runs row by row, so grouping
// changes no token's arithmetic: its result is bit-identical whatever
// other tokens share the step (TestMoEBatchInvariant).

// GatingSigmoid is Config.ExpertGating for σ-gated routers with a
// selection bias (lfm2moe; llama.cpp's build_moe_ffn with
// LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID, exp_probs_b and norm_w):
//
//	p_e = σ(r_e),  S = the ExpertsUsed largest p_e + b_e (ties: lower e first)
//	w_s = p_s / max(Σ_{s'∈S} p_s', 2⁻¹⁴)
//
// (the bias b chooses, it does not weight; 2⁻¹⁴ is llama.cpp's clamp of the
// sum, the smallest normal F16).
const GatingSigmoid = "sigmoid"

// moeLayer reports whether layer l's FFN is the mixture of experts (not
// one of the DenseLead leading dense layers).
func (c *Config) moeLayer(l int) bool { return c.Experts > 0 && l >= c.DenseLead }

// moeWork is the scratch of the expert FFN; it grows with the batch.
type moeWork struct {
	n      int       // token capacity
	logits []float32 // (n, experts) router logits, then probabilities
	score  []float32 // (n, experts) σ routers' selection scores p + b
	sel    []int     // (n, used) chosen experts per token, descending probability
	wt     []float32 // (n, used) their renormalised weights
	pairs  []int     // (n·used) token·used+slot pairs grouped by expert, in batch order within each
	start  []int     // (experts+1) expert e's pairs are pairs[start[e]:start[e+1]]
	next   []int     // (experts) fill positions while grouping
	active []int     // experts with at least one pair, ascending
	xe     []float32 // (n·used, dim) gathered inputs of one expert's pairs
	h1, h2 []float32 // (n·used, expert_hidden) gate and up products
	ye     []float32 // (n·used, dim) one expert's outputs
	out    []float32 // (n, used, dim) every pair's expert output

	// trace, when non-nil (tests), receives every layer's choices after
	// routing: sel (n, used) and the scores they were chosen by (n,
	// experts): the router probabilities, or σ gating's p + b.
	trace func(sel []int, probs []float32)
}

func (w *moeWork) grow(n int, c *Config) {
	if w.n >= n {
		return
	}
	w.n = n
	k := c.ExpertsUsed
	w.logits = make([]float32, n*c.Experts)
	if c.ExpertGating == GatingSigmoid {
		w.score = make([]float32, n*c.Experts)
	}
	w.sel = make([]int, n*k)
	w.wt = make([]float32, n*k)
	w.pairs = make([]int, n*k)
	w.start = make([]int, c.Experts+1)
	w.next = make([]int, c.Experts)
	w.active = make([]int, 0, c.Experts)
	w.xe = make([]float32, n*k*c.Dim)
	w.h1 = make([]float32, n*k*c.ExpertHiddenDim)
	w.h2 = make([]float32, n*k*c.ExpertHiddenDim)
	w.ye = make([]float32, n*k*c.Dim)
	w.out = make([]float32, n*k*c.Dim)
}

// route computes the chosen experts and weights of each of the n tokens
// from their router logits (softmax, top-k, renormalise).
func (w *moeWork) route(n, experts, used int) {
	for i := range n {
		p := w.logits[i*experts : (i+1)*experts]
		tensor.Softmax(p)
		sel, wt := w.sel[i*used:(i+1)*used], w.wt[i*used:(i+1)*used]
		topK(sel, p)
		weighChosen(wt, sel, p, 0)
	}
}

// weighChosen sets wt[s] = p[sel[s]] / max(Σ_s p[sel[s]], floor), the
// sum taken in sel's order.
func weighChosen(wt []float32, sel []int, p []float32, floor float32) {
	var sum float32
	for s, e := range sel {
		wt[s] = p[e]
		sum += p[e]
	}
	sum = max(sum, floor)
	for s := range wt {
		wt[s] /= sum
	}
}

// routeSigmoid is route for σ gating (GatingSigmoid) with the selection
// bias b (experts; nil: none).
func (w *moeWork) routeSigmoid(n, experts, used int, b []float32) {
	for i := range n {
		p := w.logits[i*experts : (i+1)*experts]
		s := w.score[i*experts : (i+1)*experts]
		for e, r := range p {
			p[e] = sigmoid32(r)
			s[e] = p[e]
			if b != nil {
				s[e] += b[e]
			}
		}
		sel, wt := w.sel[i*used:(i+1)*used], w.wt[i*used:(i+1)*used]
		topK(sel, s)
		weighChosen(wt, sel, p, 0x1p-14)
	}
}

// sigmoid32 is σ(x) = 1/(1+e^-x) in float32 from a float64 exponential.
func sigmoid32(x float32) float32 {
	return float32(1 / (1 + math.Exp(-float64(x))))
}

// topK writes the indices of the len(sel) largest values of p into sel,
// largest first; equal values keep index order.
func topK(sel []int, p []float32) {
	for s := range sel {
		best := -1
		for e, v := range p {
			if slices.Contains(sel[:s], e) {
				continue
			}
			if best < 0 || v > p[best] {
				best = e
			}
		}
		sel[s] = best
	}
}

// moeFFN replaces ws.xb (n, dim) by layer lw's expert mixture of it.
//
// The (token, slot) pairs are grouped by expert (a counting sort that
// keeps batch order within an expert), each active expert's pairs get a
// disjoint segment of the scratch rows, and the experts run either whole
// experts in parallel, one per worker with its products on that worker
// (few pairs per expert, as in decode: 8 small experts then cost one
// hand-off instead of 24), or one after another with each product split
// over the pool (prefill: many rows per expert). A pair's arithmetic is
// the same either way.
func (m *Model) moeFFN(lw *layerWeights, n int) {
	m.moeFFNFrom(lw, n, m.ws.xb[:n*m.Dim])
}

// moeFFNFrom is moeFFN with the router reading routerIn (n, dim) instead
// of ws.xb (Gemma 4 routes on its own normalisation of the stream).
func (m *Model) moeFFNFrom(lw *layerWeights, n int, routerIn []float32) {
	c, ws, w := &m.Config, &m.ws, &m.moe
	dim, k := c.Dim, c.ExpertsUsed
	xb := ws.xb[:n*dim]
	m.pool.MatMul(w.logits[:n*c.Experts], lw.router, routerIn, n)
	scores := w.logits[:n*c.Experts]
	switch {
	case c.OAIMoE:
		addBias(w.logits[:n*c.Experts], lw.routerB, n)
		w.routeTopKSoftmax(n, c.Experts, k)
	case c.ExpertGating == GatingSigmoid:
		w.routeSigmoid(n, c.Experts, k, lw.routerSelB)
		scores = w.score[:n*c.Experts]
	default:
		w.route(n, c.Experts, k)
	}
	if w.trace != nil {
		w.trace(w.sel[:n*k], scores)
	}
	clear(w.start)
	for _, e := range w.sel[:n*k] {
		w.start[e+1]++
	}
	w.active = w.active[:0]
	for e := range c.Experts {
		if w.start[e+1] > 0 {
			w.active = append(w.active, e)
		}
		w.start[e+1] += w.start[e]
	}
	next := w.next[:c.Experts]
	copy(next, w.start[:c.Experts])
	for p, e := range w.sel[:n*k] { // p = token·used + slot, ascending: batch order
		w.pairs[next[e]] = p
		next[e]++
	}
	if th := m.pool.Threads(); th > 1 && len(w.active) >= th && n*k <= 4*len(w.active) {
		j := &m.job
		j.lw = lw
		m.parallel(jobExperts, len(w.active), 1)
	} else {
		for _, e := range w.active {
			m.runExpert(lw, e, m.pool)
		}
	}
	for i := range n {
		x := xb[i*dim : (i+1)*dim]
		clear(x)
		for s := range k {
			wt := w.wt[i*k+s]
			o := w.out[(i*k+s)*dim : (i*k+s+1)*dim]
			for j, v := range o {
				x[j] += wt * v
			}
		}
	}
}

// runExpert computes expert e of layer lw for its pairs (their segment of
// the scratch rows), its products on pool (nil: the calling goroutine),
// and writes each pair's output row.
func (m *Model) runExpert(lw *layerWeights, e int, pool *tensor.Pool) {
	c, w := &m.Config, &m.moe
	dim, eh, k := c.Dim, c.ExpertHiddenDim, c.ExpertsUsed
	lo, hi := w.start[e], w.start[e+1]
	r := hi - lo
	xb := m.ws.xb
	xe, ye := w.xe[lo*dim:hi*dim], w.ye[lo*dim:hi*dim]
	h1, h2 := w.h1[lo*eh:hi*eh], w.h2[lo*eh:hi*eh]
	for j, pr := range w.pairs[lo:hi] {
		i := pr / k
		copy(xe[j*dim:(j+1)*dim], xb[i*dim:(i+1)*dim])
	}
	pool.MatMul(h1, lw.expGate[e], xe, r)
	pool.MatMul(h2, lw.expUp[e], xe, r)
	if c.OAIMoE {
		addBias(h1, lw.expGateB[e*eh:(e+1)*eh], r)
		addBias(h2, lw.expUpB[e*eh:(e+1)*eh], r)
		for j := range r {
			swigluOAI(h1[j*eh:(j+1)*eh], h2[j*eh:(j+1)*eh])
		}
	} else if c.GELUGate { // Gemma 4: GeGLU experts
		for i, g := range h1 {
			h1[i] = geluTanh(g) * h2[i]
		}
	} else {
		for j := range r { // row by row, as elementwise (batch invariance)
			tensor.SwiGLU(h1[j*eh:(j+1)*eh], h2[j*eh:(j+1)*eh])
		}
	}
	pool.MatMul(ye, lw.expDown[e], h1, r)
	if lw.g4 != nil && lw.g4.downScale != nil {
		s := lw.g4.downScale[e]
		for i := range ye {
			ye[i] *= s
		}
	}
	if c.OAIMoE {
		addBias(ye, lw.expDownB[e*dim:(e+1)*dim], r)
	}
	for j, pr := range w.pairs[lo:hi] {
		copy(w.out[pr*dim:(pr+1)*dim], ye[j*dim:(j+1)*dim])
	}
}
