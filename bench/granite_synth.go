package bench

import (
	"fmt"
	"slices"

	"nanoserve/gguf"
	"nanoserve/tensor"
)

// GraniteScales are a Granite shape's scalars (granite.cpp's
// embedding_scale, attention.scale, residual_scale, logit_scale; 0 leaves
// one out of the file) and its RoPE switch (rope.scaling.finetuned
// false: no RoPE, as Granite 4.0's attention layers).
type GraniteScales struct {
	Embedding float32 `json:"embedding"`
	Attention float32 `json:"attention"`
	Residual  float32 `json:"residual"`
	Logit     float32 `json:"logit"`
	NoRope    bool    `json:"no_rope,omitempty"`
}

// Toy Granite shapes for llama.cpp goldens, with Granite 3/4's scales
// (embedding 12, residual 0.22, logits ÷ 8, attention 1/64 rather than
// 1/√head_dim; the dense one without RoPE, as Granite 4.0's attention
// layers) and a final-norm gain that leaves the logits spread after
// the ÷ 8, and matrices of standard deviation 0.15 so the blocks move the
// logits as much as the 12× embeddings (at 0.02 the attention's scale and
// RoPE changed no logprob by 0.05); the MoE one with routers wide enough
// that llama.cpp's roundings flip no choice on the goldens' prompts, and
// a shared expert (granite-4.0-h-tiny's FFN blocks).
var (
	tinyGranite = Shape{Name: "tiny-granite", Arch: "granite", Dim: 64, Layers: 3, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 512, Ctx: 1024,
		RopeTheta: 10000, NormEps: 1e-5, OutGain: 40, WeightStd: 0.15, Granite: &GraniteScales{Embedding: 12, Attention: 0.015625, Residual: 0.22, Logit: 8, NoRope: true}}
	tinyGraniteMoE = Shape{Name: "tiny-granitemoe", Arch: "granitemoe", Dim: 64, Layers: 3, Heads: 4, KVHeads: 2, FFN: 32, Vocab: 512, Ctx: 1024,
		RopeTheta: 10000, NormEps: 1e-5, OutGain: 40, WeightStd: 0.15, RouterStd: 2, Experts: 8, ExpertsUsed: 2, SharedFFN: 64,
		Granite: &GraniteScales{Embedding: 12, Attention: 0.015625, Residual: 0.22, Logit: 8}}
)

func init() { shapes = append(shapes, tinyGranite, tinyGraniteMoE) }

// graniteKVs are the granite / granitemoe keys beyond HParams.
func (s *Shape) graniteKVs() []gguf.KV {
	g := s.Granite
	if g == nil {
		return nil
	}
	a := s.Arch + "."
	var kvs []gguf.KV
	for _, kv := range []struct {
		k string
		v float32
	}{{"embedding_scale", g.Embedding}, {"attention.scale", g.Attention}, {"residual_scale", g.Residual}, {"logit_scale", g.Logit}} {
		if kv.v != 0 {
			kvs = append(kvs, gguf.KV{Key: a + kv.k, Value: gguf.Float32(kv.v)})
		}
	}
	if g.NoRope {
		kvs = append(kvs, gguf.KV{Key: a + "rope.scaling.finetuned", Value: gguf.Bool(false)})
	}
	if s.SharedFFN > 0 {
		kvs = append(kvs, gguf.KV{Key: a + "expert_shared_feed_forward_length", Value: gguf.Uint32(uint32(s.SharedFFN))})
	}
	return kvs
}

// Mamba2 is the Mamba-2 geometry of a granitehybrid shape (d_inner =
// 2·dim, as granite-hybrid.cpp asserts): Heads heads, Groups groups of B
// and C, State wide, a ConvKernel-wide convolution; the layers in Attn
// attend (without RoPE when Granite.NoRope), the rest are Mamba-2 layers.
type Mamba2 struct {
	State      int   `json:"state"`
	Heads      int   `json:"heads"`
	Groups     int   `json:"groups"`
	ConvKernel int   `json:"conv_kernel"`
	Attn       []int `json:"attn"`
}

// tinyGraniteHybrid is granite-4.0-h-tiny's layout at toy size: Mamba-2
// layers (8 heads of 16, 2 groups, state 16) around one attention layer
// without RoPE, softmax experts with a shared expert, Granite's scales.
var tinyGraniteHybrid = Shape{Name: "tiny-granitehybrid", Arch: "granitehybrid", Dim: 64, Layers: 4, Heads: 4, KVHeads: 2, FFN: 32, Vocab: 512,
	Ctx: 1024, RopeTheta: 10000, NormEps: 1e-5, OutGain: 40, WeightStd: 0.15, RouterStd: 2, Experts: 8, ExpertsUsed: 2, SharedFFN: 64,
	Granite: &GraniteScales{Embedding: 12, Attention: 0.015625, Residual: 0.22, Logit: 8, NoRope: true},
	Mamba:   &Mamba2{State: 16, Heads: 8, Groups: 2, ConvKernel: 4, Attn: []int{2}}}

