package model

import (
	"fmt"

	"nanoserve/tensor"
)

// weights are the parameters of a model. Matrices are (out, in) row-major
// tensor.Mats in their file encoding (usually pointing into a mapping);
// vectors are decoded float32.
type weights struct {
	tokEmb *tensor.Mat // (vocab, dim)
	posEmb *tensor.Mat // (ctx, dim) GPT-2 learned positions; nil otherwise
	layers []layerWeights

	outNorm, outNormB []float32   // (dim) final norm gain (and LayerNorm bias)
	output            *tensor.Mat // (vocab, dim); == tokEmb when tied

	ropeFreqs []float32 // (RopeDim/2) GGUF rope_freqs divisors (Llama 3 scaling; Gemma 4's global layers); nil if absent

	// Gemma 4's per-layer inputs (nil without them): each token's
	// (layers·per_layer) row of perLayerEmb, and the projection of its
	// scaled embedding by perLayerProj, normalised per layer by
	// perLayerNorm (see gemma4.go).
	perLayerEmb  *tensor.Mat // (vocab, layers·per_layer)
	perLayerProj *tensor.Mat // (layers·per_layer, dim)
	perLayerNorm []float32   // (per_layer)
}

type layerWeights struct {
	attnNorm, attnNormB []float32 // (dim)

	wq, wk, wv *tensor.Mat // (q_dim, dim), (kv_dim, dim), (kv_dim, dim); nil when the file has them fused (GPT-2)
	wqkv       *tensor.Mat // (q_dim+2·kv_dim, dim) fused (GPT-2's file, or fuseQKV: then wq, wk, wv are its rows)
	bq, bk, bv []float32   // (q_dim), (kv_dim), (kv_dim) biases; nil if none
	bqkv       []float32   // (q_dim+2·kv_dim) fused bias; nil if none
	wo         *tensor.Mat // (dim, q_dim)
	bo         []float32   // (dim)

	ffnNorm, ffnNormB []float32 // (dim)

	wGate *tensor.Mat // (hidden, dim) SwiGLU gate (w1); nil for GPT-2
	wUp   *tensor.Mat // (hidden, dim) (w3; GPT-2 c_fc)
	bUp   []float32   // (hidden)
	wDown *tensor.Mat // (dim, hidden) (w2; GPT-2 c_proj)
	bDown []float32   // (dim)

	qNorm, kNorm              []float32 // (head_dim) QK-norm gains; nil if none
	attnPostNorm, ffnPostNorm []float32 // (dim) Gemma's post-attention and post-FFN norms; nil if none

	// Mixture of experts (nil for a dense FFN): the router and each
	// expert's SwiGLU matrices, views into the file's 3-D tensors (expert
	// e is the e-th (rows, cols) slab).
	router                  *tensor.Mat   // (experts, dim), float32 in llama.cpp's files
	expGate, expUp, expDown []*tensor.Mat // (experts) × (expert_hidden, dim), (expert_hidden, dim), (dim, expert_hidden)
	// gpt-oss's biases (nil otherwise): router (experts), and per expert
	// gate and up (experts, expert_hidden) and down (experts, dim).
	routerB []float32
	// routerSelB (lfm2moe's exp_probs_b, experts) is added to the σ
	// probabilities to choose the experts, not to weight them.
	routerSelB                 []float32
	expGateB, expUpB, expDownB []float32

	sinks []float32 // (heads) attention sink logits (gpt-oss); nil if none

	// g4 is a Gemma 4 MoE layer's extra weights (gemma4.go); its dense FFN
	// is wGate/wUp/wDown and its experts router/expGate/expUp/expDown.
	g4 *gemma4MoE

	// Gemma 4 (nil without): the per-layer input gate (per_layer, dim),
	// its projection back (dim, per_layer) and the norm after it; the
	// layer's output scale (1 value).
	plGate, plProj *tensor.Mat
	plPostNorm     []float32
	outScale       []float32

	// Hybrid models (hybrid.go): rec is the recurrent mixer of a
	// Config.Recurrent layer (nil for attention layers). kvLayer is a
	// cache-owning layer's layer in the cache (its index among the owners,
	// Config.OwnsKV: l itself when every layer attends and owns its cache).
	rec     *recWeights
	kvLayer int

	// Shared expert (qwen35moe; nil without): SwiGLU matrices and the
	// (1, dim) gate whose sigmoid scales its output.
	shGate, shUp, shDown, shGateInp *tensor.Mat // (sh_hidden, dim), (sh_hidden, dim), (dim, sh_hidden), (1, dim)
}

// checkMat verifies a matrix's shape and that its type is computable.
func checkMat(name string, m *tensor.Mat, rows, cols int) error {
	if m == nil {
		return fmt.Errorf("model: missing tensor %s", name)
	}
	if m.Rows != rows || m.Cols != cols {
		return fmt.Errorf("model: tensor %s has shape (%d, %d), want (%d, %d)", name, m.Rows, m.Cols, rows, cols)
	}
	if !tensor.Computable(m.Type) {
		return fmt.Errorf("model: tensor %s has unsupported type %s (supported: %s)", name, m.Type, tensor.SupportedTypes())
	}
	if rb, err := m.Type.RowBytes(cols); err != nil || len(m.Data) != rows*rb {
		return fmt.Errorf("model: tensor %s has %d bytes, want %d (%s)", name, len(m.Data), rows*rb, m.Type)
	}
	return nil
}

