package model

import (
	"fmt"
	"math"

	"nanoserve/kvcache"
	"nanoserve/llamacpp"
	"nanoserve/tensor"
)

// Hybrid models: Qwen3.5 (qwen35, qwen35moe), LFM2 (lfm2, lfm2moe) and
// Granite 4.0-H (granitehybrid) interleave attention layers with recurrent
// token mixers. Each layer is still
//
//	x += mixer(norm(x)),  x += FFN(norm'(x))
//
// but in the layers marked Config.Recurrent the mixer carries a
// per-sequence state from one position to the next instead of attending
// over cached K/V:
//
// Gated delta net (qwen35, deltanet.go): for each token,
//
//	[q ‖ k ‖ v] = SiLU(conv_d(W_qkv·h))        causal depthwise convolution over the
//	                                            last d_conv positions (the state keeps d_conv−1)
//	z = W_z·h,  β = σ(W_β·h),  g = softplus(W_α·h + dt_bias)·a     (per value head; a < 0)
//	q, k ← q/‖q‖, k/‖k‖ (per key head), q ← q/√d_k
//	S_h ← e^g·S_h;  S_h ← S_h + β (v_h − S_h k) kᵀ;  o_h = S_h q  (value head h, key head h mod n_k)
//	out = W_out·(RMSNorm(o_h) ⊙ SiLU(z_h))
//
// with S_h a (d_v, d_k) matrix per value head: the delta rule (the state
// corrects its prediction S k of v by a β-sized step) with a decay. Qwen3.5's
// attention layers gate their output: attn_q yields [query ‖ gate] per head
// and the attention output is multiplied by σ(gate) before attn_output;
// their RoPE rotates only the first RopeDim dimensions of a head (the
// multi-section RoPE of the vision model reduces, for text, to plain NEOX
// RoPE). The FFN input norm is the file's post_attention_norm.
//
// Short convolution (lfm2, shortconv.go): [b ‖ c ‖ x] = W_in·h,
// out = W_out·(c ⊙ conv_L(b ⊙ x)), the state keeping the last L−1 values
// of b ⊙ x.
//
// Mamba-2 (granitehybrid, mamba2.go): a convolution like the delta net's,
// then per head an outer-product state S_h ← e^{ΔA}·S_h + Δ·x ⊗ B read
// out by C, gated and group-normalised.
//
// The state of all recurrent layers of a sequence lives in one
// kvcache slot (kvcache/state.go, StateFloats values): per recurrent layer
// its convolution window ((d_conv−1, channels), oldest first) and, for a
// delta net, (v_heads, d_v, d_k). Forward zeroes a sequence's state when it
// starts at position 0 and otherwise continues it, so a sequence's tokens
// must come in order and may not rewind (Pos < Len other than 0 is an
// error): the cache makes Truncate forget everything and Match find
// nothing for a hybrid.
//
// Batch invariance: every token's recurrent step runs the same
// arithmetic in position order whatever else is in the batch and however
// its prompt was split into chunks, so a sequence's logits are bit for bit
// those of the sequence alone, cold. The delta rule runs in its recurrent
// form in prefill and decode alike: tensor.DeltaStepsBlocked over each run
// of a sequence's tokens in a step (its bits do not depend on the run's
// length; a decode is a run of one), on states held in its row-block
// layout, where the CPU runs it in SIMD (else tensor.DeltaStep token by
// token on row-major states; deltanet.go's deltaBlocked). The chunked form
// (tensor.DeltaChunked; the float64 WY reference in deltarule.go) rounds
// differently, which would make a token's logits depend on where the
// engine's steps began and on whether it was prompt or generated, and is
// slower on a CPU anyway: 0.3–0.45× the blocked recurrent rule's tokens
// per CPU-second on a d = 128 head (tensor/deltarule_chunk.go has the
// arithmetic, the measurements and the decision). deltaChunk switches it
// on for tests and benchmarks (BenchmarkHybridSynth's chunk32/chunk64).

