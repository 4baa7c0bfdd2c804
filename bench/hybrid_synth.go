package bench

import (
	"fmt"

	"nanoserve/gguf"
	"nanoserve/tensor"
)

// DeltaNet is the Gated DeltaNet geometry of a Qwen3.5-shaped synthetic
// model (the Hugging Face config's linear_* keys): KHeads query/key heads
// and VHeads value heads (VHeads a multiple of KHeads), all HeadDim wide
// (linear_key_head_dim = linear_value_head_dim in every Qwen3.5), a causal
// convolution ConvKernel positions wide over [q ‖ k ‖ v], and every
// Interval-th layer a gated full-attention layer (full_attention_interval).
type DeltaNet struct {
	KHeads     int `json:"k_heads"`
	VHeads     int `json:"v_heads"`
	HeadDim    int `json:"head_dim"`
	ConvKernel int `json:"conv_kernel"`
	Interval   int `json:"interval"`
}

// The Qwen3.5 shapes (text configs of Qwen/Qwen3.5-0.8B, -2B and
// -35B-A3B): 248320-token vocabularies, 256-wide gated attention heads of
// which the first 64 dims rotate (partial_rotary_factor 0.25, RoPE base
// 10⁷), one attention layer in four, 128-wide delta-net heads with a
// 4-wide convolution. The 35B-A3B's 40 layers of 256 experts (8 used, 512
// wide, plus a 512-wide shared expert) are 35B parameters; its synthetic
// stand-in keeps 4 layers (three delta nets, one attention), i.e. a
// tenth of its per-token layer work at the full width, and fits in 2 GB
// at Q4_K_M.
var (
	qwen35Net08  = &DeltaNet{KHeads: 16, VHeads: 16, HeadDim: 128, ConvKernel: 4, Interval: 4}
	qwen35NetMoE = &DeltaNet{KHeads: 16, VHeads: 32, HeadDim: 128, ConvKernel: 4, Interval: 4}

	qwen35Shapes = []Shape{
		{Name: "qwen35-0.8b", Arch: "qwen35", Dim: 1024, Layers: 24, Heads: 8, KVHeads: 2, HeadDim: 256, RopeDim: 64, FFN: 3584,
			Vocab: 248320, Ctx: 262144, Tied: true, RopeTheta: 1e7, NormEps: 1e-6, DeltaNet: qwen35Net08},
		{Name: "qwen35-2b", Arch: "qwen35", Dim: 2048, Layers: 24, Heads: 8, KVHeads: 2, HeadDim: 256, RopeDim: 64, FFN: 6144,
			Vocab: 248320, Ctx: 262144, Tied: true, RopeTheta: 1e7, NormEps: 1e-6, DeltaNet: qwen35Net08},
		{Name: "qwen35moe-a3b-4l", Arch: "qwen35moe", Dim: 2048, Layers: 4, Heads: 16, KVHeads: 2, HeadDim: 256, RopeDim: 64, FFN: 512,
			Vocab: 248320, Ctx: 262144, RopeTheta: 1e7, NormEps: 1e-6, DeltaNet: qwen35NetMoE, Experts: 256, ExpertsUsed: 8, SharedFFN: 512},
	}

	// Test shapes: the same tensors at toy sizes (more value heads than
	// key heads, as the 35B-A3B has).
	tinyQwen35 = Shape{Name: "tiny-qwen35", Arch: "qwen35", Dim: 64, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32, RopeDim: 8, FFN: 128,
		Vocab: 512, Ctx: 256, Tied: true, RopeTheta: 1e7, NormEps: 1e-6,
		DeltaNet: &DeltaNet{KHeads: 2, VHeads: 4, HeadDim: 32, ConvKernel: 4, Interval: 4}}
	tinyQwen35MoE = Shape{Name: "tiny-qwen35moe", Arch: "qwen35moe", Dim: 64, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32, RopeDim: 8, FFN: 32,
		Vocab: 512, Ctx: 256, RopeTheta: 1e7, NormEps: 1e-6, Experts: 8, ExpertsUsed: 2, SharedFFN: 64,
		DeltaNet: &DeltaNet{KHeads: 2, VHeads: 4, HeadDim: 32, ConvKernel: 4, Interval: 4}}
)

func init() {
	shapes = append(shapes, qwen35Shapes...)
	for k, v := range map[string]string{"qwen35-0.8": "qwen35-0.8b", "qwen3.5-0.8b": "qwen35-0.8b", "qwen35-2": "qwen35-2b",
		"qwen3.5-2b": "qwen35-2b", "qwen35moe": "qwen35moe-a3b-4l", "qwen35-35b-a3b": "qwen35moe-a3b-4l", "qwen3.5-35b-a3b": "qwen35moe-a3b-4l"} {
		shapeAliases[k] = v
	}
}

