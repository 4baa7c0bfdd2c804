package model

import (
	"fmt"
	"math"
	"slices"

	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// ForwardRef is the plain reference forward pass used by the parity tests:
// it recomputes the whole sequence tokens (positions 0..L-1) from scratch
// without a KV cache, batching or workers, accumulating in float64, and
// returns every position's logits (L, vocab). It shares only the weights
// and the RoPE frequencies with Forward.
func (m *Model) ForwardRef(tokens []int) ([]float32, error) {
	return m.ForwardRefKV(tokens, tensor.F32)
}

// ForwardRefKV is ForwardRef with each position's K and V (after RoPE)
// rounded as a KV cache of type kv stores them (float32, then F16 or
// Q8_0 and back): the reference for Forward over such a cache.
func (m *Model) ForwardRefKV(tokens []int, kv tensor.DType) ([]float32, error) {
	return m.forwardRef(tokens, refRounding{kv: kv})
}

// refRounding is what the reference rounds as a cheaper implementation
// does. The zero value (with kv F32) rounds nothing; lcppRounding is
// llama.cpp's CPU backend as it made the goldens. The tests switch them
// one by one to show where llama.cpp's logprobs part from the exact ones
// (TestLcppRoundings, DESIGN.md "llama.cpp's own roundings").
type refRounding struct {
	kv tensor.DType // K and V as a cache of this type stores them
	// matIn16: the input of every F16 matrix product converted to F16
	// first, as ggml's CPU matmul converts activations to an F16 weight's
	// vec_dot_type (F32 matrices, like qwen3moe's router, stay F32).
	matIn16 bool
	// q16: each query converted to F16 before its dot products with the
	// F16 keys (the flash-attention kernel's q_to_vec_dot).
	q16 bool
	// vAcc16: attention as ggml's CPU flash-attention kernel computes it
	// over an F16 cache, one query row at a time (refFlashF16): online
	// softmax in float32, the V-weighted sum accumulated in F16.
	vAcc16 bool
	// gelu16: GELU through ggml's F16 table (GGML_GELU_FP16): the input
	// rounded to F16, the output an F16 value.
	gelu16 bool
	// tiledPrompt: the first tiledPrompt positions were llama-server's
	// prompt, processed in ubatches of lcppUbatch rows; a ubatch of at
	// least lcppFATileQ rows takes ggml's tiled flash-attention kernel
	// (F32 queries, K and V widened to F32, an F32 accumulator), so q16
	// and vAcc16 do not apply to its rows. 0: every position one row at a
	// time (the shared goldens' prompts are all shorter than a tile).
	tiledPrompt int
}

// llama.cpp's defaults that decide its flash-attention kernel per row
// (ggml-cpu ops.cpp, de3ff815): the server's n_ubatch and the tiled
// kernel's query tile, GGML_FA_TILE_Q.
const (
	lcppUbatch  = 512
	lcppFATileQ = 64
)

// rowByRow reports whether llama.cpp computed position i's attention with
// the one-row kernel (F16 query, F16 V accumulator) rather than the tiled.
func (r refRounding) rowByRow(i int) bool {
	if i >= r.tiledPrompt {
		return true
	}
	u := i / lcppUbatch * lcppUbatch
	return min(lcppUbatch, r.tiledPrompt-u) < lcppFATileQ
}

// lcppRounding is every rounding of llama.cpp's CPU backend (de3ff815,
// flash attention on, F16 KV cache, prompts shorter than the kernel's
// 64-row tile) that moves the gguf-archs goldens measurably.
var lcppRounding = refRounding{kv: tensor.F16, matIn16: true, q16: true, vAcc16: true, gelu16: true}

// matMul is refMatMul with x rounded to F16 first when matIn16 is set and
// w is F16.
func (r refRounding) matMul(w *tensor.Mat, x []float64, n int, bias []float32) []float64 {
	if r.matIn16 && w.Type == tensor.F16 {
		x = refRoundF16(x)
	}
	return refMatMul(w, x, n, bias)
}

// refRoundF16 is a copy of x with each value rounded to F16.
func refRoundF16(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(tensor.F16ToF32(tensor.F32ToF16(float32(v))))
	}
	return out
}