// recWeights are the weights of a recurrent mixer.
type recWeights struct {
	stateOff int // offset of this layer's state in a sequence's slot

	conv []float32 // (channels, d_conv) depthwise kernel; column d_conv−1 multiplies the current input

	// Gated delta net.
	wqkv          *tensor.Mat // (2·n_k·d + n_v·d, dim) attn_qkv: q, k, v rows
	wz            *tensor.Mat // (n_v·d, dim) attn_gate
	wBeta, wAlpha *tensor.Mat // (n_v, dim) ssm_beta, ssm_alpha
	dtBias, a     []float32   // (n_v) ssm_dt.bias, ssm_a (= −exp(A_log))
	ssmNorm       []float32   // (d) ssm_norm
	wOut          *tensor.Mat // (dim, n_v·d) ssm_out

	// Short convolution.
	inProj, outProj *tensor.Mat // (3·dim, dim), (dim, dim)

	// Mamba-2 (mamba2.go; dtBias, a and ssmNorm above too).
	ssmIn  *tensor.Mat // (2·d_inner + 2·groups·d_state + heads, dim) ssm_in: z, x ‖ B ‖ C, dt
	convB  []float32   // (channels) ssm_conv1d.bias; nil: none
	d      []float32   // (heads) ssm_d, the skip x·D
	ssmOut *tensor.Mat // (dim, d_inner) ssm_out
}

// hybridWork holds the recurrent mixers' activations; grown on demand.
type hybridWork struct {
	mix   []float32 // (n, channels) conv input, then SiLU(conv) output (q, k L2-normalised)
	z     []float32 // (n, v_dim)
	beta  []float32 // (n, n_v)
	alpha []float32 // (n, n_v)
	o     []float32 // (n, v_dim) or (n, dim)
	qg    []float32 // (n, 2·q_dim) Qwen3.5 attention [query ‖ gate] per head
	gate  []float32 // (n, q_dim)
	row   []float32 // (channels) one token's conv output

	mats [3]*tensor.Mat // MatMulShared's matrices and outputs, kept to not allocate
	dsts [3][]float32

	job   deltaJob       // deltaNetMixer's head-parallel pass
	mjob  mamba2Job      // mamba2Mixer's head-parallel scan
	chunk []chunkScratch // per worker (deltaChunk only)

	shG, shU []float32 // (n, sh_hidden) shared expert's gate and up
	sh       []float32 // (n, dim) shared expert's output
	shGate   []float32 // (n) its gate logit
}

// IsHybrid reports whether some layers are recurrent.
func (c *Config) IsHybrid() bool { return c.Recurrent != nil }

// recurrent reports whether layer l's mixer is recurrent.
func (c *Config) recurrent(l int) bool { return l < len(c.Recurrent) && c.Recurrent[l] }

// recurrentLayers is the number of recurrent layers.
func (c *Config) recurrentLayers() int {
	n := 0
	for _, r := range c.Recurrent {
		if r {
			n++
		}
	}
	return n
}

// ConvChannels is the width of a recurrent layer's convolution: q, k and
// v of a delta net, or dim for a short convolution.
func (c *Config) ConvChannels() int {
	if c.SSMVHeads > 0 {
		return 2*c.SSMKHeads*c.SSMHeadDim + c.SSMVHeads*c.SSMHeadDim
	}
	if c.MambaHeads > 0 {
		return c.MambaInner + 2*c.MambaGroups*c.MambaState // x ‖ B ‖ C
	}
	return c.Dim
}

// layerStateFloats is one recurrent layer's state.
func (c *Config) layerStateFloats() int {
	n := (c.ConvKernel - 1) * c.ConvChannels()
	if c.SSMVHeads > 0 {
		n += c.SSMVHeads * c.SSMHeadDim * c.SSMHeadDim
	}
	if c.MambaHeads > 0 {
		n += c.MambaInner * c.MambaState // (heads, head_dim, d_state)
	}
	return n
}

// StateFloats is the float32 values of one sequence's recurrent state, all
// recurrent layers; 0 for a pure attention model.
func (c *Config) StateFloats() int {
	return c.recurrentLayers() * c.layerStateFloats()
}

// StateBytes is the memory of one sequence's recurrent state.
func (m *Model) StateBytes() int64 { return 4 * int64(m.StateFloats()) }

