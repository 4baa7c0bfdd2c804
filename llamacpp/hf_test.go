package llamacpp

import "testing"

// TestHFNames: the names llama.cpp's converter maps (tensor_mapping.py,
// conversion/*.py), both ways, per architecture.
func TestHFNames(t *testing.T) {
	for _, c := range []struct {
		arch, hf string
		want     HFName
	}{
		{"llama", "model.layers.12.self_attn.k_proj.weight", HFName{"blk.12.attn_k.weight", 12, -1}},
		{"llama", "lm_head.weight", HFName{"output.weight", -1, -1}},
		{"qwen2", "model.layers.0.self_attn.q_proj.bias", HFName{"blk.0.attn_q.bias", 0, -1}},
		{"gpt2", "transformer.h.3.mlp.c_fc.weight", HFName{"blk.3.ffn_up.weight", 3, -1}},
		{"gpt2", "h.0.attn.c_attn.bias", HFName{"blk.0.attn_qkv.bias", 0, -1}},
		{"gpt2", "transformer.wpe.weight", HFName{"position_embd.weight", -1, -1}},
		{"qwen3", "model.layers.1.self_attn.q_norm.weight", HFName{"blk.1.attn_q_norm.weight", 1, -1}},
		{"llama", "model.layers.2.post_attention_layernorm.weight", HFName{"blk.2.ffn_norm.weight", 2, -1}},
		{"gemma2", "model.layers.2.post_attention_layernorm.weight", HFName{"blk.2.post_attention_norm.weight", 2, -1}},
		{"gemma3", "model.layers.2.pre_feedforward_layernorm.weight", HFName{"blk.2.ffn_norm.weight", 2, -1}},
		{"gemma3", "model.layers.0.post_feedforward_layernorm.weight", HFName{"blk.0.post_ffw_norm.weight", 0, -1}},
		{"phi3", "model.layers.4.mlp.gate_up_proj.weight", HFName{"blk.4.ffn_up.weight", 4, -1}},
		{"phi3", "model.layers.4.self_attn.qkv_proj.weight", HFName{"blk.4.attn_qkv.weight", 4, -1}},
		{"llama", "model.layers.1.block_sparse_moe.gate.weight", HFName{"blk.1.ffn_gate_inp.weight", 1, -1}},
		{"llama", "model.layers.1.block_sparse_moe.experts.3.w2.weight", HFName{"blk.1.ffn_down_exps.weight", 1, 3}},
		{"qwen3moe", "model.layers.2.mlp.experts.7.up_proj.weight", HFName{"blk.2.ffn_up_exps.weight", 2, 7}},
		{"qwen3moe", "model.layers.2.mlp.gate.weight", HFName{"blk.2.ffn_gate_inp.weight", 2, -1}},
	} {
		got, ok := HFToGGUF(c.arch, c.hf)
		if !ok || got != c.want {
			t.Errorf("HFToGGUF(%s, %s) = %+v %v, want %+v", c.arch, c.hf, got, ok, c.want)
		}
		if c.arch == "gpt2" && c.hf[:3] == "h.0" {
			continue
		}
		if back, ok := GGUFToHF(c.arch, c.want.GGUF, c.want.Expert); !ok || back != c.hf {
			t.Errorf("GGUFToHF(%s, %s, %d) = %q %v, want %q", c.arch, c.want.GGUF, c.want.Expert, back, ok, c.hf)
		}
	}
	for _, c := range []struct{ arch, hf string }{
		{"llama", "model.layers.0.self_attn.rotary.weight"},
		{"llama", "model.layers.0.mlp.experts.1.gate_proj.weight"}, // Qwen's expert naming is not Mixtral's
		{"gemma2", "model.layers.0.mlp.gate_up_proj.weight"},
	} {
		if got, ok := HFToGGUF(c.arch, c.hf); ok {
			t.Errorf("HFToGGUF(%s, %s) = %+v, want unknown", c.arch, c.hf, got)
		}
	}
	if NormShift("gemma3", "blk.0.attn_q_norm.weight") != 1 || NormShift("gemma2", "output_norm.weight") != 1 || NormShift("qwen3", "blk.0.attn_q_norm.weight") != 0 {
		t.Error("NormShift")
	}
	if !PermutesQK("llama") || PermutesQK("qwen3") || PermutesQK("gemma3") || PermutesQK("gpt2") {
		t.Error("PermutesQK")
	}
}
