package bench

import (
	"nanoserve/gguf"
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