// validateHybrid checks the recurrent shapes.
func (c *Config) validateHybrid() error {
	if c.Recurrent == nil {
		return nil
	}
	switch {
	case len(c.Recurrent) != c.Layers:
		return fmt.Errorf("model: recurrent-layer flags for %d layers, model has %d", len(c.Recurrent), c.Layers)
	case c.CacheLayers() == 0:
		return fmt.Errorf("model: a hybrid model needs at least one attention layer")
	case c.ConvKernel < 2 || c.ConvKernel > 64:
		return fmt.Errorf("model: invalid convolution width %d", c.ConvKernel)
	case c.SSMVHeads < 0 || c.SSMKHeads < 0 || c.SSMHeadDim < 0:
		return fmt.Errorf("model: invalid delta-net heads")
	case c.SSMVHeads > 0 && (c.SSMKHeads == 0 || c.SSMHeadDim == 0 || c.SSMVHeads%c.SSMKHeads != 0):
		return fmt.Errorf("model: delta net with %d value heads is not a multiple of %d key heads (head dim %d)", c.SSMVHeads, c.SSMKHeads, c.SSMHeadDim)
	case c.MambaHeads < 0 || c.MambaHeads > 0 && (c.MambaInner <= 0 || c.MambaState <= 0 || c.MambaGroups <= 0 ||
		c.MambaInner%c.MambaHeads != 0 || c.MambaHeads%c.MambaGroups != 0 || c.MambaInner%c.MambaGroups != 0):
		return fmt.Errorf("model: Mamba-2 with %d channels, %d heads, %d groups, state %d do not divide", c.MambaInner, c.MambaHeads, c.MambaGroups, c.MambaState)
	}
	return nil
}

// readHybridGGUF reads the hybrid hyperparameters of a qwen35(moe),
// lfm2(moe) or granitehybrid file (llama.cpp's load_arch_hparams of each).
func readHybridGGUF(g *ggufLoader, c *Config) error {
	f := g.f
	switch c.Arch {
	case ArchQwen35, ArchQwen35MoE:
		if c.Arch == ArchQwen35MoE {
			c.SharedExpertHiddenDim = g.uint("expert_shared_feed_forward_length", 0, false)
		}
		c.ConvKernel = g.uint("ssm.conv_kernel", 0, true)
		c.SSMHeadDim = g.uint("ssm.state_size", 0, true)
		c.SSMKHeads = g.uint("ssm.group_count", 0, true)
		c.SSMVHeads = g.uint("ssm.time_step_rank", 0, true)
		inner := g.uint("ssm.inner_size", 0, true)
		if g.err != nil {
			return g.err
		}
		if inner != c.SSMVHeads*c.SSMHeadDim {
			return fmt.Errorf("model: ssm.inner_size %d != time_step_rank %d × state_size %d", inner, c.SSMVHeads, c.SSMHeadDim)
		}
		if c.Layers > 1<<16 {
			return fmt.Errorf("model: block_count %d is too large", c.Layers)
		}
		// Multi-token-prediction blocks (nextn_predict_layers) follow the
		// trunk in block_count; the forward pass runs the trunk only
		// (llama.cpp's n_layer() = n_layer_all − n_layer_nextn).
		all := c.Layers
		if nextn := g.uint("nextn_predict_layers", 0, false); nextn > 0 {
			if nextn >= all {
				return fmt.Errorf("model: nextn_predict_layers %d leaves no layer of block_count %d", nextn, all)
			}
			c.Layers = all - nextn
		}
		c.Recurrent = make([]bool, c.Layers)
		if v, ok := f.Get(f.Arch() + ".attention.recurrent_layers"); ok {
			a, ok := v.Array()
			if !ok || a.Len() != all {
				return fmt.Errorf("model: %s.attention.recurrent_layers is not %d per-layer flags", f.Arch(), all)
			}
			for i := range c.Recurrent {
				b, ok := a.Index(i).Bool()
				if !ok {
					u, ok := a.Index(i).Uint()
					if !ok {
						return fmt.Errorf("model: %s.attention.recurrent_layers[%d] is not a flag", f.Arch(), i)
					}
					b = u != 0
				}
				c.Recurrent[i] = b
			}
		} else {
			iv := g.uint("full_attention_interval", 4, false)
			if iv <= 0 {
				return fmt.Errorf("model: invalid full_attention_interval %d", iv)
			}
			for i := range c.Recurrent {
				c.Recurrent[i] = (i+1)%iv != 0
			}
		}
		c.AttnGate = true
	case ArchGraniteHybrid:
		// llama_model_granite_hybrid::load_arch_hparams; the recurrent
		// layers are those with head_count_kv 0 (readKVHeadsArray).
		c.ConvKernel = g.uint("ssm.conv_kernel", 0, true)
		c.MambaInner = g.uint("ssm.inner_size", 0, true)
		c.MambaState = g.uint("ssm.state_size", 0, true)
		c.MambaHeads = g.uint("ssm.time_step_rank", 0, true)
		c.MambaGroups = g.uint("ssm.group_count", 0, true)
		if g.err == nil && c.MambaInner != 2*c.Dim {
			return fmt.Errorf("model: ssm.inner_size %d is not 2 × embedding_length %d (granite-hybrid.cpp's assertion)", c.MambaInner, c.Dim)
		}
	case ArchLFM2, ArchLFM2MoE:
		c.ConvKernel = g.uint("shortconv.l_cache", 0, true)
		if c.Arch == ArchLFM2MoE {
			// llama_model_lfm2moe::load_arch_hparams: the gating function
			// is required, the leading dense layers optional.
			c.DenseLead = g.uint(llamacpp.KeyLeadingDense, 0, false)
			c.RouterSelBias = true // layer.ffn_exp_probs_b is created required
			switch fn := g.uint(llamacpp.KeyExpertGatingFunc, 0, true); fn {
			case 1: // LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX
			case 2: // LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID
				c.ExpertGating = GatingSigmoid
			default:
				if g.err == nil {
					return fmt.Errorf("model: %s.%s %d is not supported (1 softmax, 2 sigmoid)", c.Arch, llamacpp.KeyExpertGatingFunc, fn)
				}
			}
		}
	}
	return g.err
}

