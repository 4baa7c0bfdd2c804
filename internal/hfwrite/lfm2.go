package hfwrite

import (
	"fmt"
	"strings"

	"nanoserve/gguf"
	"nanoserve/safetensors"
)

// LFM2FromGGUF writes an LFM2 checkpoint (Lfm2ForCausalLM) from an lfm2
// GGUF, or an LFM2-MoE one (Lfm2MoeForCausalLM) from an lfm2moe GGUF,
// from transformers' modeling_lfm2.py / modeling_lfm2_moe.py conventions:
// model.embed_tokens, model.layers.N.operator_norm (the mixer's input
// norm), conv.in_proj / conv.conv (a Conv1d kernel (dim, 1, L)) /
// conv.out_proj in the convolution layers, self_attn.{q,k,v}_proj,
// self_attn.out_proj, self_attn.{q,k}_layernorm in the attention layers,
// ffn_norm, feed_forward.w1 (gate) / w3 (up) / w2 (down),
// model.embedding_norm (the final norm); config.json layer_types "conv" /
// "full_attention", conv_L_cache, and for lfm2 block_ff_dim with
// block_auto_adjust_ff_dim false. An lfm2moe file's sparse layers become
// Lfm2MoeSparseMoeBlock's feed_forward.gate (the router),
// feed_forward.expert_bias (exp_probs_b) and
// feed_forward.experts.E.w1/w3/w2 (slab E of ffn_{gate,up,down}_exps);
// config.json has num_dense_layers dense layers of intermediate_size,
// num_experts, num_experts_per_tok, moe_intermediate_size,
// use_expert_bias and norm_topk_prob true, routed_scaling_factor 1
// (llama.cpp's σ-gated, renormalised routing).
func LFM2FromGGUF(path, dir string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	arch := f.Arch()
	if arch != "lfm2" && arch != "lfm2moe" {
		return fmt.Errorf("hfwrite: %s is %q, not lfm2 or lfm2moe", path, arch)
	}
	u := func(k string) int { v, _ := f.Uint(arch + "." + k); return int(v) }
	layers := u("block_count")
	kv, ok := f.Get(arch + ".attention.head_count_kv")
	arr, isArr := kv.Array()
	if !ok || !isArr || arr.Len() != layers {
		return fmt.Errorf("hfwrite: %s.attention.head_count_kv is not a per-layer array", arch)
	}
	types := make([]string, layers)
	kvHeads := 0
	for i := range layers {
		n, _ := arr.Index(i).Uint()
		types[i] = "full_attention"
		if n == 0 {
			types[i] = "conv"
		} else {
			kvHeads = int(n)
		}
	}
	eps, _ := f.Float(arch + ".attention.layer_norm_rms_epsilon")
	theta, _ := f.Float(arch + ".rope.freq_base")
	emb, _ := f.Tensor("token_embd.weight")
	_, hasOutput := f.Tensor("output.weight")
	cfg := map[string]any{
		"architectures": []string{"Lfm2ForCausalLM"}, "model_type": "lfm2",
		"hidden_size": u("embedding_length"), "num_hidden_layers": layers, "num_attention_heads": u("attention.head_count"),
		"num_key_value_heads": kvHeads, "max_position_embeddings": u("context_length"), "norm_eps": eps, "rope_theta": theta,
		"conv_L_cache": u("shortconv.l_cache"), "conv_bias": false, "intermediate_size": u("feed_forward_length"),
		"layer_types": types, "vocab_size": emb.Rows(), "tie_word_embeddings": !hasOutput,
	}
	names := map[string]string{
		"attn_norm.weight": "operator_norm.weight", "ffn_norm.weight": "ffn_norm.weight",
		"attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
		"attn_output.weight": "self_attn.out_proj.weight", "attn_q_norm.weight": "self_attn.q_layernorm.weight",
		"attn_k_norm.weight": "self_attn.k_layernorm.weight", "shortconv.in_proj.weight": "conv.in_proj.weight",
		"shortconv.conv.weight": "conv.conv.weight", "shortconv.out_proj.weight": "conv.out_proj.weight",
		"ffn_gate.weight": "feed_forward.w1.weight", "ffn_up.weight": "feed_forward.w3.weight", "ffn_down.weight": "feed_forward.w2.weight",
	}
	if arch == "lfm2" {
		cfg["block_ff_dim"], cfg["block_auto_adjust_ff_dim"] = u("feed_forward_length"), false
	} else {
		if g := u("expert_gating_func"); g != 2 {
			return fmt.Errorf("hfwrite: %s: lfm2moe.expert_gating_func %d, Lfm2MoeForCausalLM is σ-gated (2)", path, g)
		}
		cfg["architectures"], cfg["model_type"] = []string{"Lfm2MoeForCausalLM"}, "lfm2_moe"
		cfg["num_dense_layers"], cfg["num_experts"], cfg["num_experts_per_tok"] = u("leading_dense_block_count"), u("expert_count"), u("expert_used_count")
		cfg["moe_intermediate_size"], cfg["use_expert_bias"] = u("expert_feed_forward_length"), true
		cfg["norm_topk_prob"], cfg["routed_scaling_factor"] = true, 1.0
		names["ffn_gate_inp.weight"] = "feed_forward.gate.weight"
		names["exp_probs_b.bias"] = "feed_forward.expert_bias"
		names["ffn_gate_exps.weight"] = "feed_forward.experts.{xid}.w1.weight"
		names["ffn_up_exps.weight"] = "feed_forward.experts.{xid}.w3.weight"
		names["ffn_down_exps.weight"] = "feed_forward.experts.{xid}.w2.weight"
	}
	var ts []safetensors.Tensor
	for _, t := range f.Tensors {
		var name string
		switch t.Name {
		case "token_embd.weight":
			name = "model.embed_tokens.weight"
		case "token_embd_norm.weight":
			name = "model.embedding_norm.weight"
		case "output.weight":
			name = "lm_head.weight"
		default:
			rest, _ := strings.CutPrefix(t.Name, "blk.")
			layer, suffix, _ := strings.Cut(rest, ".")
			hf, ok := names[suffix]
			if !ok {
				return fmt.Errorf("hfwrite: %s tensor %s", arch, t.Name)
			}
			name = "model.layers." + layer + "." + hf
		}
		dt := stDType[t.Type]
		if dt == "" {
			return fmt.Errorf("hfwrite: tensor %s has type %s (want a float type)", t.Name, t.Type)
		}
		shape := hfShape(t.Dims)
		if strings.HasSuffix(t.Name, "shortconv.conv.weight") {
			shape = []int{shape[0], 1, shape[1]} // Conv1d(dim, dim, L, groups=dim) weight
			ts = append(ts, safetensors.Tensor{Name: name, DType: dt, Shape: shape, Data: append([]byte(nil), t.Data...)})
			continue
		}
		ts = append(ts, splitExperts(name, dt, shape, append([]byte(nil), t.Data...))...)
	}
	return writeCheckpoint(dir, cfg, ts)
}
