package hfwrite

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"nanoserve/gguf"
	"nanoserve/safetensors"
	"nanoserve/tensor"
)

// Qwen35FromGGUF writes a Qwen3.5 checkpoint from a qwen35 (or qwen35moe:
// Qwen3_5Moe*, mlp.gate, mlp.experts.N.{gate,up,down}_proj,
// mlp.shared_expert.*, mlp.shared_expert_gate) GGUF, undoing
// llama.cpp's conversion from transformers' modeling_qwen3_5.py
// conventions: model.layers.N.linear_attn.{in_proj_qkv, in_proj_z,
// in_proj_b, in_proj_a, conv1d (channels, 1, d_conv), dt_bias, A_log,
// norm, out_proj} in the linear-attention layers, self_attn.{q,k,v,o}_proj
// and {q,k}_norm in the others, input_layernorm, post_attention_layernorm,
// mlp.{gate,up,down}_proj; RMSNorm gains stored as w − 1 (Qwen3.5 scales by
// 1 + w) except linear_attn.norm; A_log = log(−ssm_a); value heads grouped
// by key head (llama.cpp tiles them). vl writes the vision-language layout
// instead: Qwen3_5ForConditionalGeneration, the settings in text_config,
// the tensors under model.language_model.
func Qwen35FromGGUF(path, dir string, vl bool) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	a := f.Arch()
	if a != "qwen35" && a != "qwen35moe" {
		return fmt.Errorf("hfwrite: %s is %q, not qwen35 or qwen35moe", path, a)
	}
	moe := a == "qwen35moe"
	u := func(k string) int { v, _ := f.Uint(a + "." + k); return int(v) }
	fl := func(k string) float64 { v, _ := f.Float(a + "." + k); return v }
	layers := u("block_count")
	rv, _ := f.Get(a + ".attention.recurrent_layers")
	arr, ok := rv.Array()
	if !ok || arr.Len() != layers {
		return fmt.Errorf("hfwrite: %s.attention.recurrent_layers is not %d flags", a, layers)
	}
	types := make([]string, layers)
	for i := range layers {
		types[i] = "full_attention"
		if b, _ := arr.Index(i).Bool(); b {
			types[i] = "linear_attention"
		}
	}
	hd := u("attention.key_length")
	nk, nv, d := u("ssm.group_count"), u("ssm.time_step_rank"), u("ssm.state_size")
	emb, _ := f.Tensor("token_embd.weight")
	_, hasOutput := f.Tensor("output.weight")
	text := map[string]any{
		"model_type": "qwen3_5_text", "hidden_size": u("embedding_length"), "intermediate_size": u("feed_forward_length"),
		"num_hidden_layers": layers, "num_attention_heads": u("attention.head_count"), "num_key_value_heads": u("attention.head_count_kv"),
		"head_dim": hd, "max_position_embeddings": u("context_length"), "rms_norm_eps": fl("attention.layer_norm_rms_epsilon"),
		"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": fl("rope.freq_base"),
			"partial_rotary_factor": float64(u("rope.dimension_count")) / float64(hd)},
		"layer_types": types, "linear_conv_kernel_dim": u("ssm.conv_kernel"), "linear_key_head_dim": d, "linear_value_head_dim": d,
		"linear_num_key_heads": nk, "linear_num_value_heads": nv, "vocab_size": emb.Rows(), "tie_word_embeddings": !hasOutput,
	}
	class, vlClass, vlType := "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "qwen3_5"
	if moe {
		class, vlClass, vlType = "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe"
		text["model_type"] = "qwen3_5_moe_text"
		text["num_experts"], text["num_experts_per_tok"] = u("expert_count"), u("expert_used_count")
		text["moe_intermediate_size"], text["shared_expert_intermediate_size"] = u("expert_feed_forward_length"), u("expert_shared_feed_forward_length")
		text["intermediate_size"], text["norm_topk_prob"] = u("expert_feed_forward_length"), true
	}
	cfg := text
	cfg["architectures"] = []string{class}
	if vl {
		cfg = map[string]any{"architectures": []string{vlClass}, "model_type": vlType,
			"text_config": text, "tie_word_embeddings": !hasOutput}
		delete(text, "architectures")
	}
	// inv[h] is where GGUF value head h goes among transformers' grouped
	// heads: head s·n_k + k of llama.cpp is head k·r + s of transformers.
	rep := nv / nk
	inv := make([]int, nv)
	for h := range inv {
		inv[h] = (h%nk)*rep + h/nk
	}
	names := map[string]string{
		"attn_norm.weight": "input_layernorm.weight", "post_attention_norm.weight": "post_attention_layernorm.weight",
		"attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
		"attn_output.weight": "self_attn.o_proj.weight", "attn_q_norm.weight": "self_attn.q_norm.weight", "attn_k_norm.weight": "self_attn.k_norm.weight",
		"attn_qkv.weight": "linear_attn.in_proj_qkv.weight", "attn_gate.weight": "linear_attn.in_proj_z.weight",
		"ssm_beta.weight": "linear_attn.in_proj_b.weight", "ssm_alpha.weight": "linear_attn.in_proj_a.weight",
		"ssm_conv1d.weight": "linear_attn.conv1d.weight", "ssm_dt.bias": "linear_attn.dt_bias", "ssm_a": "linear_attn.A_log",
		"ssm_norm.weight": "linear_attn.norm.weight", "ssm_out.weight": "linear_attn.out_proj.weight",
		"ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight",
		// qwen35moe: the router, the shared expert and its gate; the
		// experts (ffn_*_exps) are split below.
		"ffn_gate_inp.weight": "mlp.gate.weight", "ffn_gate_inp_shexp.weight": "mlp.shared_expert_gate.weight",
		"ffn_gate_shexp.weight": "mlp.shared_expert.gate_proj.weight", "ffn_up_shexp.weight": "mlp.shared_expert.up_proj.weight",
		"ffn_down_shexp.weight": "mlp.shared_expert.down_proj.weight",
	}
	expertNames := map[string]string{"ffn_gate_exps.weight": "gate_proj", "ffn_up_exps.weight": "up_proj", "ffn_down_exps.weight": "down_proj"}
	model := "model."
	if vl {
		model = "model.language_model."
	}
	var ts []safetensors.Tensor
	for _, t := range f.Tensors {
		var name, suffix string
		switch t.Name {
		case "token_embd.weight":
			name = model + "embed_tokens.weight"
		case "output_norm.weight":
			name, suffix = model+"norm.weight", "output_norm.weight"
		case "output.weight":
			name = "lm_head.weight"
		default:
			rest, _ := strings.CutPrefix(t.Name, "blk.")
			layer, s, _ := strings.Cut(rest, ".")
			if proj, ok := expertNames[s]; ok && len(t.Dims) == 3 {
				// One (rows, cols) tensor per expert, transformers' names.
				rows, cols, e := int(t.Dims[1]), int(t.Dims[0]), int(t.Dims[2])
				dt := stDType[t.Type]
				if dt == "" || len(t.Data)%e != 0 {
					return fmt.Errorf("hfwrite: tensor %s has type %s (want a float type)", t.Name, t.Type)
				}
				per := len(t.Data) / e
				for x := range e {
					ts = append(ts, safetensors.Tensor{Name: fmt.Sprintf("%slayers.%s.mlp.experts.%d.%s.weight", model, layer, x, proj),
						DType: dt, Shape: []int{rows, cols}, Data: slices.Clone(t.Data[x*per : (x+1)*per])})
				}
				continue
			}
			hf, ok := names[s]
			if !ok {
				return fmt.Errorf("hfwrite: %s tensor %s", a, t.Name)
			}
			name, suffix = model+"layers."+layer+"."+hf, s
		}
		dt := stDType[t.Type]
		if dt == "" {
			return fmt.Errorf("hfwrite: tensor %s has type %s (want a float type)", t.Name, t.Type)
		}
		shape := hfShape(t.Dims)
		data := slices.Clone(t.Data)
		rowBytes := len(data) / shape[0] // a vector's: one element
		switch suffix {
		case "attn_norm.weight", "post_attention_norm.weight", "attn_q_norm.weight", "attn_k_norm.weight", "output_norm.weight", "ssm_a":
			if t.Type != tensor.F32 {
				return fmt.Errorf("hfwrite: %s is %s, want F32", t.Name, t.Type)
			}
			v := tensor.BytesF32(data)
			for i, x := range v {
				if suffix == "ssm_a" {
					v[i] = float32(math.Log(-float64(x)))
				} else {
					v[i] = x - 1
				}
			}
		}
		if nk != nv {
			switch suffix {
			case "attn_qkv.weight":
				data = ungroup(data, 2*nk*d, d, rowBytes, inv)
			case "ssm_conv1d.weight":
				data = ungroup(data, 2*nk*d, d, rowBytes, inv)
			case "attn_gate.weight":
				data = ungroup(data, 0, d, rowBytes, inv)
			case "ssm_beta.weight", "ssm_alpha.weight", "ssm_dt.bias", "ssm_a":
				data = ungroup(data, 0, 1, rowBytes, inv)
			case "ssm_out.weight":
				es := rowBytes / shape[1]
				for r := range shape[0] {
					row := data[r*rowBytes : (r+1)*rowBytes]
					copy(row, ungroup(slices.Clone(row), 0, d, es, inv))
				}
			}
		}
		if suffix == "ssm_conv1d.weight" {
			shape = []int{shape[0], 1, shape[1]}
		}
		if suffix == "ffn_gate_inp_shexp.weight" {
			shape = []int{1, shape[0]} // nn.Linear(dim, 1)
		}
		ts = append(ts, safetensors.Tensor{Name: name, DType: dt, Shape: shape, Data: data})
	}
	return writeCheckpoint(dir, cfg, ts)
}

// ungroup moves, from row off on, block h of blk rows (rowBytes each) to
// block inv[h].
func ungroup(data []byte, off, blk, rowBytes int, inv []int) []byte {
	out := slices.Clone(data)
	for h, dst := range inv {
		copy(out[(off+dst*blk)*rowBytes:(off+(dst+1)*blk)*rowBytes], data[(off+h*blk)*rowBytes:(off+(h+1)*blk)*rowBytes])
	}
	return out
}