func checkVec(name string, v []float32, n int, required bool) error {
	if v == nil && !required {
		return nil
	}
	if len(v) != n {
		if v == nil {
			return fmt.Errorf("model: missing tensor %s", name)
		}
		return fmt.Errorf("model: tensor %s has %d elements, want %d", name, len(v), n)
	}
	return nil
}

// check verifies every weight's presence and shape against the config.
// Loaders name tensors in their own convention before this; it catches
// whatever they let through (and llama2.c, which has no names).
func (w *weights) check(c *Config) error {
	if c.IsHybrid() {
		return w.checkHybrid(c)
	}
	dim := c.Dim
	if err := checkMat("token_embd", w.tokEmb, c.Vocab, dim); err != nil {
		return err
	}
	if c.Arch == ArchGPT2 {
		if w.posEmb == nil {
			return fmt.Errorf("model: missing tensor position_embd")
		}
		if err := checkMat("position_embd", w.posEmb, w.posEmb.Rows, dim); err != nil {
			return err
		}
		if w.posEmb.Rows < c.ContextLen {
			return fmt.Errorf("model: position_embd has %d rows, context length is %d", w.posEmb.Rows, c.ContextLen)
		}
	}
	if len(w.layers) != c.Layers {
		return fmt.Errorf("model: have %d layers, want %d", len(w.layers), c.Layers)
	}
	gpt2 := c.Arch == ArchGPT2
	for i := range w.layers {
		l := &w.layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		qd, kvd, hid, hd := c.LayerQDim(i), c.LayerKVDim(i), c.LayerHidden(i), c.LayerHeadDim(i)
		errs := []error{
			checkVec(p+"attn_norm", l.attnNorm, dim, true),
			checkVec(p+"attn_norm.bias", l.attnNormB, dim, gpt2),
			checkVec(p+"ffn_norm", l.ffnNorm, dim, true),
			checkVec(p+"ffn_norm.bias", l.ffnNormB, dim, gpt2),
			checkMat(p+"attn_output", l.wo, dim, qd),
			checkVec(p+"attn_output.bias", l.bo, dim, false),
			checkVec(p+"attn_q_norm", l.qNorm, hd, c.QKNorm),
			checkVec(p+"attn_k_norm", l.kNorm, hd, c.QKNorm && c.OwnsKV(i)),
			checkVec(p+"attn_sinks", l.sinks, c.Heads, c.AttnSinks),
			checkVec(p+"post_attention_norm", l.attnPostNorm, dim, c.PostNorms),
			checkVec(p+"post_ffw_norm", l.ffnPostNorm, dim, c.PostNorms),
		}
		if l.g4 != nil {
			errs = append(errs, checkVec(p+"ffn_gate_inp.scale", l.g4.routerScale, dim, true), checkVec(p+"pre_ffw_norm_2", l.g4.preNorm2, dim, true),
				checkVec(p+"post_ffw_norm_1", l.g4.postNorm1, dim, true), checkVec(p+"post_ffw_norm_2", l.g4.postNorm2, dim, true),
				checkVec(p+"ffn_down_exps.scale", l.g4.downScale, c.Experts, false),
				checkMat(p+"ffn_up", l.wUp, hid, dim), checkMat(p+"ffn_down", l.wDown, dim, hid))
		}
		if c.Experts > 0 && (l.router != nil || c.Arch != ArchGemma4) {
			errs = append(errs, checkMat(p+"ffn_gate_inp", l.router, c.Experts, dim))
			if len(l.expGate) != c.Experts || len(l.expUp) != c.Experts || len(l.expDown) != c.Experts {
				errs = append(errs, fmt.Errorf("model: layer %d has %d/%d/%d expert matrices, want %d", i, len(l.expGate), len(l.expUp), len(l.expDown), c.Experts))
			} else {
				eh := c.ExpertHiddenDim
				for e := range c.Experts {
					errs = append(errs, checkMat(p+"ffn_gate_exps", l.expGate[e], eh, dim), checkMat(p+"ffn_up_exps", l.expUp[e], eh, dim),
						checkMat(p+"ffn_down_exps", l.expDown[e], dim, eh))
				}
			}
			if sh := c.SharedExpertHiddenDim; sh > 0 {
				errs = append(errs, checkMat(p+"ffn_gate_shexp", l.shGate, sh, dim), checkMat(p+"ffn_up_shexp", l.shUp, sh, dim),
					checkMat(p+"ffn_down_shexp", l.shDown, dim, sh))
			}
		} else if l.g4 == nil {
			errs = append(errs, checkMat(p+"ffn_up", l.wUp, hid, dim), checkVec(p+"ffn_up.bias", l.bUp, hid, false),
				checkMat(p+"ffn_down", l.wDown, dim, hid), checkVec(p+"ffn_down.bias", l.bDown, dim, false))
		}
		if !c.OwnsKV(i) {
			errs = append(errs, checkMat(p+"attn_q", l.wq, qd, dim), checkVec(p+"attn_q.bias", l.bq, qd, false))
		} else if l.wqkv != nil {
			errs = append(errs, checkMat(p+"attn_qkv", l.wqkv, qd+2*kvd, dim), checkVec(p+"attn_qkv.bias", l.bqkv, qd+2*kvd, false))
		} else {
			wv := l.wv
			if wv == nil && c.Arch == ArchGemma4 {
				wv = l.wk // the values are the keys' projection (forward.go copies them)
			}
			errs = append(errs,
				checkMat(p+"attn_q", l.wq, qd, dim), checkMat(p+"attn_k", l.wk, kvd, dim), checkMat(p+"attn_v", wv, kvd, dim),
				checkVec(p+"attn_q.bias", l.bq, qd, false), checkVec(p+"attn_k.bias", l.bk, kvd, false), checkVec(p+"attn_v.bias", l.bv, kvd, false))
		}
		if !gpt2 && (c.Experts == 0 || c.Arch == ArchGemma4) {
			errs = append(errs, checkMat(p+"ffn_gate", l.wGate, hid, dim))
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	if err := checkVec("output_norm", w.outNorm, dim, true); err != nil {
		return err
	}
	if err := checkVec("output_norm.bias", w.outNormB, dim, gpt2); err != nil {
		return err
	}
	if err := checkMat("output", w.output, c.Vocab, dim); err != nil {
		return err
	}
	if c.PerLayerDim > 0 {
		pl := c.PerLayerDim
		if err := checkMat("per_layer_token_embd", w.perLayerEmb, c.Vocab, c.Layers*pl); err != nil {
			return err
		}
		if err := checkMat("per_layer_model_proj", w.perLayerProj, c.Layers*pl, dim); err != nil {
			return err
		}
		if err := checkVec("per_layer_proj_norm", w.perLayerNorm, pl, true); err != nil {
			return err
		}
		for i := range w.layers {
			l := &w.layers[i]
			p := fmt.Sprintf("blk.%d.", i)
			for _, err := range []error{checkMat(p+"inp_gate", l.plGate, pl, dim), checkMat(p+"proj", l.plProj, dim, pl),
				checkVec(p+"post_norm", l.plPostNorm, dim, true)} {
				if err != nil {
					return err
				}
			}
		}
	}
	if w.ropeFreqs != nil && len(w.ropeFreqs) != c.RopeDim/2 {
		return fmt.Errorf("model: tensor rope_freqs has %d elements, want %d", len(w.ropeFreqs), c.RopeDim/2)
	}
	return nil
}

// fuseQKV gives every layer whose Q, K and V projections share a weight
// type one fused (q_dim+2·kv_dim, dim) matrix, so decode runs one
// matrix-vector product per layer for the three instead of three: the two
// (kv_dim, dim) products alone are small (1 MB at TinyLlama's F16 shape)
// and stream at about half the bandwidth of a large one, since every
// product pays its start-up and the workers' hand-off. The three are
// copied once into one buffer and wq, wk, wv are re-pointed at their rows
// of it, so memory grows only by what the mapping no longer needs to keep
// resident. Outputs are unchanged bit for bit: row r of the fused product
// is the same dot product as row r of its own matrix.
func (w *weights) fuseQKV() {
	for l := range w.layers {
		lw := &w.layers[l]
		q, k, v := lw.wq, lw.wk, lw.wv
		if lw.wqkv != nil || q == nil || k == nil || lw.rec != nil || v == nil || q.Type != k.Type || q.Type != v.Type || q.Cols != k.Cols || q.Cols != v.Cols {
			continue
		}
		nq, nk := len(q.Data), len(k.Data)
		buf := make([]byte, nq+nk+len(v.Data))
		copy(buf, q.Data)
		copy(buf[nq:], k.Data)
		copy(buf[nq+nk:], v.Data)
		lw.wqkv = &tensor.Mat{Type: q.Type, Rows: q.Rows + k.Rows + v.Rows, Cols: q.Cols, Data: buf}
		lw.wq = &tensor.Mat{Type: q.Type, Rows: q.Rows, Cols: q.Cols, Data: buf[:nq:nq]}
		lw.wk = &tensor.Mat{Type: k.Type, Rows: k.Rows, Cols: k.Cols, Data: buf[nq : nq+nk : nq+nk]}
		lw.wv = &tensor.Mat{Type: v.Type, Rows: v.Rows, Cols: v.Cols, Data: buf[nq+nk:]}
		if lw.bq != nil || lw.bk != nil || lw.bv != nil {
			b := make([]float32, q.Rows+k.Rows+v.Rows)
			copy(b, lw.bq)
			copy(b[q.Rows:], lw.bk)
			copy(b[q.Rows+k.Rows:], lw.bv)
			lw.bqkv = b
		}
	}
}
