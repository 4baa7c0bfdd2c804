package model

import (
	"math"
	"slices"

	"nanoserve/tensor"
)

// The reference (float64) forms of gpt-oss's experts and Gemma 4's
// per-layer inputs; see gptoss.go and gemma4.go for the maths.

// refMoEOAI is gpt-oss's mixture of experts of the L rows of h given the
// biased router logits r (L, experts): the top-k logits (ties: lower
// index), softmax over them, biased experts with the clamped SwiGLU.
func refMoEOAI(cfg *Config, lw *layerWeights, h, r []float64, L int, rnd refRounding) []float64 {
	dim, eh := cfg.Dim, cfg.ExpertHiddenDim
	out := make([]float64, L*dim)
	for i := range L {
		p := r[i*cfg.Experts : (i+1)*cfg.Experts]
		chosen := make([]bool, len(p))
		sel := make([]int, 0, cfg.ExpertsUsed)
		for range cfg.ExpertsUsed {
			best := -1
			for e := range p {
				if !chosen[e] && (best < 0 || p[e] > p[best]) {
					best = e
				}
			}
			chosen[best] = true
			sel = append(sel, best)
		}
		mx := p[sel[0]]
		wt := make([]float64, len(sel))
		var sum float64
		for s, e := range sel {
			wt[s] = math.Exp(p[e] - mx)
			sum += wt[s]
		}
		hi := h[i*dim : (i+1)*dim]
		for s, e := range sel {
			g := rnd.matMul(lw.expGate[e], hi, 1, lw.expGateB[e*eh:(e+1)*eh])
			u := rnd.matMul(lw.expUp[e], hi, 1, lw.expUpB[e*eh:(e+1)*eh])
			for j := range g {
				gj := math.Min(g[j], oaiLimit)
				uj := math.Max(math.Min(u[j], oaiLimit), -oaiLimit)
				g[j] = gj / (1 + math.Exp(-oaiAlpha*gj)) * (uj + 1)
			}
			d := rnd.matMul(lw.expDown[e], g, 1, lw.expDownB[e*dim:(e+1)*dim])
			for j, v := range d {
				out[i*dim+j] += wt[s] / sum * v
			}
		}
	}
	return out
}

// refPerLayerInputs is perLayerInputs in float64 from the scaled
// embeddings x (L, dim): (L, layers, per_layer).
func refPerLayerInputs(cfg *Config, w *weights, tokens []int, x []float64, rnd refRounding) []float64 {
	P, nl, dim := cfg.PerLayerDim, cfg.Layers, cfg.Dim
	L := len(tokens)
	pl := rnd.matMul(w.perLayerProj, x, L, nil)
	row := make([]float32, nl*P)
	for i, tok := range tokens {
		tensor.DequantizeRow(row, w.perLayerEmb.Type, w.perLayerEmb.Row(tok))
		for l := range nl {
			s := pl[i*nl*P+l*P : i*nl*P+(l+1)*P]
			for j := range s {
				s[j] /= math.Sqrt(float64(dim))
			}
			refRMSNorm(s, w.perLayerNorm, cfg.NormEps)
			for j := range s {
				s[j] = (s[j] + math.Sqrt(float64(P))*float64(row[l*P+j])) / math.Sqrt2
			}
		}
	}
	return pl
}

// refPerLayerBlock adds layer l's per-layer input term to x (L, dim).
func refPerLayerBlock(cfg *Config, lw *layerWeights, l int, x, perLayer []float64, L int, rnd refRounding) {
	P, nl := cfg.PerLayerDim, cfg.Layers
	h := rnd.matMul(lw.plGate, x, L, nil) // (L, P)
	for i := range L {
		for j := range P {
			h[i*P+j] = rnd.gelu(h[i*P+j]) * perLayer[i*nl*P+l*P+j]
		}
	}
	o := refNorm(cfg, rnd.matMul(lw.plProj, h, L, nil), lw.plPostNorm, nil)
	for i := range x {
		x[i] += o[i]
	}
}

// refGemma4FFN is gemma4FFN in float64: x (L, dim) the stream, h its
// ffn_norm; returns mlp + moe (see gemma4.go).
func refGemma4FFN(cfg *Config, lw *layerWeights, x, h []float64, L int, rnd refRounding) []float64 {
	dim := cfg.Dim
	a := rnd.matMul(lw.wGate, h, L, nil)
	up := rnd.matMul(lw.wUp, h, L, nil)
	for i, g := range a {
		a[i] = rnd.gelu(g) * up[i]
	}
	mlp := refNorm(cfg, rnd.matMul(lw.wDown, a, L, nil), lw.g4.postNorm1, nil)

	r := slices.Clone(x)
	for i := range L {
		ri := r[i*dim : (i+1)*dim]
		refRMSNorm(ri, nil, cfg.NormEps)
		for j := range ri {
			ri[j] = ri[j] / math.Sqrt(float64(dim)) * float64(lw.g4.routerScale[j])
		}
	}
	logits := rnd.matMul(lw.router, r, L, nil) // (L, experts)
	h2 := refNorm(cfg, x, lw.g4.preNorm2, nil)
	moe := make([]float64, L*dim)
	for i := range L {
		p := logits[i*cfg.Experts : (i+1)*cfg.Experts]
		mx := math.Inf(-1)
		for _, v := range p {
			mx = math.Max(mx, v)
		}
		for e := range p {
			p[e] = math.Exp(p[e] - mx)
		}
		chosen := make([]bool, len(p))
		sel := make([]int, 0, cfg.ExpertsUsed)
		var wsum float64
		for range cfg.ExpertsUsed {
			best := -1
			for e := range p {
				if !chosen[e] && (best < 0 || p[e] > p[best]) {
					best = e
				}
			}
			chosen[best] = true
			sel = append(sel, best)
			wsum += p[best]
		}
		hi := h2[i*dim : (i+1)*dim]
		for _, e := range sel {
			g := rnd.matMul(lw.expGate[e], hi, 1, nil)
			u := rnd.matMul(lw.expUp[e], hi, 1, nil)
			for j := range g {
				g[j] = rnd.gelu(g[j]) * u[j]
			}
			d := rnd.matMul(lw.expDown[e], g, 1, nil)
			wt := p[e] / wsum
			if lw.g4.downScale != nil {
				wt *= float64(lw.g4.downScale[e])
			}
			for j, v := range d {
				moe[i*dim+j] += wt * v
			}
		}
	}
	moe = refNorm(cfg, moe, lw.g4.postNorm2, nil)
	for i := range moe {
		moe[i] += mlp[i]
	}
	return moe
}
