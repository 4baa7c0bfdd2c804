// Package hfwrite writes a Hugging Face checkpoint directory (config.json
// and model.safetensors) holding the weights of a llama.cpp GGUF file, in
// the names and conventions transformers uses, for the parity tests of the
// Hugging Face loader and converter: the directory must give the GGUF's
// logits.
//
// It undoes llama.cpp's conversion without using the llamacpp package's
// name table (which the code under test uses), from the transformers
// modeling files:
//
//   - Names: modeling_llama.py / modeling_mistral.py / modeling_qwen3.py
//     (model.embed_tokens, model.layers.N.input_layernorm,
//     self_attn.{q,k,v,o}_proj, self_attn.{q,k}_norm (Qwen3RMSNorm),
//     post_attention_layernorm, mlp.{gate,up,down}_proj, model.norm,
//     lm_head); modeling_mixtral.py (block_sparse_moe.gate,
//     block_sparse_moe.experts.E.w1/w2/w3: w2(silu(w1·x) ⊙ w3·x));
//     modeling_qwen3_moe.py (mlp.gate, mlp.experts.E.{gate,up,down}_proj);
//     modeling_gemma2.py / modeling_gemma3.py (post_attention_layernorm is
//     the norm after attention, pre_feedforward_layernorm and
//     post_feedforward_layernorm around the MLP); modeling_phi3.py
//     (self_attn.qkv_proj rows Q, K, V; mlp.gate_up_proj: gate, up =
//     chunk(2), gate first).
//   - Llama/Mixtral Q/K rows: transformers rotates halves (rotate_half);
//     llama.cpp's converter permuted each head's rows to interleaved pairs
//     (row 2j+a of a head came from row a·d/2+j), so they are permuted
//     back. Qwen3, Gemma and Phi-3 are NEOX in llama.cpp: rows as they are.
//   - Gemma 2/3 norms: GemmaRMSNorm multiplies by (1 + weight), llama.cpp
//     stores 1 + weight, so weight = stored − 1.
//   - Experts: llama.cpp's 3-D ffn_*_exps tensors are split into one 2-D
//     tensor per expert (slab e is expert e); gpt-oss's are fused back
//     into its release's layout (gptoss.go).
//
// The architectures whose checkpoints differ more have their own writers:
// LFM2FromGGUF (lfm2.go: lfm2 and lfm2moe), Qwen35FromGGUF (qwen35.go:
// the hybrid's linear-attention layers) and Gemma4FromGGUF (gemma4.go:
// norms as stored, proportional RoPE in config.json); the last two write
// the vision-language layout too. dir.go writes a directory's files and edits
// a written one (SetConfig, DropTensors, SentencePieceTokenizer).
package hfwrite

import (
	"fmt"
	"strconv"
	"strings"

	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/safetensors"
	"nanoserve/tensor"
)

