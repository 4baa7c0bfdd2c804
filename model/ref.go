package model

import (
	"fmt"
	"math"

	"nanoserve/tensor"
)

// ForwardRef is the plain reference forward pass used by the parity tests:
// it recomputes the whole sequence tokens (positions 0..L-1) from scratch
// without a KV cache, batching or workers, accumulating in float64, and
// returns every position's logits (L, vocab). It shares only the weights
// and the RoPE frequencies with Forward.
func (m *Model) ForwardRef(tokens []int) ([]float32, error) {
	cfg := &m.Config
	L := len(tokens)
	if L == 0 {
		return nil, fmt.Errorf("%w: no tokens", ErrBatch)
	}
	for _, t := range tokens {
		if t < 0 || t >= cfg.Vocab {
			return nil, fmt.Errorf("%w: token id %d out of range [0, %d)", ErrBatch, t, cfg.Vocab)
		}
	}
	if m.w.posEmb != nil && L > m.w.posEmb.Rows {
		return nil, fmt.Errorf("%w: %d tokens exceed context length %d", ErrBatch, L, m.w.posEmb.Rows)
	}
	dim, hd, qd, kvd := cfg.Dim, cfg.HeadDim, cfg.QDim(), cfg.KVDim()
	w := &m.w
	row := make([]float32, dim)

	x := make([]float64, L*dim) // (L, dim) residual stream
	for i, t := range tokens {
		tensor.DequantizeRow(row, w.tokEmb.Type, w.tokEmb.Row(t))
		for j, v := range row {
			x[i*dim+j] = float64(v)
		}
		if w.posEmb != nil {
			tensor.DequantizeRow(row, w.posEmb.Type, w.posEmb.Row(i))
			for j, v := range row {
				x[i*dim+j] += float64(v)
			}
		}
	}
	for l := range w.layers {
		lw := &w.layers[l]
		h := refNorm(cfg, x, lw.attnNorm, lw.attnNormB)
		var q, k, v []float64 // (L, q_dim), (L, kv_dim), (L, kv_dim)
		if lw.wqkv != nil {
			qkv := refMatMul(lw.wqkv, h, L, lw.bqkv)
			wd := qd + 2*kvd
			for i := range L {
				r := qkv[i*wd : (i+1)*wd]
				q = append(q, r[:qd]...)
				k = append(k, r[qd:qd+kvd]...)
				v = append(v, r[qd+kvd:]...)
			}
		} else {
			q = refMatMul(lw.wq, h, L, lw.bq)
			k = refMatMul(lw.wk, h, L, lw.bk)
			v = refMatMul(lw.wv, h, L, lw.bv)
		}
		for i := range L {
			for hh := range cfg.Heads {
				refRope(cfg, m.invFreq, q[i*qd+hh*hd:i*qd+(hh+1)*hd], i)
			}
			for hh := range cfg.KVHeads {
				refRope(cfg, m.invFreq, k[i*kvd+hh*hd:i*kvd+(hh+1)*hd], i)
			}
		}
		att := make([]float64, L*qd) // (L, q_dim)
		group := cfg.Heads / cfg.KVHeads
		for i := range L {
			start := 0
			if cfg.SlidingWindow > 0 {
				start = max(0, i-cfg.SlidingWindow+1)
			}
			for hh := range cfg.Heads {
				qh := q[i*qd+hh*hd : i*qd+(hh+1)*hd]
				g := hh / group
				sc := make([]float64, i+1-start)
				mx := math.Inf(-1)
				for p := start; p <= i; p++ {
					var s float64
					for j := range hd {
						s += qh[j] * k[p*kvd+g*hd+j]
					}
					s /= math.Sqrt(float64(hd))
					sc[p-start] = s
					mx = math.Max(mx, s)
				}
				var sum float64
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					sum += sc[j]
				}
				out := att[i*qd+hh*hd : i*qd+(hh+1)*hd]
				for p := start; p <= i; p++ {
					a := sc[p-start] / sum
					for j := range hd {
						out[j] += a * v[p*kvd+g*hd+j]
					}
				}
			}
		}
		o := refMatMul(lw.wo, att, L, lw.bo)
		for i := range x {
			x[i] += o[i]
		}
		h = refNorm(cfg, x, lw.ffnNorm, lw.ffnNormB)
		var a []float64 // (L, hidden)
		if lw.wGate != nil {
			a = refMatMul(lw.wGate, h, L, nil)
			up := refMatMul(lw.wUp, h, L, nil)
			for i, g := range a {
				a[i] = g / (1 + math.Exp(-g)) * up[i]
			}
		} else {
			a = refMatMul(lw.wUp, h, L, lw.bUp)
			for i, u := range a {
				a[i] = 0.5 * u * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(u+0.044715*u*u*u)))
			}
		}
		o = refMatMul(lw.wDown, a, L, lw.bDown)
		for i := range x {
			x[i] += o[i]
		}
	}
	h := refNorm(cfg, x, w.outNorm, w.outNormB)
	logits := refMatMul(w.output, h, L, nil)
	out := make([]float32, len(logits))
	for i, v := range logits {
		out[i] = float32(v)
	}
	return out, nil
}

// refMatMul returns x·Wᵀ (+bias): x (n, cols) → (n, rows), in float64.
func refMatMul(w *tensor.Mat, x []float64, n int, bias []float32) []float64 {
	out := make([]float64, n*w.Rows)
	row := make([]float32, w.Cols)
	for r := range w.Rows {
		tensor.DequantizeRow(row, w.Type, w.Row(r))
		for t := range n {
			xt := x[t*w.Cols : (t+1)*w.Cols]
			var s float64
			for c, wv := range row {
				s += float64(wv) * xt[c]
			}
			if bias != nil {
				s += float64(bias[r])
			}
			out[t*w.Rows+r] = s
		}
	}
	return out
}

// refNorm normalises each dim-row of x (RMSNorm, or LayerNorm for GPT-2).
func refNorm(cfg *Config, x []float64, g, b []float32) []float64 {
	d := cfg.Dim
	out := make([]float64, len(x))
	eps := float64(cfg.NormEps)
	for i := 0; i < len(x); i += d {
		r, o := x[i:i+d], out[i:i+d]
		if cfg.Arch == ArchGPT2 {
			var mean, vr float64
			for _, v := range r {
				mean += v
			}
			mean /= float64(d)
			for _, v := range r {
				vr += (v - mean) * (v - mean)
			}
			s := 1 / math.Sqrt(vr/float64(d)+eps)
			for j, v := range r {
				o[j] = (v-mean)*s*float64(g[j]) + float64(b[j])
			}
			continue
		}
		var ss float64
		for _, v := range r {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(d)+eps)
		for j, v := range r {
			o[j] = v * s * float64(g[j])
		}
	}
	return out
}

// refRope rotates one head at position pos in the config's layout.
func refRope(cfg *Config, freqs []float64, x []float64, pos int) {
	half := cfg.RopeDim / 2
	for i := range half {
		s, c := math.Sincos(float64(pos) * freqs[i])
		a, b := 2*i, 2*i+1
		if cfg.RopeNeox {
			a, b = i, i+half
		}
		x[a], x[b] = x[a]*c-x[b]*s, x[a]*s+x[b]*c
	}
}
