package hfwrite

import (
	"fmt"
	"strings"

	"nanoserve/gguf"
	"nanoserve/safetensors"
)

// LFM2FromGGUF writes an LFM2 checkpoint (Lfm2ForCausalLM) from an lfm2
// GGUF, from transformers' modeling_lfm2.py conventions: model.embed_tokens,
// model.layers.N.operator_norm (the mixer's input norm), conv.in_proj /
// conv.conv (a Conv1d kernel (dim, 1, L)) / conv.out_proj in the
// convolution layers, self_attn.{q,k,v}_proj, self_attn.out_proj,
// self_attn.{q,k}_layernorm in the attention layers, ffn_norm,
// feed_forward.w1 (gate) / w3 (up) / w2 (down), model.embedding_norm (the
// final norm); config.json layer_types "conv" / "full_attention",
// conv_L_cache, block_ff_dim with block_auto_adjust_ff_dim false.
func LFM2FromGGUF(path, dir string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Arch() != "lfm2" {
		return fmt.Errorf("hfwrite: %s is %q, not lfm2", path, f.Arch())
	}
	u := func(k string) int { v, _ := f.Uint("lfm2." + k); return int(v) }
	layers := u("block_count")
	kv, ok := f.Get("lfm2.attention.head_count_kv")
	arr, isArr := kv.Array()
	if !ok || !isArr || arr.Len() != layers {
		return fmt.Errorf("hfwrite: lfm2.attention.head_count_kv is not a per-layer array")
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
	eps, _ := f.Float("lfm2.attention.layer_norm_rms_epsilon")
	theta, _ := f.Float("lfm2.rope.freq_base")
	emb, _ := f.Tensor("token_embd.weight")
	_, hasOutput := f.Tensor("output.weight")
	cfg := map[string]any{
		"architectures": []string{"Lfm2ForCausalLM"}, "model_type": "lfm2",
		"hidden_size": u("embedding_length"), "num_hidden_layers": layers, "num_attention_heads": u("attention.head_count"),
		"num_key_value_heads": kvHeads, "max_position_embeddings": u("context_length"), "norm_eps": eps, "rope_theta": theta,
		"conv_L_cache": u("shortconv.l_cache"), "conv_bias": false, "block_ff_dim": u("feed_forward_length"),
		"intermediate_size": u("feed_forward_length"), "block_auto_adjust_ff_dim": false, "layer_types": types,
		"vocab_size": emb.Rows(), "tie_word_embeddings": !hasOutput,
	}
	names := map[string]string{
		"attn_norm.weight": "operator_norm.weight", "ffn_norm.weight": "ffn_norm.weight",
		"attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
		"attn_output.weight": "self_attn.out_proj.weight", "attn_q_norm.weight": "self_attn.q_layernorm.weight",
		"attn_k_norm.weight": "self_attn.k_layernorm.weight", "shortconv.in_proj.weight": "conv.in_proj.weight",
		"shortconv.conv.weight": "conv.conv.weight", "shortconv.out_proj.weight": "conv.out_proj.weight",
		"ffn_gate.weight": "feed_forward.w1.weight", "ffn_up.weight": "feed_forward.w3.weight", "ffn_down.weight": "feed_forward.w2.weight",
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
				return fmt.Errorf("hfwrite: lfm2 tensor %s", t.Name)
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
		}
		ts = append(ts, safetensors.Tensor{Name: name, DType: dt, Shape: shape, Data: append([]byte(nil), t.Data...)})
	}
	return writeCheckpoint(dir, cfg, ts)
}
