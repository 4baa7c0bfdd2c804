package bench

import (
	"fmt"
	"slices"

	"nanoserve/gguf"
	"nanoserve/tensor"
)

// ShortConv is the LFM2 geometry of a synthetic lfm2 / lfm2moe shape:
// gated short convolutions ConvKernel positions wide (conv_L_cache) in
// every layer except Attn's, which are GQA attention layers; with
// experts, the first DenseLead layers keep a dense SwiGLU FFN DenseFFN
// wide (num_dense_layers, intermediate_size) and the rest route to
// Shape.Experts σ-gated experts of Shape.FFN.
type ShortConv struct {
	ConvKernel int   `json:"conv_kernel"`
	Attn       []int `json:"attn"`
	DenseLead  int   `json:"dense_lead,omitempty"`
	DenseFFN   int   `json:"dense_ffn,omitempty"`
}

// The LFM2 shapes: LiquidAI/LFM2-8B-A1B's text config (2048 wide, 24
// layers of which 6 attend, 32 heads / 8 KV heads of 64, 32 experts of
// 1792, 4 used, after 2 dense layers of 7168; a 65536-token vocabulary,
// tied) — 8.3B parameters, 1.5B active — and a toy of the same tensors.
var (
	lfm2MoEShapes = []Shape{
		{Name: "lfm2-8b-a1b", Arch: "lfm2moe", Dim: 2048, Layers: 24, Heads: 32, KVHeads: 8, FFN: 1792, Vocab: 65536, Ctx: 128000,
			Tied: true, RopeTheta: 1e6, NormEps: 1e-5, Experts: 32, ExpertsUsed: 4,
			ShortConv: &ShortConv{ConvKernel: 3, Attn: []int{2, 6, 10, 14, 18, 21}, DenseLead: 2, DenseFFN: 7168}},
		// Its first 6 layers' kinds at full width (2 dense, then 4 MoE of
		// which the 3rd and 6th attend): an F16 file of 3.3 GB, for the
		// real shapes' arithmetic against llama.cpp without 17 GB of F16.
		{Name: "lfm2-8b-a1b-6l", Arch: "lfm2moe", Dim: 2048, Layers: 6, Heads: 32, KVHeads: 8, FFN: 1792, Vocab: 65536, Ctx: 128000,
			Tied: true, RopeTheta: 1e6, NormEps: 1e-5, Experts: 32, ExpertsUsed: 4,
			ShortConv: &ShortConv{ConvKernel: 3, Attn: []int{2, 5}, DenseLead: 2, DenseFFN: 7168}},
	}
	tinyLFM2MoE = Shape{Name: "tiny-lfm2moe", Arch: "lfm2moe", Dim: 64, Layers: 5, Heads: 4, KVHeads: 2, FFN: 32, Vocab: 512, Ctx: 1024,
		Tied: true, RopeTheta: 1e6, NormEps: 1e-5, Experts: 8, ExpertsUsed: 3, OutGain: 10, RouterStd: 0.5,
		ShortConv: &ShortConv{ConvKernel: 3, Attn: []int{1, 3}, DenseLead: 1, DenseFFN: 128}}
)

func init() {
	shapes = append(shapes, lfm2MoEShapes...)
	shapes = append(shapes, tinyLFM2MoE)
	for _, k := range []string{"lfm2-8b", "lfm2moe", "lfm2-moe"} {
		shapeAliases[k] = "lfm2-8b-a1b"
	}
}