// readKVHeadsArray reads attention.head_count_kv when it is a per-layer
// array (lfm2: 0 for the recurrent layers): the recurrent flags and the
// attention layers' common count.
func readKVHeadsArray(g *ggufLoader, c *Config) (ok bool, err error) {
	f := g.f
	key := f.Arch() + "." + llamacpp.KeyHeadCountKV
	v, found := f.Get(key)
	if !found {
		return false, nil
	}
	a, isArr := v.Array()
	if !isArr {
		return false, nil
	}
	if a.Len() != c.Layers || c.Layers > 1<<16 {
		return true, fmt.Errorf("model: %s has %d entries for %d layers", key, a.Len(), c.Layers)
	}
	c.Recurrent = make([]bool, c.Layers)
	for i := range c.Layers {
		u, ok := a.Index(i).Uint()
		if !ok || u > 1<<20 {
			return true, fmt.Errorf("model: %s[%d] is not a head count", key, i)
		}
		if u == 0 {
			c.Recurrent[i] = true
			continue
		}
		if c.KVHeads != 0 && c.KVHeads != int(u) {
			return true, fmt.Errorf("model: %s: attention layers with %d and %d KV heads are not supported", key, c.KVHeads, u)
		}
		c.KVHeads = int(u)
	}
	return true, nil
}