// validateHybrid checks a qwen35 / qwen35moe shape.
func (s *Shape) validateHybrid() error {
	d := s.DeltaNet
	switch {
	case d == nil:
		return fmt.Errorf("bench: shape %q: %s needs a delta net", s.Name, s.Arch)
	case d.KHeads <= 0 || d.VHeads <= 0 || d.HeadDim <= 0 || d.VHeads%d.KHeads != 0:
		return fmt.Errorf("bench: shape %q: delta net with %d key heads, %d value heads of %d", s.Name, d.KHeads, d.VHeads, d.HeadDim)
	case d.ConvKernel < 2 || d.Interval < 2 || d.Interval > s.Layers:
		return fmt.Errorf("bench: shape %q: convolution width %d, attention every %d of %d layers", s.Name, d.ConvKernel, d.Interval, s.Layers)
	case s.RopeDim <= 0 || s.RopeDim > s.headDim() || s.RopeDim%2 != 0:
		return fmt.Errorf("bench: shape %q: %d rotated dims of a %d-wide head", s.Name, s.RopeDim, s.headDim())
	case (s.Arch == "qwen35moe") != (s.Experts > 0) || (s.Experts > 0 && (s.SharedFFN <= 0 || s.ExpertsUsed <= 0 || s.ExpertsUsed > s.Experts)):
		return fmt.Errorf("bench: shape %q: %s with %d experts (%d used, shared %d)", s.Name, s.Arch, s.Experts, s.ExpertsUsed, s.SharedFFN)
	}
	return nil
}

// recurrent reports whether layer l is a delta net (llama.cpp's rule for
// full_attention_interval: every Interval-th layer attends).
func (d *DeltaNet) recurrent(l int) bool { return (l+1)%d.Interval != 0 }

// hybridKVs are the qwen35 keys beyond HParams: the ssm.* geometry, the
// attention interval and the multi-section RoPE's sections (text
// positions only: the 11/11/10 split of Qwen3.5's 32 rotated pairs).
func (s *Shape) hybridKVs() []gguf.KV {
	d := s.DeltaNet
	if d == nil {
		return nil
	}
	a := s.Arch + "."
	u32 := func(k string, v int) gguf.KV { return gguf.KV{Key: a + k, Value: gguf.Uint32(uint32(v))} }
	pairs := int32(s.RopeDim / 2)
	sec := []int32{pairs - 2*(pairs/3), pairs / 3, pairs / 3, 0}
	kvs := []gguf.KV{
		u32("ssm.conv_kernel", d.ConvKernel),
		u32("ssm.state_size", d.HeadDim),
		u32("ssm.group_count", d.KHeads),
		u32("ssm.time_step_rank", d.VHeads),
		u32("ssm.inner_size", d.VHeads*d.HeadDim),
		u32("full_attention_interval", d.Interval),
		{Key: a + "rope.dimension_sections", Value: gguf.NewArray(sec)},
	}
	if s.SharedFFN > 0 {
		kvs = append(kvs, u32("expert_shared_feed_forward_length", s.SharedFFN))
	}
	return kvs
}

// planHybrid lists a qwen35 / qwen35moe shape's tensors in llama.cpp's
// names: delta-net layers (attn_qkv, attn_gate, the F32 convolution
// kernel, decay and gate inputs ssm_alpha/ssm_beta, ssm_dt.bias, ssm_a,
// the gated norm, ssm_out), gated attention layers (attn_q holding the
// queries and their gates, QK norms), post_attention_norm before a dense
// SwiGLU FFN or the experts with a σ-gated shared expert.
func planHybrid(s Shape, m Mix) []synthTensor {
	pl := &planner{s: s, m: m}
	mat, vec := pl.mat, pl.vec
	d := s.DeltaNet
	dim, hd := s.Dim, s.headDim()
	qd, kvd := s.Heads*hd, s.KVHeads*hd
	ch := 2*d.KHeads*d.HeadDim + d.VHeads*d.HeadDim
	vd := d.VHeads * d.HeadDim
	mat("token_embd.weight", "token_embd", -1, s.Vocab, dim, s.Tied)
	for l := range s.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", dim, "ones")
		if d.recurrent(l) {
			mat(p+"attn_qkv.weight", "attn_qkv", l, ch, dim, false)
			mat(p+"attn_gate.weight", "attn_gate", l, vd, dim, false)
			// The convolution kernel stays F32 (llama-quantize skips it).
			pl.ts = append(pl.ts, synthTensor{name: p + "ssm_conv1d.weight", typ: tensor.F32, rows: ch, cols: d.ConvKernel, fill: "normal"})
			vec(p+"ssm_dt.bias", d.VHeads, "zeros")
			vec(p+"ssm_a", d.VHeads, "ramp")
			mat(p+"ssm_beta.weight", "ssm_beta", l, d.VHeads, dim, false)
			mat(p+"ssm_alpha.weight", "ssm_alpha", l, d.VHeads, dim, false)
			vec(p+"ssm_norm.weight", d.HeadDim, "ones")
			mat(p+"ssm_out.weight", "ssm_out", l, dim, vd, false)
		} else {
			pl.attn(p, l, 2*qd, qd, kvd, hd)
		}
		vec(p+"post_attention_norm.weight", dim, "ones")
		if s.Experts > 0 {
			pl.router(p, false)
		}
		pl.ffn(p, l, s.FFN, s.Experts, "gate", "up", "down")
		if s.Experts > 0 {
			vec(p+"ffn_gate_inp_shexp.weight", dim, "normal")
			pl.sharedExpert(p, l)
		}
	}
	pl.outNorm("output_norm.weight")
	if !s.Tied {
		mat("output.weight", "output", -1, s.Vocab, dim, true)
	}
	return pl.ts
}