// validateShortConv checks an lfm2 / lfm2moe shape.
func (s *Shape) validateShortConv() error {
	c := s.ShortConv
	switch {
	case c == nil || s.DeltaNet != nil:
		return fmt.Errorf("bench: shape %q: %s needs short convolutions (and no delta net)", s.Name, s.Arch)
	case c.ConvKernel < 2 || len(c.Attn) == 0 || len(c.Attn) >= s.Layers:
		return fmt.Errorf("bench: shape %q: convolution width %d, %d attention layers of %d", s.Name, c.ConvKernel, len(c.Attn), s.Layers)
	case slices.ContainsFunc(c.Attn, func(l int) bool { return l < 0 || l >= s.Layers }):
		return fmt.Errorf("bench: shape %q: attention layers %v outside 0..%d", s.Name, c.Attn, s.Layers-1)
	case (s.Arch == "lfm2moe") != (s.Experts > 0) || s.Experts > 0 && (s.ExpertsUsed <= 0 || s.ExpertsUsed > s.Experts):
		return fmt.Errorf("bench: shape %q: %s with %d experts (%d used)", s.Name, s.Arch, s.Experts, s.ExpertsUsed)
	case c.DenseLead < 0 || c.DenseLead >= s.Layers || c.DenseLead > 0 && (s.Experts == 0 || c.DenseFFN <= 0):
		return fmt.Errorf("bench: shape %q: %d leading dense layers of width %d", s.Name, c.DenseLead, c.DenseFFN)
	}
	return nil
}

// denseFFN is the width of the dense FFN layers (feed_forward_length).
func (s *Shape) denseFFN() int {
	if s.ShortConv != nil && s.Experts > 0 {
		return s.ShortConv.DenseFFN
	}
	return s.FFN
}

// shortConvKVs are the lfm2 / lfm2moe keys beyond HParams (the
// per-layer KV-head array HParams writes from HeadCountKVs).
func (s *Shape) shortConvKVs() []gguf.KV {
	c := s.ShortConv
	if c == nil {
		return nil
	}
	a := s.Arch + "."
	u32 := func(k string, v int) gguf.KV { return gguf.KV{Key: a + k, Value: gguf.Uint32(uint32(v))} }
	kvs := []gguf.KV{u32("shortconv.l_cache", c.ConvKernel)}
	if s.Experts > 0 {
		kvs = append(kvs, u32("leading_dense_block_count", c.DenseLead), u32("expert_gating_func", 2)) // 2: sigmoid
	}
	return kvs
}

// headCountKVs is the per-layer attention.head_count_kv (0: convolution).
func (s *Shape) headCountKVs() []int {
	kv := make([]int, s.Layers)
	for _, l := range s.ShortConv.Attn {
		kv[l] = s.KVHeads
	}
	return kv
}

// planShortConv lists an lfm2 / lfm2moe shape's tensors in llama.cpp's
// names: the operator norm (attn_norm), convolution layers (in_proj to
// [b ‖ c ‖ x], the F32 depthwise kernel, out_proj) or attention layers
// with QK norms, ffn_norm before a dense SwiGLU FFN or the σ-gated
// experts (F32 router, F32 selection bias exp_probs_b), and the final
// norm token_embd_norm.
func planShortConv(s Shape, m Mix) []synthTensor {
	pl := &planner{s: s, m: m}
	mat, vec := pl.mat, pl.vec
	c := s.ShortConv
	dim, hd := s.Dim, s.headDim()
	qd, kvd := s.Heads*hd, s.KVHeads*hd
	mat("token_embd.weight", "token_embd", -1, s.Vocab, dim, s.Tied)
	for l := range s.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", dim, "ones")
		if slices.Contains(c.Attn, l) {
			pl.attn(p, l, qd, qd, kvd, hd)
		} else {
			mat(p+"shortconv.in_proj.weight", "shortconv_in_proj", l, 3*dim, dim, false)
			// The kernel stays F32 (llama-quantize skips it: ne0 = l_cache).
			pl.ts = append(pl.ts, synthTensor{name: p + "shortconv.conv.weight", typ: tensor.F32, rows: dim, cols: c.ConvKernel, fill: "normal"})
			mat(p+"shortconv.out_proj.weight", "shortconv_out_proj", l, dim, dim, false)
		}
		vec(p+"ffn_norm.weight", dim, "ones")
		if s.Experts > 0 && l >= c.DenseLead {
			pl.router(p, true)
			pl.ffn(p, l, s.FFN, s.Experts, "gate", "up", "down")
			continue
		}
		pl.ffn(p, l, s.denseFFN(), 0, "gate", "up", "down")
	}
	pl.outNorm("token_embd_norm.weight")
	if !s.Tied {
		mat("output.weight", "output", -1, s.Vocab, dim, true)
	}
	return pl.ts
}