// FromGGUF writes dir/config.json and dir/model.safetensors from the GGUF
// file at path (architectures llama with or without experts, qwen2, qwen3,
// qwen3moe, gemma2, gemma3, phi3, smollm3, gpt-oss).
func FromGGUF(path, dir string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lf, cfg := readLlama(f)
	arch, u, fl, heads, kvHeads, hd, experts := lf.arch, lf.u, lf.fl, lf.heads, lf.kvHeads, lf.hd, lf.experts
	class, modelType := "", arch
	switch arch {
	case "llama":
		class = "LlamaForCausalLM"
		if experts > 0 { // MixtralConfig
			class, modelType = "MixtralForCausalLM", "mixtral"
			cfg["num_local_experts"], cfg["num_experts_per_tok"] = experts, u("expert_used_count")
		}
	case "qwen2":
		class = "Qwen2ForCausalLM"
	case "qwen3":
		class = "Qwen3ForCausalLM"
	case "qwen3moe": // Qwen3MoeConfig
		class, modelType = "Qwen3MoeForCausalLM", "qwen3_moe"
		cfg["num_experts"], cfg["num_experts_per_tok"] = experts, u("expert_used_count")
		cfg["moe_intermediate_size"], cfg["norm_topk_prob"] = u("expert_feed_forward_length"), true
	case "gemma2": // Gemma2Config; llama.cpp scales queries by 1/√head_dim
		class = "Gemma2ForCausalLM"
		cfg["query_pre_attn_scalar"], cfg["hidden_activation"] = hd, "gelu_pytorch_tanh"
		cfg["attn_logit_softcapping"], _ = fl("attn_logit_softcapping")
		cfg["final_logit_softcapping"], _ = fl("final_logit_softcapping")
		cfg["sliding_window"] = u("attention.sliding_window")
	case "gemma3": // Gemma3TextConfig
		class, modelType = "Gemma3ForCausalLM", "gemma3_text"
		cfg["query_pre_attn_scalar"], cfg["hidden_activation"] = hd, "gelu_pytorch_tanh"
		cfg["sliding_window"], cfg["sliding_window_pattern"] = u("attention.sliding_window"), 6
		if b, ok := fl("rope.freq_base_swa"); ok {
			cfg["rope_local_base_freq"] = b
		}
		cfg["final_logit_softcapping"] = nil
	case "phi3": // Phi3Config
		class = "Phi3ForCausalLM"
		if o := u("rope.scaling.original_context_length"); o > 0 {
			cfg["original_max_position_embeddings"] = o
		}
		if rd := u("rope.dimension_count"); rd > 0 && rd != hd {
			cfg["partial_rotary_factor"] = float64(rd*heads) / float64(u("embedding_length"))
		}
		cfg["sliding_window"] = nil
	case "smollm3": // SmolLM3Config: RoPE on every layer but each 4th
		class = "SmolLM3ForCausalLM"
		nr := make([]int, u("block_count"))
		for l := range nr {
			if (l+1)%4 != 0 {
				nr[l] = 1
			}
		}
		cfg["no_rope_layers"], cfg["no_rope_layer_interval"], cfg["use_sliding_window"] = nr, 4, false
	case "gpt-oss":
		class, modelType = "GptOssForCausalLM", "gpt_oss"
		gptOssConfig(cfg, u, fl, experts)
	default:
		return fmt.Errorf("hfwrite: architecture %q", arch)
	}
	cfg["architectures"], cfg["model_type"] = []string{class}, modelType
	var ts []safetensors.Tensor
	if arch == "gpt-oss" {
		fused, err := gptOssExperts(f, u("block_count"))
		if err != nil {
			return err
		}
		ts = append(ts, fused...)
	}
	for _, t := range f.Tensors {
		if arch == "gpt-oss" && strings.Contains(t.Name, "_exps.") {
			continue // written fused above
		}
		out, err := convertTensor(arch, &t, heads, kvHeads, hd)
		if err != nil {
			return err
		}
		ts = append(ts, out...)
	}
	return writeCheckpoint(dir, cfg, ts)
}

// llamaFile is a Llama-family GGUF file's geometry and key readers.
type llamaFile struct {
	arch                        string
	u                           func(key string) int             // arch.key as an int (0 if absent)
	fl                          func(key string) (float64, bool) // arch.key as a float
	heads, kvHeads, hd, experts int
}