// buildHybridWeights reads a hybrid model's weights (llama.cpp's
// load_arch_tensors of qwen35 and lfm2).
func (m *Model) buildHybridWeights(g weightReader) error {
	c := &m.Config
	dim, qd, kvd, hid := c.Dim, c.QDim(), c.KVDim(), c.HiddenDim
	w := &m.w
	w.tokEmb = g.mat(llamacpp.TokenEmbd, c.Vocab, dim, true)
	w.layers = make([]layerWeights, c.Layers)
	ch, dc := c.ConvChannels(), c.ConvKernel
	off := 0
	for i := range w.layers {
		l := &w.layers[i]
		wt := func(name string) string { return llamacpp.Blk(i, name, "weight") }
		l.attnNorm = g.vec(wt(llamacpp.AttnNorm), dim, true)
		if c.recurrent(i) {
			r := &recWeights{stateOff: off}
			off += c.layerStateFloats()
			l.rec = r
			var convName string
			if c.MambaHeads > 0 {
				convName = wt("ssm_conv1d")
				mamba2Weights(c, r, i, g)
			} else if c.SSMVHeads > 0 {
				vd := c.SSMVHeads * c.SSMHeadDim
				convName = wt("ssm_conv1d")
				r.wqkv = g.mat(wt(llamacpp.AttnQKV), ch, dim, true)
				r.wz = g.mat(wt("attn_gate"), vd, dim, true)
				r.wBeta = g.mat(wt("ssm_beta"), c.SSMVHeads, dim, true)
				r.wAlpha = g.mat(wt("ssm_alpha"), c.SSMVHeads, dim, true)
				r.dtBias = g.vec(llamacpp.Blk(i, "ssm_dt", "bias"), c.SSMVHeads, true)
				r.a = g.vec(fmt.Sprintf("blk.%d.ssm_a", i), c.SSMVHeads, true)
				r.ssmNorm = g.vec(wt("ssm_norm"), c.SSMHeadDim, true)
				r.wOut = g.mat(wt("ssm_out"), dim, vd, true)
			} else {
				convName = wt("shortconv.conv")
				r.inProj = g.mat(wt("shortconv.in_proj"), 3*dim, dim, true)
				r.outProj = g.mat(wt("shortconv.out_proj"), dim, dim, true)
			}
			if k := g.mat(convName, ch, dc, true); k != nil {
				r.conv = make([]float32, ch*dc)
				for j := range ch {
					tensor.DequantizeRow(r.conv[j*dc:(j+1)*dc], k.Type, k.Row(j))
				}
			}
			if c.Format == "hf" && c.SSMVHeads > 0 && g.error() == nil {
				if err := c.hfDeltaNet(r); err != nil {
					g.fail(err)
				}
			}
		} else {
			qrows := qd
			if c.AttnGate {
				qrows = 2 * qd
			}
			l.wq = g.mat(wt(llamacpp.AttnQ), qrows, dim, true)
			l.wk = g.mat(wt(llamacpp.AttnK), kvd, dim, true)
			l.wv = g.mat(wt(llamacpp.AttnV), kvd, dim, true)
			if c.QKNorm {
				l.qNorm = g.vec(wt(llamacpp.AttnQNorm), c.HeadDim, true)
				l.kNorm = g.vec(wt(llamacpp.AttnKNorm), c.HeadDim, true)
			}
			l.wo = g.mat(wt(llamacpp.AttnOut), dim, qd, true)
		}
		if c.AttnGate { // qwen35, qwen35moe
			l.ffnNorm = g.vec(wt(llamacpp.AttnPostNorm), dim, true) // the FFN's input norm
		} else {
			l.ffnNorm = g.vec(wt(llamacpp.FFNNorm), dim, true)
		}
		if c.moeLayer(i) {
			l.router = g.mat(wt(llamacpp.FFNRouter), c.Experts, dim, true)
			if c.RouterSelBias {
				l.routerSelB = g.vec(llamacpp.Blk(i, "exp_probs_b", "bias"), c.Experts, true)
			}
			eh := c.ExpertHiddenDim
			l.expGate = g.experts(wt(llamacpp.FFNGateExps), c.Experts, eh, dim)
			l.expUp = g.experts(wt(llamacpp.FFNUpExps), c.Experts, eh, dim)
			l.expDown = g.experts(wt(llamacpp.FFNDownExps), c.Experts, dim, eh)
			if sh := c.SharedExpertHiddenDim; sh > 0 {
				l.shGate = g.mat(wt("ffn_gate_shexp"), sh, dim, true)
				l.shUp = g.mat(wt("ffn_up_shexp"), sh, dim, true)
				l.shDown = g.mat(wt("ffn_down_shexp"), dim, sh, true)
				if v := g.vec(wt("ffn_gate_inp_shexp"), dim, c.Arch == ArchQwen35MoE); v != nil {
					l.shGateInp = &tensor.Mat{Type: tensor.F32, Rows: 1, Cols: dim, Data: tensor.F32Bytes(v)}
				}
			}
		} else {
			l.wGate = g.mat(wt(llamacpp.FFNGate), hid, dim, true)
			l.wUp = g.mat(wt(llamacpp.FFNUp), hid, dim, true)
			l.wDown = g.mat(wt(llamacpp.FFNDown), dim, hid, true)
		}
		if err := g.error(); err != nil {
			return err
		}
	}
	norm := llamacpp.OutputNorm + ".weight"
	if c.Arch == ArchLFM2 || c.Arch == ArchLFM2MoE {
		norm = "token_embd_norm.weight" // LLM_TENSOR_OUTPUT_NORM_LFM2
	}
	w.outNorm = g.vec(norm, dim, true)
	if _, ok := g.rows(llamacpp.Output); ok && !c.Tied {
		w.output = g.mat(llamacpp.Output, c.Vocab, dim, true)
	} else {
		w.output, c.Tied = w.tokEmb, true
	}
	return g.error()
}

