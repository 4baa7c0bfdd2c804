package hfwrite

import (
	"fmt"
	"slices"
	"strings"

	"nanoserve/gguf"
	"nanoserve/safetensors"
	"nanoserve/tensor"
)

// Gemma4FromGGUF writes a Gemma 4 checkpoint from a gemma4 GGUF, undoing
// llama.cpp's conversion (conversion/gemma.py Gemma4Model) from
// transformers' conventions (modeling_gemma4.py, configuration_gemma4.py),
// not from the llamacpp name table the loader under test uses:
//
//   - Gemma4TextModel: embed_tokens, embed_tokens_per_layer (vocab,
//     layers·P), per_layer_model_projection (layers·P, hidden),
//     per_layer_projection_norm, norm; Gemma4ForCausalLM: lm_head (absent
//     when tied);
//   - Gemma4TextDecoderLayer N: input_layernorm, self_attn.{q,k,v,o}_proj,
//     self_attn.{q,k}_norm (v_norm has no weight), post_attention_layernorm,
//     pre_feedforward_layernorm, mlp.{gate,up,down}_proj,
//     post_feedforward_layernorm, per_layer_input_gate (P, hidden),
//     per_layer_projection (hidden, P), post_per_layer_input_norm and the
//     layer_scalar buffer (1); with enable_moe_block also router.proj
//     (experts, hidden), router.scale (hidden), router.per_expert_scale
//     (experts; ones where the GGUF has no ffn_down_exps.scale),
//     experts.gate_up_proj (experts, 2·ffn, hidden: gate rows then up rows,
//     Gemma4TextExperts' chunk(2); the GGUF's fused ffn_gate_up_exps as it
//     is, or its ffn_gate_exps and ffn_up_exps joined per expert),
//     experts.down_proj (experts, hidden, ffn), pre_feedforward_layernorm_2,
//     post_feedforward_layernorm_1 and _2;
//   - norms as stored: Gemma4RMSNorm multiplies by its weight (the
//     converter adds nothing);
//   - rope_freqs (1s then 1e30s over the global head's pairs) becomes
//     rope_parameters.full_attention's proportional partial_rotary_factor
//     = 2·(number of 1s)/global_head_dim;
//   - the shared-KV layers' k_proj, v_proj and k_norm are written when the
//     GGUF has them (real checkpoints carry them; transformers ignores
//     them on load).
//
// vl writes Gemma4ForConditionalGeneration instead: the settings in
// text_config, the tensors under model.language_model. (no vision or
// audio tower). No tokenizer is written.
func Gemma4FromGGUF(path, dir string, vl bool) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Arch() != "gemma4" {
		return fmt.Errorf("hfwrite: %s is %q, not gemma4", path, f.Arch())
	}
	text, err := gemma4Config(f)
	if err != nil {
		return err
	}
	_, hasOutput := f.Tensor("output.weight")
	cfg := text
	cfg["architectures"] = []string{"Gemma4ForCausalLM"}
	prefix := "model."
	if vl {
		cfg = map[string]any{"architectures": []string{"Gemma4ForConditionalGeneration"}, "model_type": "gemma4",
			"text_config": text, "tie_word_embeddings": !hasOutput}
		delete(text, "architectures")
		prefix = "model.language_model."
	}
	ts, err := gemma4Tensors(f, prefix)
	if err != nil {
		return err
	}
	return writeCheckpoint(dir, cfg, ts)
}