// readLlama reads f's geometry and the config.json fields every
// Llama-family class shares (LlamaConfig's names).
func readLlama(f *gguf.File) (*llamaFile, map[string]any) {
	arch := f.Arch()
	lf := &llamaFile{arch: arch}
	lf.u = func(k string) int { v, _ := f.Uint(arch + "." + k); return int(v) }
	lf.fl = func(k string) (float64, bool) { v, err := f.Float(arch + "." + k); return v, err == nil }
	u, fl := lf.u, lf.fl
	dim, heads := u("embedding_length"), u("attention.head_count")
	kvHeads := heads
	if v, err := f.Uint(arch + ".attention.head_count_kv"); err == nil {
		kvHeads = int(v)
	}
	hd := dim / heads
	if v, err := f.Uint(arch + ".attention.key_length"); err == nil {
		hd = int(v)
	}
	lf.heads, lf.kvHeads, lf.hd, lf.experts = heads, kvHeads, hd, u("expert_count")
	_, hasOutput := f.Tensor("output.weight")
	cfg := map[string]any{
		"hidden_size": dim, "intermediate_size": u("feed_forward_length"), "num_hidden_layers": u("block_count"),
		"num_attention_heads": heads, "num_key_value_heads": kvHeads, "head_dim": hd,
		"max_position_embeddings": u("context_length"), "tie_word_embeddings": !hasOutput,
	}
	if eps, ok := fl("attention.layer_norm_rms_epsilon"); ok {
		cfg["rms_norm_eps"] = eps
	}
	if th, ok := fl("rope.freq_base"); ok {
		cfg["rope_theta"] = th
	}
	emb, _ := f.Tensor("token_embd.weight")
	cfg["vocab_size"] = emb.Rows()
	return lf, cfg
}

// stDType is the safetensors dtype of the float GGUF types a checkpoint
// is written in ("" for any other: quantized tensors are not written).
var stDType = map[tensor.DType]string{tensor.F32: "F32", tensor.F16: "F16", tensor.BF16: "BF16"}

// hfShape is a GGUF tensor's dims as a safetensors shape: GGUF lists the
// innermost (column) dimension first, safetensors the outermost, so a
// (rows, cols) matrix has dims [cols rows] and shape [rows cols]; the
// bytes are the same.
func hfShape(dims []uint64) []int {
	shape := make([]int, len(dims))
	for i, d := range dims {
		shape[len(dims)-1-i] = int(d)
	}
	return shape
}

// convertTensor returns the Hugging Face tensor(s) for one GGUF tensor.
func convertTensor(arch string, t *gguf.TensorInfo, heads, kvHeads, hd int) ([]safetensors.Tensor, error) {
	name, err := hfName(arch, t.Name)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, nil
	}
	dt := stDType[t.Type]
	if dt == "" {
		return nil, fmt.Errorf("hfwrite: tensor %s has type %s (want a float type)", t.Name, t.Type)
	}
	shape := hfShape(t.Dims)
	data := append([]byte(nil), t.Data...)
	switch {
	case strings.Contains(arch, "gemma") && strings.HasSuffix(t.Name, "norm.weight"):
		if t.Type != tensor.F32 {
			return nil, fmt.Errorf("hfwrite: norm %s is %s", t.Name, t.Type)
		}
		v := tensor.BytesF32(data)
		for i := range v {
			v[i]--
		}
	case llamacpp.PermutesQK(arch) && (strings.HasSuffix(t.Name, "attn_q.weight") || strings.HasSuffix(t.Name, "attn_k.weight")):
		h := heads
		if strings.HasSuffix(t.Name, "attn_k.weight") {
			h = kvHeads
		}
		data = unpermute(data, h, hd, len(data)/shape[0])
	}
	return splitExperts(name, dt, shape, data), nil
}

// splitExperts is the Hugging Face tensor of name, or, for a 3-D expert
// tensor (E, rows, cols), one (rows, cols) tensor per expert, {xid} in
// name replaced by e for slab e.
func splitExperts(name, dt string, shape []int, data []byte) []safetensors.Tensor {
	if len(shape) != 3 {
		return []safetensors.Tensor{{Name: name, DType: dt, Shape: shape, Data: data}}
	}
	var out []safetensors.Tensor
	slab := len(data) / shape[0]
	for e := range shape[0] {
		out = append(out, safetensors.Tensor{Name: strings.Replace(name, "{xid}", strconv.Itoa(e), 1), DType: dt,
			Shape: shape[1:], Data: data[e*slab : (e+1)*slab]})
	}
	return out
}