// forwardRef is ForwardRef with r's roundings.
func (m *Model) forwardRef(tokens []int, r refRounding) ([]float32, error) {
	return m.forwardRefRows(tokens, r, 0)
}

// forwardRefRows is forwardRef with the logits of positions from on only,
// (len(tokens)-from, vocab): over a long prompt and a large vocabulary the
// head is most of the reference's time and memory.
func (m *Model) forwardRefRows(tokens []int, r refRounding, from int) ([]float32, error) {
	h, err := m.hiddenRef(tokens, r)
	if err != nil {
		return nil, err
	}
	cfg := &m.Config
	logits := r.matMul(m.w.output, h[from*cfg.Dim:], len(tokens)-from, nil)
	out := make([]float32, len(logits))
	for i, v := range logits {
		if c := float64(cfg.FinalSoftcap); c > 0 {
			v = c * math.Tanh(v/c)
		}
		if s := float64(cfg.LogitScale); s != 0 {
			v /= s
		}
		out[i] = float32(v)
	}
	return out, nil
}

// HiddenRef is ForwardRef up to the final norm: every position's final
// hidden state (L, dim) in float64, the reference for Hidden and Embed.
func (m *Model) HiddenRef(tokens []int) ([]float64, error) {
	return m.hiddenRef(tokens, refRounding{kv: tensor.F32})
}