// checkHybrid verifies a hybrid model's weights against its config.
func (w *weights) checkHybrid(c *Config) error {
	dim, qd, kvd, hid := c.Dim, c.QDim(), c.KVDim(), c.HiddenDim
	if err := checkMat("token_embd", w.tokEmb, c.Vocab, dim); err != nil {
		return err
	}
	if len(w.layers) != c.Layers {
		return fmt.Errorf("model: have %d layers, want %d", len(w.layers), c.Layers)
	}
	for i := range w.layers {
		l := &w.layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		errs := []error{
			checkVec(p+"attn_norm", l.attnNorm, dim, true),
			checkVec(p+"ffn_norm", l.ffnNorm, dim, true),
		}
		if c.moeLayer(i) {
			errs = append(errs, checkMat(p+"ffn_gate_inp", l.router, c.Experts, dim),
				checkVec(p+"exp_probs_b.bias", l.routerSelB, c.Experts, c.RouterSelBias))
			if len(l.expGate) != c.Experts || len(l.expUp) != c.Experts || len(l.expDown) != c.Experts {
				return fmt.Errorf("model: layer %d has %d/%d/%d expert matrices, want %d", i, len(l.expGate), len(l.expUp), len(l.expDown), c.Experts)
			}
			if sh := c.SharedExpertHiddenDim; sh > 0 {
				errs = append(errs, checkMat(p+"ffn_gate_shexp", l.shGate, sh, dim), checkMat(p+"ffn_up_shexp", l.shUp, sh, dim),
					checkMat(p+"ffn_down_shexp", l.shDown, dim, sh))
				if c.Arch == ArchQwen35MoE {
					errs = append(errs, checkMat(p+"ffn_gate_inp_shexp", l.shGateInp, 1, dim))
				}
			}
		} else {
			errs = append(errs, checkMat(p+"ffn_gate", l.wGate, hid, dim), checkMat(p+"ffn_up", l.wUp, hid, dim),
				checkMat(p+"ffn_down", l.wDown, dim, hid))
		}
		if c.recurrent(i) != (l.rec != nil) {
			return fmt.Errorf("model: layer %d: recurrent weights do not match the layer pattern", i)
		}
		if r := l.rec; r != nil {
			ch := c.ConvChannels()
			if len(r.conv) != ch*c.ConvKernel {
				errs = append(errs, fmt.Errorf("model: %sconvolution kernel has %d values, want %d", p, len(r.conv), ch*c.ConvKernel))
			}
			if c.MambaHeads > 0 {
				errs = append(errs, c.checkMamba2(p, r))
			} else if c.SSMVHeads > 0 {
				vd := c.SSMVHeads * c.SSMHeadDim
				errs = append(errs, checkMat(p+"attn_qkv", r.wqkv, ch, dim), checkMat(p+"attn_gate", r.wz, vd, dim),
					checkMat(p+"ssm_beta", r.wBeta, c.SSMVHeads, dim), checkMat(p+"ssm_alpha", r.wAlpha, c.SSMVHeads, dim),
					checkVec(p+"ssm_dt.bias", r.dtBias, c.SSMVHeads, true), checkVec(p+"ssm_a", r.a, c.SSMVHeads, true),
					checkVec(p+"ssm_norm", r.ssmNorm, c.SSMHeadDim, true), checkMat(p+"ssm_out", r.wOut, dim, vd))
			} else {
				errs = append(errs, checkMat(p+"shortconv.in_proj", r.inProj, 3*dim, dim), checkMat(p+"shortconv.out_proj", r.outProj, dim, dim))
			}
		} else {
			qrows := qd
			if c.AttnGate {
				qrows = 2 * qd
			}
			errs = append(errs, checkMat(p+"attn_q", l.wq, qrows, dim), checkMat(p+"attn_k", l.wk, kvd, dim),
				checkMat(p+"attn_v", l.wv, kvd, dim), checkMat(p+"attn_output", l.wo, dim, qd),
				checkVec(p+"attn_q_norm", l.qNorm, c.HeadDim, c.QKNorm), checkVec(p+"attn_k_norm", l.kNorm, c.HeadDim, c.QKNorm))
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
	return checkMat("output", w.output, c.Vocab, dim)
}

// setKVLayers numbers the layers that own a cache (Config.OwnsKV) in
// order: each one's kvLayer is its layer in the cache. A recurrent or
// shared-KV layer keeps the next owner's number, unused: attention reads
// the cache layer of KVSource(l).
func (w *weights) setKVLayers(c *Config) {
	k := 0
	for l := range w.layers {
		w.layers[l].kvLayer = k
		if c.OwnsKV(l) {
			k++
		}
	}
}

// validateStates checks that every sequence of a hybrid batch holds a
// state and neither rewinds nor skips: its first token in the batch is at
// Len (continue) or 0 (restart).
func (m *Model) validateStates(b *Batch, c *kvcache.Cache) error {
	if !m.IsHybrid() {
		return nil
	}
	if c.StateFloats() != m.StateFloats() {
		return fmt.Errorf("%w: the cache holds %d recurrent-state values per sequence, the model needs %d (make it with Model.NewCacheType)", ErrBatch, c.StateFloats(), m.StateFloats())
	}
	for i, s := range b.Seq {
		if !c.HasState(s) {
			return fmt.Errorf("%w: sequence of token %d holds no recurrent-state slot (kvcache.Reserve gives one)", ErrBatch, i)
		}
		first := true
		for j := i - 1; j >= 0; j-- {
			if b.Seq[j] == s {
				first = false
				break
			}
		}
		if first && b.Pos[i] != s.Len && b.Pos[i] != 0 {
			return fmt.Errorf("%w: position %d rewinds a recurrent state that holds %d positions (only a restart at 0 can)", ErrBatch, b.Pos[i], s.Len)
		}
	}
	return nil
}

// startStates zeroes the state of every sequence that starts at position
// 0 in this batch.
func (m *Model) startStates(b *Batch, c *kvcache.Cache) {
	if !m.IsHybrid() {
		return
	}
	for i, s := range b.Seq {
		if b.Pos[i] == 0 {
			clear(c.State(s))
		}
	}
}

// recurrentMixer runs layer lw's recurrent mixer over ws.xb (the n
// normalised rows) and leaves its output (n, dim) in ws.xb.
func (m *Model) recurrentMixer(b *Batch, c *kvcache.Cache, lw *layerWeights, n int) {
	if m.SSMVHeads > 0 {
		m.deltaNetMixer(b, c, lw.rec, n)
	} else if m.MambaHeads > 0 {
		m.mamba2Mixer(b, c, lw.rec, n)
	} else {
		m.shortConvMixer(b, c, lw.rec, n)
	}
}

// causalConv runs one token's depthwise causal convolution: out[ch] =
// Σ_j kernel[ch][j]·win[j][ch] over the window win = (the state's d_conv−1
// previous inputs, oldest first, then x), then shifts x into the state.
// The sum runs in j order (ggml_ssm_conv's).
func causalConv(out, x, state, kernel []float32, channels, dconv int) {
	causalConvRange(out, x, state, kernel, channels, dconv, 0, channels)
}

// causalConvRange is causalConv on channels [lo, hi) only (out, x and
// state still indexed by channel): channels are independent, so disjoint
// ranges can run in parallel with the same numbers.
func causalConvRange(out, x, state, kernel []float32, channels, dconv, lo, hi int) {
	if dconv == 4 && hi > lo {
		causalConv4(out, x, state, kernel, channels, lo, hi)
		return
	}
	causalConvGeneric(out, x, state, kernel, channels, dconv, lo, hi)
}

// causalConv4 is causalConvRange for d_conv = 4 (Qwen3.5's width), one
// token: tensor.CausalConv4, eight channels at a time in AVX2, the same
// sums in the same order (TestCausalConv4: bit for bit causalConvGeneric).
func causalConv4(out, x, state, kernel []float32, channels, lo, hi int) {
	tensor.CausalConv4(out[lo:hi], x[lo:hi], state[lo:hi], state[channels+lo:channels+hi], state[2*channels+lo:2*channels+hi], kernel[lo*4:hi*4])
}

// causalConvGeneric is causalConvRange for any width.
func causalConvGeneric(out, x, state, kernel []float32, channels, dconv, lo, hi int) {
	for ch := lo; ch < hi; ch++ {
		k := kernel[ch*dconv : (ch+1)*dconv]
		var s float32
		for j := range dconv - 1 {
			s += float32(state[j*channels+ch] * k[j])
		}
		s += float32(x[ch] * k[dconv-1])
		out[ch] = s
	}
	for j := range dconv - 2 {
		copy(state[j*channels+lo:j*channels+hi], state[(j+1)*channels+lo:(j+1)*channels+hi])
	}
	copy(state[(dconv-2)*channels+lo:(dconv-2)*channels+hi], x[lo:hi])
}

// silu is x·σ(x).
func silu(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }

// sigmoid is σ(x).
func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// softplus is log(1 + eˣ) (x above 20: x, as ggml does).
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}

// gatedQuery runs Qwen3.5's attention projections q, k and v (one
// hand-off to the workers for a single token: MatMulShared, bit for bit
// three MatMuls) and splits the query projection: attn_q yields per head
// [query (head_dim) ‖ gate (head_dim)]; q gets the queries, the
// workspace's gate the gates.
func (m *Model) gatedQuery(lw *layerWeights, q, k, v []float32, n int) {
	hw := &m.hw
	qd, hd := m.QDim(), m.HeadDim
	hw.qg = grow(hw.qg, n*2*qd)
	hw.gate = grow(hw.gate, n*qd)
	hw.mats[0], hw.mats[1], hw.mats[2] = lw.wq, lw.wk, lw.wv
	hw.dsts[0], hw.dsts[1], hw.dsts[2] = hw.qg, k, v
	m.pool.MatMulShared(m.ws.xb[:n*m.Dim], n, hw.mats[:], hw.dsts[:])
	for i := range n {
		r := hw.qg[i*2*qd : (i+1)*2*qd]
		for h := range m.Heads {
			copy(q[i*qd+h*hd:i*qd+(h+1)*hd], r[2*h*hd:(2*h+1)*hd])
			copy(hw.gate[i*qd+h*hd:i*qd+(h+1)*hd], r[(2*h+1)*hd:(2*h+2)*hd])
		}
	}
}

// sharedExpert runs layer lw's shared expert (qwen35moe) on the n rows of
// ws.xb: σ(w·x)·SwiGLU(x), returned (n, dim) in the workspace; nil when
// the layer has none.
func (m *Model) sharedExpert(lw *layerWeights, n int) []float32 {
	if lw.shUp == nil {
		return nil
	}
	hw := &m.hw
	dim, sh := m.Dim, m.SharedExpertHiddenDim
	x := m.ws.xb[:n*dim]
	hw.shG = grow(hw.shG, n*sh)
	hw.shU = grow(hw.shU, n*sh)
	hw.sh = grow(hw.sh, n*dim)
	hw.shGate = grow(hw.shGate, n)
	m.pool.MatMul(hw.shG, lw.shGate, x, n)
	m.pool.MatMul(hw.shU, lw.shUp, x, n)
	m.elementwise(jobSwiGLU, hw.shG, hw.shU, sh)
	m.pool.MatMul(hw.sh, lw.shDown, hw.shG, n)
	if lw.shGateInp == nil { // granitemoe: ungated
		return hw.sh
	}
	m.pool.MatMul(hw.shGate, lw.shGateInp, x, n)
	for i := range n {
		g := sigmoid(hw.shGate[i])
		for j := range dim {
			hw.sh[i*dim+j] *= g
		}
	}
	return hw.sh
}
