package model

import (
	"math"

	"nanoserve/tensor"
)

// The float64 reference of the hybrid token mixers (hybrid.go): the whole
// sequence from a zero state, written from the equations, not from the
// cached code path.

// refHybridMixer returns layer lw's mixer output (L, dim) for the
// normalised rows h of a whole sequence.
func (m *Model) refHybridMixer(lw *layerWeights, h []float64, L int, rnd refRounding) []float64 {
	cfg := &m.Config
	r := lw.rec
	switch {
	case r == nil:
		return m.refHybridAttention(lw, h, L, rnd)
	case cfg.SSMVHeads > 0:
		return m.refDeltaNet(r, h, L, rnd)
	case cfg.MambaHeads > 0:
		return m.refMamba2(r, h, L, rnd)
	}
	// Short convolution: [b ‖ c ‖ x] = W_in·h, out = W_out·(c ⊙ conv(b ⊙ x)).
	dim, dc := cfg.Dim, cfg.ConvKernel
	bcx := rnd.matMul(r.inProj, h, L, nil)
	bx := make([]float64, L*dim)
	for i := range L {
		for j := range dim {
			bx[i*dim+j] = bcx[i*3*dim+j] * bcx[i*3*dim+2*dim+j]
		}
	}
	y := refCausalConv(bx, r.conv, L, dim, dc)
	for i := range L {
		for j := range dim {
			y[i*dim+j] *= bcx[i*3*dim+dim+j]
		}
	}
	return rnd.matMul(r.outProj, y, L, nil)
}

// refCausalConv is the depthwise causal convolution of x (L, ch) with
// kernel (ch, dc) from zero history: y[t][c] = Σ_j k[c][j]·x[t−(dc−1)+j][c].
func refCausalConv(x []float64, kernel []float32, L, ch, dc int) []float64 {
	y := make([]float64, L*ch)
	for t := range L {
		for c := range ch {
			var s float64
			for j := range dc {
				if p := t - (dc - 1) + j; p >= 0 {
					s += float64(kernel[c*dc+j]) * x[p*ch+c]
				}
			}
			y[t*ch+c] = s
		}
	}
	return y
}

// refDeltaNet is the gated delta net over a whole sequence.
func (m *Model) refDeltaNet(r *recWeights, h []float64, L int, rnd refRounding) []float64 {
	cfg := &m.Config
	d, nk, nv := cfg.SSMHeadDim, cfg.SSMKHeads, cfg.SSMVHeads
	ch, vd := cfg.ConvChannels(), nv*d
	mix := refCausalConv(rnd.matMul(r.wqkv, h, L, nil), r.conv, L, ch, cfg.ConvKernel)
	for i, v := range mix {
		mix[i] = v / (1 + math.Exp(-v))
	}
	z := rnd.matMul(r.wz, h, L, nil)
	beta := rnd.matMul(r.wBeta, h, L, nil)
	alpha := rnd.matMul(r.wAlpha, h, L, nil)
	out := make([]float64, L*vd)
	for vh := range nv {
		kh := vh % nk
		q := make([]float64, L*d)
		k := make([]float64, L*d)
		v := make([]float64, L*d)
		g := make([]float64, L)
		b := make([]float64, L)
		for t := range L {
			row := mix[t*ch : (t+1)*ch]
			copy(q[t*d:(t+1)*d], row[kh*d:(kh+1)*d])
			copy(k[t*d:(t+1)*d], row[(nk+kh)*d:(nk+kh+1)*d])
			copy(v[t*d:(t+1)*d], row[2*nk*d+vh*d:2*nk*d+(vh+1)*d])
			refL2Norm(q[t*d:(t+1)*d], cfg.NormEps)
			refL2Norm(k[t*d:(t+1)*d], cfg.NormEps)
			for j := range d {
				q[t*d+j] /= math.Sqrt(float64(d))
			}
			x := alpha[t*nv+vh] + float64(r.dtBias[vh])
			g[t] = math.Log1p(math.Exp(x)) * float64(r.a[vh])
			b[t] = 1 / (1 + math.Exp(-beta[t*nv+vh]))
		}
		o := deltaRuleRef64(q, k, v, g, b, nil, L, d)
		for t := range L {
			copy(out[t*vd+vh*d:t*vd+(vh+1)*d], o[t*d:(t+1)*d])
		}
	}
	for t := range L {
		for vh := range nv {
			o := out[t*vd+vh*d : t*vd+(vh+1)*d]
			refRMSNorm(o, r.ssmNorm, cfg.NormEps)
			for j := range o {
				zz := z[t*vd+vh*d+j]
				o[j] *= zz / (1 + math.Exp(-zz))
			}
		}
	}
	return rnd.matMul(r.wOut, out, L, nil)
}