// hiddenRef is HiddenRef with rnd's roundings.
func (m *Model) hiddenRef(tokens []int, rnd refRounding) ([]float64, error) {
	kv := rnd.kv
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
	dim := cfg.Dim
	w := &m.w
	row := make([]float32, dim)

	x := make([]float64, L*dim) // (L, dim) residual stream
	for i, t := range tokens {
		tensor.DequantizeRow(row, w.tokEmb.Type, w.tokEmb.Row(t))
		for j, v := range row {
			x[i*dim+j] = float64(v)
			if cfg.EmbedScale != 0 {
				x[i*dim+j] *= float64(cfg.EmbedScale)
			}
		}
		if w.posEmb != nil {
			tensor.DequantizeRow(row, w.posEmb.Type, w.posEmb.Row(i))
			for j, v := range row {
				x[i*dim+j] += float64(v)
			}
		}
	}
	var perLayer []float64 // (L, layers, per_layer) Gemma 4's per-layer inputs
	if cfg.PerLayerDim > 0 {
		perLayer = refPerLayerInputs(cfg, w, tokens, x, rnd)
	}
	// Each cache-owning layer's K and V (after norms and RoPE), which a
	// shared-KV layer reads.
	layerK, layerV := make([][]float64, len(w.layers)), make([][]float64, len(w.layers))
	for l := range w.layers {
		lw := &w.layers[l]
		hd, qd, kvd := cfg.LayerHeadDim(l), cfg.LayerQDim(l), cfg.LayerKVDim(l)
		h := refNorm(cfg, x, lw.attnNorm, lw.attnNormB)
		if cfg.IsHybrid() {
			refResidual(cfg, x, m.refHybridMixer(lw, h, L, rnd))
			x = m.refFFN(l, lw, x, perLayer, L, rnd)
			continue
		}
		var q, k, v []float64 // (L, q_dim), (L, kv_dim), (L, kv_dim)
		if lw.wqkv != nil {
			qkv := rnd.matMul(lw.wqkv, h, L, lw.bqkv)
			wd := qd + 2*kvd
			for i := range L {
				r := qkv[i*wd : (i+1)*wd]
				q = append(q, r[:qd]...)
				k = append(k, r[qd:qd+kvd]...)
				v = append(v, r[qd+kvd:]...)
			}
		} else {
			q = rnd.matMul(lw.wq, h, L, lw.bq)
			if cfg.OwnsKV(l) {
				k = rnd.matMul(lw.wk, h, L, lw.bk)
				if lw.wv != nil {
					v = rnd.matMul(lw.wv, h, L, lw.bv)
				} else {
					v = slices.Clone(k) // the values are the keys' projection
				}
			}
		}
		freqs := m.layerFreqs(l)
		rd := cfg.LayerRopeDim(l)
		for i := range L {
			for hh := range cfg.Heads {
				if lw.qNorm != nil {
					refRMSNorm(q[i*qd+hh*hd:i*qd+(hh+1)*hd], lw.qNorm, cfg.NormEps)
				}
				refRope(cfg, freqs, rd, q[i*qd+hh*hd:i*qd+(hh+1)*hd], i)
			}
			if !cfg.OwnsKV(l) {
				continue
			}
			for hh := range cfg.LayerKVHeads(l) {
				if lw.kNorm != nil {
					refRMSNorm(k[i*kvd+hh*hd:i*kvd+(hh+1)*hd], lw.kNorm, cfg.NormEps)
				}
				if cfg.VNorm {
					refRMSNorm(v[i*kvd+hh*hd:i*kvd+(hh+1)*hd], nil, cfg.NormEps)
				}
				refRope(cfg, freqs, rd, k[i*kvd+hh*hd:i*kvd+(hh+1)*hd], i)
			}
		}
		if cfg.OwnsKV(l) && kv != tensor.F32 {
			if err := m.CheckKVType(kv); err != nil {
				return nil, err
			}
			refRoundKV(k, kvd, kv)
			refRoundKV(v, kvd, kv)
		}
		if cfg.OwnsKV(l) {
			layerK[l], layerV[l] = k, v
		} else {
			k, v = layerK[cfg.KVSource(l)], layerV[cfg.KVSource(l)]
		}
		att := make([]float64, L*qd) // (L, q_dim)
		group := cfg.Heads / cfg.LayerKVHeads(l)
		scale := cfg.attnScale()
		for i := range L {
			start := 0
			if win := cfg.Window(l); win > 0 {
				start = max(0, i-win+1)
			}
			for hh := range cfg.Heads {
				qh := q[i*qd+hh*hd : i*qd+(hh+1)*hd]
				oneRow := rnd.rowByRow(i)
				if rnd.q16 && oneRow {
					qh = refRoundF16(qh)
				}
				g := hh / group
				if rnd.vAcc16 && oneRow && lw.sinks == nil {
					refFlashF16(att[i*qd+hh*hd:i*qd+(hh+1)*hd], qh, k, v, g*hd, kvd, start, i, scale, float64(cfg.AttnSoftcap))
					continue
				}
				sc := make([]float64, i+1-start)
				mx := math.Inf(-1)
				for p := start; p <= i; p++ {
					var s float64
					for j := range hd {
						s += qh[j] * k[p*kvd+g*hd+j]
					}
					s *= scale
					if c := float64(cfg.AttnSoftcap); c > 0 {
						s = c * math.Tanh(s/c)
					}
					sc[p-start] = s
					mx = math.Max(mx, s)
				}
				var sink float64
				if lw.sinks != nil {
					sink = float64(lw.sinks[hh])
					mx = math.Max(mx, sink)
				}
				var sum float64
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					sum += sc[j]
				}
				if lw.sinks != nil {
					sum += math.Exp(sink - mx)
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
		o := rnd.matMul(lw.wo, att, L, lw.bo)
		if lw.attnPostNorm != nil {
			o = refNorm(cfg, o, lw.attnPostNorm, nil)
		}
		refResidual(cfg, x, o)
		x = m.refFFN(l, lw, x, perLayer, L, rnd)
	}
	return refNorm(cfg, x, w.outNorm, w.outNormB), nil
}

// refFFN adds layer l's feed-forward block (weights lw) to the residual
// stream x (L rows), then Gemma 4's per-layer input block (perLayer: (L,
// layers, per_layer), nil without) and output scale, and returns x.
func (m *Model) refFFN(l int, lw *layerWeights, x, perLayer []float64, L int, rnd refRounding) []float64 {
	cfg := &m.Config
	var o []float64
	{
		h := refNorm(cfg, x, lw.ffnNorm, lw.ffnNormB)
		if lw.g4 != nil {
			o = refGemma4FFN(cfg, lw, x, h, L, rnd)
		} else if lw.router != nil {
			o = refMoE(cfg, lw, h, L, rnd)
			if lw.shUp != nil {
				sh := refSharedExpert(lw, h, L, rnd)
				for i := range o {
					o[i] += sh[i]
				}
			}
		} else {
			var a []float64 // (L, hidden)
			if lw.wGate != nil {
				a = rnd.matMul(lw.wGate, h, L, nil)
				up := rnd.matMul(lw.wUp, h, L, nil)
				for i, g := range a {
					if cfg.GELUGate {
						a[i] = rnd.gelu(g) * up[i]
					} else {
						a[i] = g / (1 + math.Exp(-g)) * up[i]
					}
				}
			} else {
				a = rnd.matMul(lw.wUp, h, L, lw.bUp)
				for i, u := range a {
					a[i] = refGELU(u)
				}
			}
			o = rnd.matMul(lw.wDown, a, L, lw.bDown)
		}
		if lw.ffnPostNorm != nil {
			o = refNorm(cfg, o, lw.ffnPostNorm, nil)
		}
		refResidual(cfg, x, o)
		if lw.plGate != nil {
			refPerLayerBlock(cfg, lw, l, x, perLayer, L, rnd)
		}
		if lw.outScale != nil {
			for i := range x {
				x[i] *= float64(lw.outScale[0])
			}
		}
	}
	return x
}

// gelu is refGELU, or ggml's F16 table lookup with gelu16.
func (r refRounding) gelu(u float64) float64 {
	if !r.gelu16 {
		return refGELU(u)
	}
	switch {
	case u <= -10:
		return 0
	case u >= 10:
		return u
	}
	x := tensor.F16ToF32(tensor.F32ToF16(float32(u)))
	return float64(tensor.F16ToF32(tensor.F32ToF16(float32(refGELU(float64(x))))))
}

// refGELU is the tanh approximation of GELU in float64.
func refGELU(u float64) float64 {
	return 0.5 * u * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(u+0.044715*u*u*u)))
}