// unpermute undoes llama.cpp's Q/K row permutation: in each head of hd
// rows, GGUF row 2j+a came from Hugging Face row a·hd/2+j.
func unpermute(data []byte, heads, hd, rowBytes int) []byte {
	out := make([]byte, len(data))
	for h := range heads {
		for j := range hd / 2 {
			for a := range 2 {
				src, dst := h*hd+2*j+a, h*hd+a*hd/2+j
				copy(out[dst*rowBytes:(dst+1)*rowBytes], data[src*rowBytes:(src+1)*rowBytes])
			}
		}
	}
	return out
}

// hfName is transformers' name of a GGUF tensor ("" for llama.cpp-only
// tensors); {xid} marks the expert of a 3-D expert tensor.
func hfName(arch, name string) (string, error) {
	switch name {
	case "token_embd.weight":
		return "model.embed_tokens.weight", nil
	case "output_norm.weight":
		return "model.norm.weight", nil
	case "output.weight":
		return "lm_head.weight", nil
	case "rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight":
		return "", fmt.Errorf("hfwrite: %s has no Hugging Face tensor (config.json rope_scaling)", name)
	}
	rest, ok := strings.CutPrefix(name, "blk.")
	i := strings.IndexByte(rest, '.')
	if !ok || i <= 0 {
		return "", fmt.Errorf("hfwrite: tensor %s", name)
	}
	layer, suffix := rest[:i], rest[i+1:]
	gemma := strings.HasPrefix(arch, "gemma")
	var hf string
	switch suffix {
	case "attn_norm.weight":
		hf = "input_layernorm.weight"
	case "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias":
		hf = "self_attn." + suffix[5:6] + "_proj." + suffix[7:]
	case "attn_output.weight", "attn_output.bias":
		hf = "self_attn.o_proj." + strings.TrimPrefix(suffix, "attn_output.")
	case "attn_qkv.weight":
		hf = "self_attn.qkv_proj.weight"
	case "attn_q_norm.weight":
		hf = "self_attn.q_norm.weight"
	case "attn_k_norm.weight":
		hf = "self_attn.k_norm.weight"
	case "post_attention_norm.weight":
		hf = "post_attention_layernorm.weight"
	case "ffn_norm.weight":
		hf = "post_attention_layernorm.weight"
		if gemma {
			hf = "pre_feedforward_layernorm.weight"
		}
	case "post_ffw_norm.weight":
		hf = "post_feedforward_layernorm.weight"
	case "ffn_gate.weight":
		hf = "mlp.gate_proj.weight"
	case "ffn_up.weight":
		hf = "mlp.up_proj.weight"
		if arch == "phi3" {
			hf = "mlp.gate_up_proj.weight"
		}
	case "ffn_down.weight":
		hf = "mlp.down_proj.weight"
	case "ffn_gate_inp.weight", "ffn_gate_inp.bias":
		hf = "mlp.gate.weight"
		switch arch {
		case "llama":
			hf = "block_sparse_moe.gate.weight"
		case "gpt-oss":
			hf = "mlp.router." + strings.TrimPrefix(suffix, "ffn_gate_inp.")
		}
	case "attn_sinks.weight":
		hf = "self_attn.sinks"
	case "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight":
		kind := strings.TrimSuffix(strings.TrimPrefix(suffix, "ffn_"), "_exps.weight")
		if arch == "llama" {
			hf = "block_sparse_moe.experts.{xid}." + map[string]string{"gate": "w1", "down": "w2", "up": "w3"}[kind] + ".weight"
		} else {
			hf = "mlp.experts.{xid}." + kind + "_proj.weight"
		}
	default:
		return "", fmt.Errorf("hfwrite: tensor %s", name)
	}
	return "model.layers." + layer + "." + hf, nil
}