// deltaRuleRef64 is the gated delta rule of one head in float64, token by
// token from state S0 (d_v, d_k; nil: zero), updated in place when given:
// S ← e^{g_t}·S, S ← S + β_t (v_t − S k_t) k_tᵀ, o_t = S q_t. q, k, v are
// (L, d); g, β (L).
func deltaRuleRef64(q, k, v, g, b, S0 []float64, L, d int) []float64 {
	S := S0
	if S == nil {
		S = make([]float64, d*d)
	}
	o := make([]float64, L*d)
	for t := range L {
		dec := math.Exp(g[t])
		kt, qt, vt := k[t*d:(t+1)*d], q[t*d:(t+1)*d], v[t*d:(t+1)*d]
		for j := range d {
			row := S[j*d : (j+1)*d]
			var sk float64
			for i := range row {
				row[i] *= dec
				sk += row[i] * kt[i]
			}
			e := b[t] * (vt[j] - sk)
			var acc float64
			for i := range row {
				row[i] += e * kt[i]
				acc += row[i] * qt[i]
			}
			o[t*d+j] = acc
		}
	}
	return o
}

// refL2Norm divides x by √(Σx² + eps).
func refL2Norm(x []float64, eps float32) {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss+float64(eps))
	for i := range x {
		x[i] *= s
	}
}

// refHybridAttention is an attention layer of a hybrid model over a whole
// sequence: QK-norm, RoPE on the first RopeDim dimensions of each head,
// causal softmax attention, and for Qwen3.5 the σ(gate) output gate.
func (m *Model) refHybridAttention(lw *layerWeights, h []float64, L int, rnd refRounding) []float64 {
	cfg := &m.Config
	hd, qd, kvd := cfg.HeadDim, cfg.QDim(), cfg.KVDim()
	var q, gate []float64
	if cfg.AttnGate {
		qg := rnd.matMul(lw.wq, h, L, nil)
		for t := range L {
			for hh := range cfg.Heads {
				r := qg[t*2*qd+2*hh*hd:]
				q = append(q, r[:hd]...)
				gate = append(gate, r[hd:2*hd]...)
			}
		}
	} else {
		q = rnd.matMul(lw.wq, h, L, nil)
	}
	k := rnd.matMul(lw.wk, h, L, nil)
	v := rnd.matMul(lw.wv, h, L, nil)
	for t := range L {
		for hh := range cfg.Heads {
			if lw.qNorm != nil {
				refRMSNorm(q[t*qd+hh*hd:t*qd+(hh+1)*hd], lw.qNorm, cfg.NormEps)
			}
			refRope(cfg, m.invFreq, cfg.RopeDim, q[t*qd+hh*hd:t*qd+(hh+1)*hd], t)
		}
		for hh := range cfg.KVHeads {
			if lw.kNorm != nil {
				refRMSNorm(k[t*kvd+hh*hd:t*kvd+(hh+1)*hd], lw.kNorm, cfg.NormEps)
			}
			refRope(cfg, m.invFreq, cfg.RopeDim, k[t*kvd+hh*hd:t*kvd+(hh+1)*hd], t)
		}
	}
	if rnd.kv != tensor.F32 {
		refRoundKV(k, kvd, rnd.kv)
		refRoundKV(v, kvd, rnd.kv)
	}
	att := make([]float64, L*qd)
	group := cfg.Heads / cfg.KVHeads
	scale := cfg.attnScale()
	for t := range L {
		for hh := range cfg.Heads {
			g := hh / group
			qh := q[t*qd+hh*hd : t*qd+(hh+1)*hd]
			sc := make([]float64, t+1)
			mx := math.Inf(-1)
			for p := range t + 1 {
				var s float64
				for j := range hd {
					s += qh[j] * k[p*kvd+g*hd+j]
				}
				sc[p] = s * scale
				mx = math.Max(mx, sc[p])
			}
			var sum float64
			for p := range sc {
				sc[p] = math.Exp(sc[p] - mx)
				sum += sc[p]
			}
			out := att[t*qd+hh*hd : t*qd+(hh+1)*hd]
			for p := range sc {
				for j := range hd {
					out[j] += sc[p] / sum * v[p*kvd+g*hd+j]
				}
			}
		}
	}
	if gate != nil {
		for i, g := range gate {
			att[i] /= 1 + math.Exp(-g)
		}
	}
	return rnd.matMul(lw.wo, att, L, nil)
}

// refSharedExpert is σ(w·x)·SwiGLU(x) of layer lw's shared expert over the
// L rows of h.
func refSharedExpert(lw *layerWeights, h []float64, L int, rnd refRounding) []float64 {
	g := rnd.matMul(lw.shGate, h, L, nil)
	u := rnd.matMul(lw.shUp, h, L, nil)
	for i, v := range g {
		g[i] = v / (1 + math.Exp(-v)) * u[i]
	}
	o := rnd.matMul(lw.shDown, g, L, nil)
	if lw.shGateInp == nil { // granitemoe: ungated
		return o
	}
	gate := rnd.matMul(lw.shGateInp, h, L, nil)
	dim := len(o) / L
	for t := range L {
		s := 1 / (1 + math.Exp(-gate[t]))
		for j := range dim {
			o[t*dim+j] *= s
		}
	}
	return o
}
