package model

import (
	"cmp"
	"fmt"
)

// IBM Granite checkpoints (GraniteForCausalLM → granite;
// GraniteMoeForCausalLM and GraniteMoeSharedForCausalLM → granitemoe), as
// llama.cpp's converter writes them (conversion/granite.py GraniteModel,
// GraniteMoeModel) and transformers runs them (modeling_granite.py,
// modeling_granitemoe.py, modeling_granitemoeshared.py):
//
//   - Llama blocks with four scalars: the embeddings × embedding_multiplier
//     (embedding_scale), attention scores × attention_multiplier instead of
//     1/√head_dim (attention.scale), each block's attention and FFN output
//     × residual_multiplier before its residual add (residual_scale), the
//     logits ÷ logits_scaling (logit_scale). The converter writes a key only
//     for a present, non-zero multiplier.
//   - Q/K rows permuted to llama.cpp's interleaved pairs (LlamaModel's
//     permute; hfReader.qkHeadDim) and RoPE run on pairs, so the logits are
//     the converted GGUF's bit for bit. head_dim is hidden_size /
//     num_attention_heads (the converter drops config.json's head_dim).
//   - granitemoe: num_local_experts (8) experts of intermediate_size,
//     num_experts_per_tok (2) of them chosen by the softmax router (JetMoe's
//     top-k gating: the top-k logits' softmax, as llama.cpp's renormalised
//     softmax); the fused expert and shared-expert tensors are read by
//     llamacpp's table (expertsGateUp, splitGateUp); shared_intermediate_size
//     (GraniteMoeShared; 0: none) is the ungated shared expert's width.
//   - RoPE: the three configs have no switch — GraniteMoeSharedConfig fixes
//     position_embedding_type "rope", the converter writes no
//     rope.scaling.finetuned for them and llama.cpp defaults it to true.
//     position_embedding_type "nope" (GraniteMoeHybridConfig's spelling of
//     Granite 4.0's RoPE-less attention) is read as rope.scaling.finetuned
//     false, so a RoPE-less granite GGUF has a checkpoint form.

// hfGranite is the part of config.json only Granite has.
type hfGranite struct {
	EmbeddingMultiplier   *float64 `json:"embedding_multiplier"`
	AttentionMultiplier   *float64 `json:"attention_multiplier"`
	ResidualMultiplier    *float64 `json:"residual_multiplier"`
	LogitsScaling         *float64 `json:"logits_scaling"`
	PositionEmbeddingType string   `json:"position_embedding_type"`
	SharedIntermediate    int      `json:"shared_intermediate_size"`
	HiddenAct             string   `json:"hidden_act"`
	MLPBias               bool     `json:"mlp_bias"`
}

// fillGranite reads a Granite config (see above) over fill's Llama part.
func (hc *hfConfig) fillGranite(c *Config) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("model: config.json: %s: "+format, append([]any{c.Arch}, args...)...)
	}
	if a := hc.HiddenAct; a != "" && a != "silu" {
		return bad("hidden_act %q is not supported (llama.cpp's graph runs SiLU)", a)
	}
	if hc.MLPBias {
		return bad("mlp_bias true is not supported")
	}
	if c.Dim%c.Heads != 0 {
		return bad("hidden_size %d is not a multiple of num_attention_heads %d", c.Dim, c.Heads)
	}
	hd := c.Dim / c.Heads
	if hc.HeadDim != nil && *hc.HeadDim != hd {
		return bad("head_dim %d: llama.cpp's converter ignores it and runs hidden_size / num_attention_heads = %d", *hc.HeadDim, hd)
	}
	c.HeadDim, c.RopeDim, c.RopeNeox = hd, hd, false
	if hc.RopeTheta == nil {
		if rp := hc.RopeParameters; rp != nil && rp.RopeTheta != nil { // transformers 5's rope_parameters
			c.RopeTheta = *rp.RopeTheta
		}
	}
	if rp := hc.RopeParameters; rp != nil && rp.RopeType != "" && rp.RopeType != "default" {
		return bad("rope_parameters.rope_type %q is not supported", rp.RopeType)
	}
	switch hc.PositionEmbeddingType {
	case "", "rope":
	case "nope":
		c.RopeDim = 0
	default:
		return bad("position_embedding_type %q is not supported (rope or nope)", hc.PositionEmbeddingType)
	}

	// The multipliers: transformers' default is 1, the converter writes a
	// key for a present non-zero one (an absent key leaves llama.cpp's
	// scale off, which is 1 but for attention: 1/√head_dim).
	scale := func(field string, v *float64) (float64, error) {
		switch {
		case v == nil:
			return 0, nil
		case *v == 0:
			return 0, bad("%s 0: llama.cpp's converter drops it (a scale of 1, or 1/√head_dim for attention)", field)
		}
		return *v, nil
	}
	var err error
	var e, a, r, l float64
	if e, err = scale("embedding_multiplier", hc.EmbeddingMultiplier); err != nil {
		return err
	}
	if a, err = scale("attention_multiplier", hc.AttentionMultiplier); err != nil {
		return err
	}
	if a == 0 {
		return bad("no attention_multiplier: transformers scales attention by 1, llama.cpp's converted file by 1/√head_dim")
	}
	if r, err = scale("residual_multiplier", hc.ResidualMultiplier); err != nil {
		return err
	}
	if l, err = scale("logits_scaling", hc.LogitsScaling); err != nil {
		return err
	}
	// float32, as the GGUF keys hold them.
	c.EmbedScale, c.AttnScale = float32(e), float64(float32(a))
	c.ResidualScale, c.LogitScale = float32(r), float32(l)

	if c.Arch != ArchGraniteMoE {
		return nil
	}
	c.Experts, c.ExpertsUsed = 8, cmp.Or(hc.NumExpertsPerTok, 2)
	if hc.NumLocalExperts != nil {
		c.Experts = *hc.NumLocalExperts
	}
	if c.Experts <= 0 || c.ExpertsUsed > c.Experts {
		return bad("num_local_experts %d, num_experts_per_tok %d (llama.cpp's granitemoe needs experts)", c.Experts, c.ExpertsUsed)
	}
	c.ExpertHiddenDim = c.HiddenDim // GraniteMoeMoE: experts of intermediate_size
	c.SharedExpertHiddenDim = hc.SharedIntermediate
	return nil
}