// refRMSNorm normalises x in place with gains g.
func refRMSNorm(x []float64, g []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+float64(eps))
	for j := range x {
		if g == nil {
			x[j] *= s
			continue
		}
		x[j] *= s * float64(g[j])
	}
}

// refMoE is the mixture of experts of the L rows of h in float64: softmax
// of the router logits, the ExpertsUsed most probable experts (ties: lower
// index), their probabilities renormalised, and the weighted sum of their
// SwiGLU outputs.
func refMoE(cfg *Config, lw *layerWeights, h []float64, L int, rnd refRounding) []float64 {
	dim := cfg.Dim
	r := rnd.matMul(lw.router, h, L, lw.routerB) // (L, experts)
	out := make([]float64, L*dim)
	if cfg.OAIMoE {
		return refMoEOAI(cfg, lw, h, r, L, rnd)
	}
	for i := range L {
		sel, wts := refRoute(cfg, lw, r[i*cfg.Experts:(i+1)*cfg.Experts])
		hi := h[i*dim : (i+1)*dim]
		for s, e := range sel {
			g := rnd.matMul(lw.expGate[e], hi, 1, nil)
			u := rnd.matMul(lw.expUp[e], hi, 1, nil)
			for j := range g {
				g[j] = g[j] / (1 + math.Exp(-g[j])) * u[j]
			}
			d := rnd.matMul(lw.expDown[e], g, 1, nil)
			for j, v := range d {
				out[i*dim+j] += wts[s] * v
			}
		}
	}
	return out
}

// refRoute chooses one token's experts from its router logits r
// (experts; overwritten) and weights them: the softmax's ExpertsUsed
// largest, renormalised, or for σ gating (GatingSigmoid) the largest
// σ(r_e) + b_e weighted by σ(r_e) / max(Σ_S σ, 2⁻¹⁴).
func refRoute(cfg *Config, lw *layerWeights, r []float64) (sel []int, wts []float64) {
	p, score := r, r // p weights, score chooses
	if cfg.ExpertGating == GatingSigmoid {
		score = make([]float64, len(r))
		for e, v := range r {
			p[e] = 1 / (1 + math.Exp(-v))
			score[e] = p[e]
			if lw.routerSelB != nil {
				score[e] += float64(lw.routerSelB[e])
			}
		}
	} else {
		mx := math.Inf(-1)
		for _, v := range p {
			mx = math.Max(mx, v)
		}
		var sum float64
		for e := range p {
			p[e] = math.Exp(p[e] - mx)
			sum += p[e]
		}
		for e := range p {
			p[e] /= sum
		}
	}
	chosen := make([]bool, len(p))
	var wsum float64
	for range cfg.ExpertsUsed {
		best := -1
		for e := range score {
			if !chosen[e] && (best < 0 || score[e] > score[best]) {
				best = e
			}
		}
		chosen[best] = true
		sel = append(sel, best)
		wsum += p[best]
	}
	if cfg.ExpertGating == GatingSigmoid {
		wsum = math.Max(wsum, 0x1p-14)
	}
	for _, e := range sel {
		wts = append(wts, p[e]/wsum)
	}
	return sel, wts
}