// gemma4Config is the Gemma4TextConfig of a gemma4 GGUF.
func gemma4Config(f *gguf.File) (map[string]any, error) {
	a := "gemma4."
	u := func(k string) int { v, _ := f.Uint(a + k); return int(v) }
	fl := func(k string) float64 { v, _ := f.Float(a + k); return v }
	layers := u("block_count")
	swaFlags, err := f.Array(a + "attention.sliding_window_pattern")
	if err != nil || swaFlags.Len() != layers {
		return nil, fmt.Errorf("hfwrite: gemma4 needs attention.sliding_window_pattern with %d flags", layers)
	}
	types := make([]string, layers)
	swa := make([]bool, layers)
	for l := range types {
		swa[l], _ = swaFlags.Index(l).Bool()
		types[l] = "full_attention"
		if swa[l] {
			types[l] = "sliding_attention"
		}
	}
	shared := u("attention.shared_kv_layers")
	// Feed-forward widths: one, or one per layer with the shared-KV
	// layers double (use_double_wide_mlp).
	ffn, double := u("feed_forward_length"), false
	if ff, err := f.Int32s(a + "feed_forward_length"); err == nil {
		ffn = int(ff[0])
		for l, v := range ff {
			switch {
			case int(v) == ffn:
			case l >= layers-shared && int(v) == 2*ffn:
				double = true
			default:
				return nil, fmt.Errorf("hfwrite: gemma4 feed_forward_length %v is not intermediate_size with double-wide shared layers", ff)
			}
		}
	}
	// KV heads: a scalar, or per layer (global layers' own count).
	kvSWA, kvGlobal := u("attention.head_count_kv"), 0
	if kv, err := f.Int32s(a + "attention.head_count_kv"); err == nil {
		kvSWA, kvGlobal = -1, -1
		for l, v := range kv {
			if swa[l] {
				kvSWA = int(v)
			} else {
				kvGlobal = int(v)
			}
		}
	}
	globalHD, swaHD := u("attention.key_length"), u("attention.key_length_swa")
	// attention_k_eq_v: global layers with no attn_v (values = keys).
	kEqV := false
	for l := range layers {
		if _, ok := f.Tensor(fmt.Sprintf("blk.%d.attn_v.weight", l)); !ok && !swa[l] && l < layers-shared {
			kEqV = true
		}
	}
	if kvGlobal > 0 && kvGlobal != kvSWA && !kEqV {
		return nil, fmt.Errorf("hfwrite: gemma4 global layers with their own KV heads but an attn_v have no transformers form")
	}
	// Proportional RoPE of the global layers from rope_freqs.
	rf, ok := f.Tensor("rope_freqs.weight")
	if !ok || rf.Type != tensor.F32 || int(rf.Elements()) != globalHD/2 {
		return nil, fmt.Errorf("hfwrite: gemma4 needs rope_freqs.weight (%d F32)", globalHD/2)
	}
	ones := 0
	for i, v := range tensor.BytesF32(rf.Data) {
		if v == 1 && ones == i {
			ones++
		} else if v < 1e29 {
			return nil, fmt.Errorf("hfwrite: rope_freqs[%d] = %g is neither 1 nor ~1e30", i, v)
		}
	}
	emb, _ := f.Tensor("token_embd.weight")
	_, hasOutput := f.Tensor("output.weight")
	softcap := any(nil)
	if v := fl("final_logit_softcapping"); v != 0 {
		softcap = v
	}
	text := map[string]any{
		"model_type": "gemma4_text", "hidden_size": u("embedding_length"), "intermediate_size": ffn,
		"num_hidden_layers": layers, "num_attention_heads": u("attention.head_count"), "num_key_value_heads": kvSWA,
		"head_dim": swaHD, "global_head_dim": globalHD, "max_position_embeddings": u("context_length"),
		"rms_norm_eps": fl("attention.layer_norm_rms_epsilon"), "hidden_activation": "gelu_pytorch_tanh",
		"rope_parameters": map[string]any{
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": fl("rope.freq_base_swa")},
			"full_attention": map[string]any{"rope_type": "proportional", "rope_theta": fl("rope.freq_base"),
				"partial_rotary_factor": float64(2*ones) / float64(globalHD)},
		},
		"sliding_window": u("attention.sliding_window"), "layer_types": types, "final_logit_softcapping": softcap,
		"vocab_size": emb.Rows(), "vocab_size_per_layer_input": emb.Rows(),
		"hidden_size_per_layer_input": u("embedding_length_per_layer_input"), "num_kv_shared_layers": shared,
		"use_double_wide_mlp": double, "attention_k_eq_v": kEqV, "attention_bias": false,
		"tie_word_embeddings": !hasOutput,
	}
	if kEqV {
		if kvGlobal <= 0 {
			kvGlobal = kvSWA
		}
		text["num_global_key_value_heads"] = kvGlobal
	}
	if e := u("expert_count"); e > 0 {
		text["enable_moe_block"], text["num_experts"] = true, e
		text["top_k_experts"], text["moe_intermediate_size"] = u("expert_used_count"), u("expert_feed_forward_length")
	}
	return text, nil
}

