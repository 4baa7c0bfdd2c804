package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Gemma 4 Hugging Face checkpoints (Gemma4ForCausalLM, and the language
// model of Gemma4ForConditionalGeneration: text_config, tensors under
// lmPrefix). The settings are Gemma4TextConfig's (transformers
// configuration_gemma4.py), read as llama.cpp's converter turns them into
// GGUF keys (conversion/gemma.py Gemma4Model.set_gguf_parameters):
//
//   - head_dim is the windowed layers' head width, global_head_dim the
//     global layers' (or per_layer_config's head_dim of a full_attention
//     layer); num_key_value_heads the windowed layers' KV heads, and with
//     attention_k_eq_v the global layers have num_global_key_value_heads
//     and no v_proj (their values are their keys' projection);
//   - layer_types picks the windowed layers (default: every 6th layer
//     global, the last one always global), sliding_window their window;
//   - rope_parameters holds one entry per layer type: sliding_attention
//     the default RoPE over the whole head with its rope_theta,
//     full_attention "proportional" RoPE with rope_theta and
//     partial_rotary_factor p: pair i < p·global_head_dim/2 turns at
//     rope_theta^(−2i/global_head_dim), the other pairs not at all —
//     which the converter writes as a rope_freqs tensor of 1s then 1e30s
//     over the whole head, made here the same way (ropeFreqs);
//   - num_kv_shared_layers: the last ones read the cache of the last
//     earlier layer of their type (their k_proj, v_proj, k_norm, if the
//     checkpoint has them, go unused, as transformers ignores them);
//     use_double_wide_mlp doubles those layers' intermediate_size;
//   - hidden_size_per_layer_input: the per-layer inputs' width (0 or
//     absent: none, as the converter reads it);
//   - enable_moe_block with num_experts, top_k_experts and
//     moe_intermediate_size: the 26B-A4B's mixture beside the dense MLP;
//   - final_logit_softcapping; attention scale 1 (Gemma4TextAttention's
//     scaling); embeddings × √hidden_size.
//
// The weights need no value transform: Gemma4RMSNorm multiplies by its
// weight (no 1 + w), the experts' 3-D tensors are llama.cpp's layout
// already, and the per-layer embedding's √P is applied by the graph.

// hfGemma4 is the part of config.json only Gemma 4 has.
type hfGemma4 struct {
	GlobalHeadDim          *int                       `json:"global_head_dim"`
	NumGlobalKVHeads       *int                       `json:"num_global_key_value_heads"`
	AttentionKEqV          bool                       `json:"attention_k_eq_v"`
	PerLayerConfig         map[string]json.RawMessage `json:"per_layer_config"`
	NumKVSharedLayers      int                        `json:"num_kv_shared_layers"`
	HiddenSizePerLayer     *int                       `json:"hidden_size_per_layer_input"`
	UseDoubleWideMLP       bool                       `json:"use_double_wide_mlp"`
	EnableMoEBlock         bool                       `json:"enable_moe_block"`
	TopKExperts            int                        `json:"top_k_experts"`
	HiddenActivation       string                     `json:"hidden_activation"`
	AttentionBias          bool                       `json:"attention_bias"`
	UseBidirectionalAttn   *string                    `json:"use_bidirectional_attention"`
	gemma4FullRopeFraction float64                    // full_attention's partial_rotary_factor (fillGemma4)
}

// hfRope is one RoPE parameter set of rope_parameters.
type hfRope struct {
	RopeType            string   `json:"rope_type"`
	RopeTheta           *float64 `json:"rope_theta"`
	PartialRotaryFactor *float64 `json:"partial_rotary_factor"`
	Factor              *float64 `json:"factor"`
}

// hfRopeParameters is config.json's rope_parameters: one set (Qwen3.5),
// or one per layer type (Gemma 4: keys "sliding_attention",
// "full_attention").
type hfRopeParameters struct {
	hfRope
	ByType map[string]hfRope
}

func (p *hfRopeParameters) UnmarshalJSON(b []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return err
	}
	for _, k := range []string{"sliding_attention", "full_attention"} {
		if raw, ok := top[k]; ok && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			if p.ByType == nil {
				p.ByType = map[string]hfRope{}
			}
			var r hfRope
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("rope_parameters.%s: %w", k, err)
			}
			p.ByType[k] = r
		}
	}
	return json.Unmarshal(b, &p.hfRope)
}