// refResidual adds a block's output o to the residual stream x, times
// Granite's ResidualScale when it has one.
func refResidual(cfg *Config, x, o []float64) {
	s := 1.0
	if cfg.ResidualScale != 0 {
		s = float64(cfg.ResidualScale)
	}
	for i := range x {
		x[i] += s * o[i]
	}
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
func refRope(cfg *Config, freqs []float64, ropeDim int, x []float64, pos int) {
	half := ropeDim / 2
	ms := cfg.ropeMScale()
	for i := range half {
		s, c := math.Sincos(float64(pos) * freqs[i])
		s, c = s*ms, c*ms
		a, b := 2*i, 2*i+1
		if cfg.RopeNeox {
			a, b = i, i+half
		}
		x[a], x[b] = x[a]*c-x[b]*s, x[a]*s+x[b]*c
	}
}

// refRoundKV rounds each kvd-wide row of x as a cache of type t stores it:
// to float32, encoded (tensor.QuantizeRow) and decoded again.
func refRoundKV(x []float64, kvd int, t tensor.DType) {
	row := make([]float32, kvd)
	enc := make([]byte, kvcache.RowBytes(t, kvd))
	for o := 0; o < len(x); o += kvd {
		for j := range kvd {
			row[j] = float32(x[o+j])
		}
		_ = tensor.QuantizeRow(enc, t, row) // shape checked by CheckKVType
		tensor.DequantizeRow(row, t, enc)
		for j := range kvd {
			x[o+j] = float64(row[j])
		}
	}
}

// refFlashF16 is one query row's attention as ggml's CPU flash-attention
// kernel computes it over an F16 KV cache with one query at a time
// (ggml_compute_forward_flash_attn_ext_f16_one_chunk): the scores in
// float32, an online softmax over the positions in cache order (running
// maximum M and sum S in float32, expf), and the V-weighted sum kept in an
// F16 accumulator — rounded to F16 after every rescale (ggml_vec_scale_f16)
// and every multiply-add (ggml_vec_mad_f16) — divided by S at the end.
func refFlashF16(out, qh, k, v []float64, off, kvd, start, i int, scale, softcap float64) {
	f16 := func(x float32) float32 { return tensor.F16ToF32(tensor.F32ToF16(x)) }
	hd := len(out)
	acc := make([]float32, hd) // the F16 VKQ accumulator, held widened
	M := float32(math.Inf(-1))
	var S float32
	sc := float32(scale)
	if softcap > 0 {
		sc = float32(scale / softcap)
	}
	for p := start; p <= i; p++ {
		var d float64
		for j := range hd {
			d += qh[j] * k[p*kvd+off+j]
		}
		s := float32(d) * sc
		if softcap > 0 {
			s = float32(softcap) * float32(math.Tanh(float64(s)))
		}
		ms, vs := float32(1), float32(1)
		if s > M {
			Mold := M
			M = s
			ms = float32(math.Exp(float64(Mold - M)))
			for j := range acc {
				acc[j] = f16(acc[j] * ms)
			}
		} else {
			vs = float32(math.Exp(float64(s - M)))
		}
		for j := range acc {
			acc[j] = f16(float32(v[p*kvd+off+j])*vs + acc[j])
		}
		S = S*ms + vs
	}
	inv := 1 / S
	for j := range out {
		out[j] = float64(acc[j] * inv)
	}
}