// graniteHybrid1B is a Granite-4.0-H-1B-sized hybrid (1536 wide, 40
// layers of which 4 attend without RoPE, Mamba-2 with 48 heads of 64 and
// a 128-wide state, a 4096-wide dense FFN, a 100352-token vocabulary,
// tied): the Mamba-2 scan's share of a real model's time.
var graniteHybrid1B = Shape{Name: "granitehybrid-1b", Arch: "granitehybrid", Dim: 1536, Layers: 40, Heads: 12, KVHeads: 4, FFN: 4096,
	Vocab: 100352, Ctx: 131072, Tied: true, RopeTheta: 10000, NormEps: 1e-5,
	Granite: &GraniteScales{Embedding: 12, Attention: 0.015625, Residual: 0.246, Logit: 6, NoRope: true},
	Mamba:   &Mamba2{State: 128, Heads: 48, Groups: 1, ConvKernel: 4, Attn: []int{10, 13, 17, 27}}}

func init() { shapes = append(shapes, tinyGraniteHybrid, graniteHybrid1B) }

// validateMamba2 checks a granitehybrid shape.
func (s *Shape) validateMamba2() error {
	mb := s.Mamba
	switch {
	case mb == nil || s.Granite == nil || s.DeltaNet != nil || s.ShortConv != nil:
		return fmt.Errorf("bench: shape %q: granitehybrid needs Mamba-2 and Granite scales only", s.Name)
	case mb.State <= 0 || mb.Heads <= 0 || mb.Groups <= 0 || mb.Heads%mb.Groups != 0 || 2*s.Dim%mb.Heads != 0 || mb.ConvKernel < 2:
		return fmt.Errorf("bench: shape %q: Mamba-2 with %d heads, %d groups, state %d, conv %d", s.Name, mb.Heads, mb.Groups, mb.State, mb.ConvKernel)
	case len(mb.Attn) == 0 || len(mb.Attn) >= s.Layers || slices.ContainsFunc(mb.Attn, func(l int) bool { return l < 0 || l >= s.Layers }):
		return fmt.Errorf("bench: shape %q: attention layers %v of %d", s.Name, mb.Attn, s.Layers)
	case s.Experts > 0 && (s.ExpertsUsed <= 0 || s.ExpertsUsed > s.Experts) || s.SharedFFN > 0 && s.Experts == 0:
		return fmt.Errorf("bench: shape %q: %d experts (%d used, shared %d)", s.Name, s.Experts, s.ExpertsUsed, s.SharedFFN)
	}
	return nil
}

// headCountKVs is the per-layer attention.head_count_kv (0: Mamba-2).
func (mb *Mamba2) headCountKVs(s *Shape) []int {
	kv := make([]int, s.Layers)
	for _, l := range mb.Attn {
		kv[l] = s.KVHeads
	}
	return kv
}

// mamba2KVs are the ssm.* keys of a granitehybrid shape.
func (s *Shape) mamba2KVs() []gguf.KV {
	mb := s.Mamba
	if mb == nil {
		return nil
	}
	a := s.Arch + "."
	u32 := func(k string, v int) gguf.KV { return gguf.KV{Key: a + k, Value: gguf.Uint32(uint32(v))} }
	return []gguf.KV{u32("ssm.conv_kernel", mb.ConvKernel), u32("ssm.inner_size", 2*s.Dim), u32("ssm.state_size", mb.State),
		u32("ssm.time_step_rank", mb.Heads), u32("ssm.group_count", mb.Groups)}
}

// planGraniteHybrid lists a granitehybrid shape's tensors in llama.cpp's
// names: Mamba-2 layers (ssm_in, the F32 kernel and bias of ssm_conv1d,
// ssm_dt.bias, ssm_a {1, heads} (−1…−8), ssm_d {1, heads}, ssm_norm
// {d_inner/groups, groups}, ssm_out) or attention layers (q, k, v,
// output), ffn_norm and a dense SwiGLU FFN or softmax experts with the
// shared expert; output_norm.
func planGraniteHybrid(s Shape, m Mix) []synthTensor {
	pl := &planner{s: s, m: m}
	mat, vec := pl.mat, pl.vec
	mb := s.Mamba
	dim, kvd, di := s.Dim, s.kvDim(), 2*s.Dim
	ch := di + 2*mb.Groups*mb.State
	mat("token_embd.weight", "token_embd", -1, s.Vocab, dim, s.Tied)
	for l := range s.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", dim, "ones")
		if slices.Contains(mb.Attn, l) {
			pl.attn(p, l, dim, dim, kvd, 0)
		} else {
			mat(p+"ssm_in.weight", "ssm_in", l, di+ch+mb.Heads, dim, false)
			pl.ts = append(pl.ts, synthTensor{name: p + "ssm_conv1d.weight", typ: tensor.F32, rows: ch, cols: mb.ConvKernel, fill: "normal", scale: 0.3})
			vec(p+"ssm_conv1d.bias", ch, "normal")
			vec(p+"ssm_dt.bias", mb.Heads, "normal")
			vec(p+"ssm_a", mb.Heads, "ramp", 1, uint64(mb.Heads))
			vec(p+"ssm_d", mb.Heads, "ones", 1, uint64(mb.Heads))
			vec(p+"ssm_norm.weight", di, "ones", uint64(di/mb.Groups), uint64(mb.Groups))
			mat(p+"ssm_out.weight", "ssm_out", l, dim, di, false)
		}
		vec(p+"ffn_norm.weight", dim, "ones")
		if s.Experts > 0 {
			pl.router(p, false)
		}
		pl.ffn(p, l, s.FFN, s.Experts, "gate", "down", "up")
		pl.sharedExpert(p, l)
	}
	pl.outNorm("output_norm.weight")
	if !s.Tied {
		mat("output.weight", "output", -1, s.Vocab, dim, true)
	}
	return pl.ts
}