// fillGemma4 reads a Gemma4TextConfig (see the file comment). fillArch's
// Gemma part has set the norms, GeGLU, the embedding scale, the final
// soft-cap, the window and layer_types' windowed layers.
func (hc *hfConfig) fillGemma4(c *Config) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("model: config.json: gemma4: "+format, args...)
	}
	if a := hc.HiddenActivation; a != "" && a != "gelu_pytorch_tanh" {
		return bad("hidden_activation %q is not supported (llama.cpp's graph runs gelu_pytorch_tanh)", a)
	}
	if hc.AttentionBias {
		return bad("attention_bias true is not supported (llama.cpp's gemma4 graph has no attention biases)")
	}
	if b := hc.UseBidirectionalAttn; b != nil && *b == "all" {
		return bad("use_bidirectional_attention \"all\" is not a causal language model")
	}
	if hc.HeadDim == nil {
		return bad("needs head_dim (the windowed layers' head width)")
	}
	swaDim := *hc.HeadDim
	globalDim, globalKV := 0, 0
	if hc.GlobalHeadDim != nil {
		globalDim = *hc.GlobalHeadDim
	}
	if hc.AttentionKEqV && hc.NumGlobalKVHeads != nil {
		globalKV = *hc.NumGlobalKVHeads
	}
	// Newer configs carry the global layers' overrides per layer instead.
	for idx, raw := range hc.PerLayerConfig {
		l, err := strconv.Atoi(idx)
		if err != nil || l < 0 || l >= len(hc.LayerTypes) || hc.LayerTypes[l] != "full_attention" {
			continue
		}
		var o struct {
			HeadDim    *int `json:"head_dim"`
			NumKVHeads *int `json:"num_key_value_heads"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return bad("per_layer_config[%s]: %v", idx, err)
		}
		if o.HeadDim != nil && globalDim == 0 {
			globalDim = *o.HeadDim
		}
		if o.NumKVHeads != nil && globalKV == 0 {
			globalKV = *o.NumKVHeads
		}
	}
	if globalDim <= 0 || swaDim <= 0 {
		return bad("needs global_head_dim (or per_layer_config's head_dim for a full_attention layer) and head_dim, have %d and %d", globalDim, swaDim)
	}
	c.HeadDim, c.HeadDimSWA = globalDim, swaDim
	if globalKV > 0 && globalKV != c.KVHeads {
		c.KVHeads, c.KVHeadsSWA = globalKV, c.KVHeads
	}
	c.AttnScale, c.VNorm, c.AttnSoftcap = 1, true, 0
	if hc.TieWordEmbeddings == nil {
		c.Tied = true // Gemma4TextConfig ties by default
	}
	if c.ContextLen == 0 {
		c.ContextLen = 131072
	}

	// Windowed layers: layer_types, else transformers' default (every 6th
	// global); the last layer is always global (Gemma4TextConfig).
	if len(hc.LayerTypes) != 0 && len(hc.LayerTypes) != c.Layers {
		return bad("layer_types has %d entries for %d layers", len(hc.LayerTypes), c.Layers)
	}
	if c.Layers > 0 {
		c.SWALayers[c.Layers-1] = false
	}
	if hc.SlidingWindow == nil {
		c.SlidingWindow = 512 // Gemma4TextConfig's default
	}

	// RoPE per layer type.
	swa, full := hfRope{RopeType: "default"}, hfRope{RopeType: "proportional"}
	if rp := hc.RopeParameters; rp != nil {
		if r, ok := rp.ByType["sliding_attention"]; ok {
			swa = r
		}
		if r, ok := rp.ByType["full_attention"]; ok {
			full = r
		}
	}
	c.RopeThetaSWA, c.RopeTheta = 10000, 1e6 // Gemma4TextConfig's defaults
	if swa.RopeTheta != nil {
		c.RopeThetaSWA = *swa.RopeTheta
	}
	if full.RopeTheta != nil {
		c.RopeTheta = *full.RopeTheta
	}
	if swa.RopeType != "default" || swa.Factor != nil && *swa.Factor != 1 {
		return bad("rope_parameters.sliding_attention: rope_type %q is not supported (want default)", swa.RopeType)
	}
	if full.RopeType != "proportional" || full.Factor != nil && *full.Factor != 1 {
		return bad("rope_parameters.full_attention: rope_type %q with factor %v is not supported (llama.cpp's converter requires proportional, factor 1)", full.RopeType, full.Factor)
	}
	hc.gemma4FullRopeFraction = 0.25 // Gemma4TextConfig's default
	if full.PartialRotaryFactor != nil {
		hc.gemma4FullRopeFraction = *full.PartialRotaryFactor
	}
	if f := hc.gemma4FullRopeFraction; f <= 0 || f > 1 {
		return bad("rope_parameters.full_attention.partial_rotary_factor %g is out of (0, 1]", f)
	}
	c.RopeDim, c.RopeDimSWA, c.RopeNeox = globalDim, swaDim, true

	// Shared-KV layers, their double-wide MLPs, per-layer inputs.
	c.SharedKVLayers = hc.NumKVSharedLayers
	if hc.UseDoubleWideMLP && c.SharedKVLayers > 0 {
		c.FFNLengths = make([]int, c.Layers)
		for l := range c.FFNLengths {
			c.FFNLengths[l] = c.HiddenDim
			if l >= c.Layers-c.SharedKVLayers {
				c.FFNLengths[l] = 2 * c.HiddenDim
			}
		}
		c.HiddenDim *= 2
	}
	if p := hc.HiddenSizePerLayer; p != nil {
		c.PerLayerDim = *p
	}

	// The mixture of experts (26B-A4B).
	c.Experts, c.ExpertsUsed, c.ExpertHiddenDim = 0, 0, 0
	if hc.EnableMoEBlock {
		if hc.NumExperts == nil || *hc.NumExperts <= 0 || hc.TopKExperts <= 0 || hc.MoEIntermediateSize <= 0 {
			return bad("enable_moe_block needs num_experts, top_k_experts and moe_intermediate_size")
		}
		c.Experts, c.ExpertsUsed, c.ExpertHiddenDim = *hc.NumExperts, hc.TopKExperts, hc.MoEIntermediateSize
	}
	return nil
}

// gemma4RopeFreqs are the global layers' per-pair divisors as llama.cpp's
// converter writes them (Gemma4Model.generate_extra_tensors): 1 for the
// int(global_head_dim·p/2) rotated pairs, 1e30 (no rotation) for the rest.
func gemma4RopeFreqs(c *Config, fraction float64) []float32 {
	n := c.RopeDim / 2
	rot := int(float64(c.RopeDim) * fraction / 2)
	f := make([]float32, n)
	for i := range f {
		f[i] = 1
		if i >= rot {
			f[i] = 1e30
		}
	}
	return f
}