// gemma4Tensors renames (and, for the experts, joins) the GGUF's tensors.
func gemma4Tensors(f *gguf.File, prefix string) ([]safetensors.Tensor, error) {
	top := map[string]string{
		"token_embd.weight": "embed_tokens.weight", "per_layer_token_embd.weight": "embed_tokens_per_layer.weight",
		"per_layer_model_proj.weight": "per_layer_model_projection.weight",
		"per_layer_proj_norm.weight":  "per_layer_projection_norm.weight", "output_norm.weight": "norm.weight",
	}
	layer := map[string]string{
		"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
		"attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
		"attn_output.weight": "self_attn.o_proj.weight", "attn_q_norm.weight": "self_attn.q_norm.weight",
		"attn_k_norm.weight": "self_attn.k_norm.weight", "post_attention_norm.weight": "post_attention_layernorm.weight",
		"ffn_norm.weight": "pre_feedforward_layernorm.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
		"ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight",
		"post_ffw_norm.weight": "post_feedforward_layernorm.weight", "inp_gate.weight": "per_layer_input_gate.weight",
		"proj.weight": "per_layer_projection.weight", "post_norm.weight": "post_per_layer_input_norm.weight",
		"layer_output_scale.weight": "layer_scalar",
		"ffn_gate_inp.weight":       "router.proj.weight", "ffn_gate_inp.scale": "router.scale",
		"ffn_down_exps.scale":     "router.per_expert_scale",
		"ffn_gate_up_exps.weight": "experts.gate_up_proj", "ffn_down_exps.weight": "experts.down_proj",
		"pre_ffw_norm_2.weight":  "pre_feedforward_layernorm_2.weight",
		"post_ffw_norm_1.weight": "post_feedforward_layernorm_1.weight", "post_ffw_norm_2.weight": "post_feedforward_layernorm_2.weight",
	}
	var ts []safetensors.Tensor
	for i := range f.Tensors {
		t := &f.Tensors[i]
		var name string
		switch {
		case t.Name == "rope_freqs.weight":
			continue // config.json's rope_parameters
		case t.Name == "output.weight":
			name = "lm_head.weight"
		case top[t.Name] != "":
			name = prefix + top[t.Name]
		default:
			rest, ok := strings.CutPrefix(t.Name, "blk.")
			i := strings.IndexByte(rest, '.')
			if !ok || i <= 0 {
				return nil, fmt.Errorf("hfwrite: gemma4 tensor %s", t.Name)
			}
			suffix := rest[i+1:]
			if suffix == "ffn_gate_exps.weight" || suffix == "ffn_up_exps.weight" {
				if suffix == "ffn_up_exps.weight" {
					continue // joined with the gate below
				}
				gu, err := joinGateUp(f, t, "blk."+rest[:i]+".")
				if err != nil {
					return nil, err
				}
				ts = append(ts, safetensors.Tensor{Name: prefix + "layers." + rest[:i] + ".experts.gate_up_proj", DType: gu.DType, Shape: gu.Shape, Data: gu.Data})
				continue
			}
			hf := layer[suffix]
			if hf == "" {
				return nil, fmt.Errorf("hfwrite: gemma4 tensor %s", t.Name)
			}
			name = prefix + "layers." + rest[:i] + "." + hf
		}
		dt := stDType[t.Type]
		if dt == "" {
			return nil, fmt.Errorf("hfwrite: tensor %s has type %s (want a float type)", t.Name, t.Type)
		}
		shape := hfShape(t.Dims)
		ts = append(ts, safetensors.Tensor{Name: name, DType: dt, Shape: shape, Data: slices.Clone(t.Data)})
	}
	// Gemma4TextRouter always has per_expert_scale: ones where llama.cpp
	// has no ffn_down_exps.scale.
	for l := 0; ; l++ {
		gi, ok := f.Tensor(fmt.Sprintf("blk.%d.ffn_gate_inp.weight", l))
		if !ok {
			if _, more := f.Tensor(fmt.Sprintf("blk.%d.attn_norm.weight", l)); more {
				continue
			}
			break
		}
		if _, ok := f.Tensor(fmt.Sprintf("blk.%d.ffn_down_exps.scale", l)); !ok {
			ones := make([]float32, gi.Rows())
			for i := range ones {
				ones[i] = 1
			}
			ts = append(ts, safetensors.Tensor{Name: fmt.Sprintf("%slayers.%d.router.per_expert_scale", prefix, l), DType: "F32",
				Shape: []int{len(ones)}, Data: tensor.F32Bytes(ones)})
		}
	}
	return ts, nil
}

// joinGateUp makes experts.gate_up_proj (E, 2·ffn, hidden) from separate
// ffn_gate_exps and ffn_up_exps (ggml [hidden, ffn, E] each): expert e's
// gate rows, then its up rows.
func joinGateUp(f *gguf.File, gate *gguf.TensorInfo, blk string) (safetensors.Tensor, error) {
	up, ok := f.Tensor(blk + "ffn_up_exps.weight")
	if !ok || up.Type != gate.Type || !slices.Equal(up.Dims, gate.Dims) || len(gate.Dims) != 3 {
		return safetensors.Tensor{}, fmt.Errorf("hfwrite: %sffn_gate_exps without a matching ffn_up_exps", blk)
	}
	dt := stDType[gate.Type]
	if dt == "" {
		return safetensors.Tensor{}, fmt.Errorf("hfwrite: %sffn_gate_exps has type %s", blk, gate.Type)
	}
	E, ffn, hidden := int(gate.Dims[2]), int(gate.Dims[1]), int(gate.Dims[0])
	slab := len(gate.Data) / E
	var out []byte
	for e := range E {
		out = append(out, gate.Data[e*slab:(e+1)*slab]...)
		out = append(out, up.Data[e*slab:(e+1)*slab]...)
	}
	return safetensors.Tensor{DType: dt, Shape: []int{E, 2 * ffn, hidden}, Data: out}, nil
}
