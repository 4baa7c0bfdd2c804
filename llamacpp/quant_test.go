package llamacpp

import (
	"fmt"
	"slices"
	"testing"

	"nanoserve/tensor"
)

func mustFT(t *testing.T, name string) FileType {
	t.Helper()
	f, ok := ParseFileType(name)
	if !ok {
		t.Fatalf("no file type %q", name)
	}
	return f
}

// TestTensorType: the K-quant mixes pick the types llama-quantize picked
// for ../shared/testdata/gguf/llama_k (2 layers; tensor_types.txt), fall
// back when a row is not a whole number of 256-blocks, and follow
// llama_tensor_get_type's 8-expert rules.
func TestTensorType(t *testing.T) {
	m, s := mustFT(t, "q4_k_m"), mustFT(t, "Q4-K-S")
	cases := []struct {
		ft   FileType
		k    TensorKind
		want tensor.DType
	}{
		{m, TensorKind{Name: "token_embd", Layer: -1, Cols: 256}, tensor.Q4_K},
		{m, TensorKind{Name: "output", Layer: -1, Cols: 256, Output: true}, tensor.Q6_K},
		{m, TensorKind{Name: "attn_v", Layer: 0, Layers: 2, Cols: 256}, tensor.Q4_K},
		{m, TensorKind{Name: "attn_v", Layer: 1, Layers: 2, Cols: 256}, tensor.Q6_K},
		{m, TensorKind{Name: "ffn_down", Layer: 0, Layers: 2, Cols: 768}, tensor.Q4_K},
		{m, TensorKind{Name: "ffn_down", Layer: 1, Layers: 2, Cols: 768}, tensor.Q6_K},
		{m, TensorKind{Name: "ffn_down_exps", Layer: 1, Layers: 2, Cols: 768}, tensor.Q6_K},
		{m, TensorKind{Name: "attn_q", Layer: 1, Layers: 2, Cols: 256}, tensor.Q4_K},
		// A fused attn_qkv is an attn_v to llama_tensor_get_type_impl
		// (category_is_attn_v; its own ATTENTION_QKV branch is never reached).
		{m, TensorKind{Name: "attn_qkv", Layer: 1, Layers: 2, Cols: 256}, tensor.Q6_K},
		{m, TensorKind{Name: "attn_qkv", Layer: 2, Layers: 8, Cols: 256}, tensor.Q4_K},
		{s, TensorKind{Name: "attn_v", Layer: 0, Layers: 2, Cols: 256}, tensor.Q5_K},
		{s, TensorKind{Name: "attn_v", Layer: 1, Layers: 2, Cols: 256}, tensor.Q5_K},
		{s, TensorKind{Name: "ffn_down", Layer: 1, Layers: 2, Cols: 768}, tensor.Q4_K},
		{s, TensorKind{Name: "output", Layer: -1, Cols: 256, Output: true}, tensor.Q6_K},
		// SmolLM2's dim 576 is not a multiple of 256.
		{m, TensorKind{Name: "attn_q", Layer: 3, Layers: 30, Cols: 576}, tensor.Q5_0},
		{m, TensorKind{Name: "token_embd", Layer: -1, Cols: 576, Output: true}, tensor.Q8_0},
		{mustFT(t, "q8_0"), TensorKind{Name: "output", Layer: -1, Cols: 576, Output: true}, tensor.Q8_0},
		{mustFT(t, "f16"), TensorKind{Name: "output", Layer: -1, Cols: 576, Output: true}, tensor.F16},
		// 8 experts (Mixtral-8x7B): attn_v and attn_k Q8_0, attn_output Q5_K in the Q4_K mixes.
		{m, TensorKind{Name: "attn_v", Layer: 5, Layers: 32, Cols: 4096, Experts: 8}, tensor.Q8_0},
		{mustFT(t, "q4_0"), TensorKind{Name: "attn_k", Layer: 5, Layers: 32, Cols: 4096, Experts: 8}, tensor.Q8_0},
		{s, TensorKind{Name: "attn_output", Layer: 5, Layers: 32, Cols: 4096, Experts: 8}, tensor.Q5_K},
		{m, TensorKind{Name: "attn_k", Layer: 5, Layers: 32, Cols: 4096, Experts: 4}, tensor.Q4_K},
	}
	// The mixes without an importance matrix (gqa 4 and 8 experts as
	// llama-quant.cpp reads them; llamaq's own picks in TestTensorTypeLlamaq).
	q2, q3m, iq3s, iq3m, nl, xs, mx := mustFT(t, "q2_k"), mustFT(t, "q3_k_m"), mustFT(t, "iq3_s"), mustFT(t, "iq3_m"), mustFT(t, "iq4_nl"), mustFT(t, "iq4_xs"), mustFT(t, "mxfp4_moe")
	cases = append(cases, []struct {
		ft   FileType
		k    TensorKind
		want tensor.DType
	}{
		{q2, TensorKind{Name: "attn_v", Layer: 0, Layers: 2, Cols: 256, GQA: 4}, tensor.Q4_K},
		{iq3s, TensorKind{Name: "attn_v", Layer: 0, Layers: 2, Cols: 256, GQA: 4}, tensor.Q4_K},
		{iq3s, TensorKind{Name: "attn_v", Layer: 0, Layers: 2, Cols: 256, GQA: 2}, tensor.IQ3_S},
		{nl, TensorKind{Name: "attn_v", Layer: 0, Layers: 2, Cols: 256, GQA: 4}, tensor.Q5_K},
		{xs, TensorKind{Name: "ffn_down", Layer: 0, Layers: 16, Cols: 256}, tensor.Q5_K},
		{xs, TensorKind{Name: "ffn_down", Layer: 2, Layers: 16, Cols: 256}, tensor.IQ4_XS},
		{q3m, TensorKind{Name: "ffn_down", Layer: 0, Layers: 16, Cols: 256}, tensor.Q5_K},
		{q3m, TensorKind{Name: "ffn_down", Layer: 1, Layers: 16, Cols: 256}, tensor.Q4_K},
		{iq3m, TensorKind{Name: "ffn_down", Layer: 1, Layers: 16, Cols: 256}, tensor.Q4_K},
		{iq3m, TensorKind{Name: "ffn_down", Layer: 2, Layers: 16, Cols: 256}, tensor.IQ3_S},
		{iq3m, TensorKind{Name: "ffn_down", Layer: 4, Layers: 16, Cols: 256, Experts: 8}, tensor.Q4_K},
		{q2, TensorKind{Name: "attn_output", Layer: 0, Layers: 2, Cols: 256, Experts: 8}, tensor.Q5_K},
		{xs, TensorKind{Name: "attn_q", Layer: 0, Layers: 2, Cols: 96}, tensor.IQ4_NL},
		{q2, TensorKind{Name: "attn_q", Layer: 0, Layers: 2, Cols: 96}, tensor.Q4_0},
		{mx, TensorKind{Name: "ffn_up_exps", Layer: 0, Layers: 2, Cols: 256, Experts: 32, Stacked: true}, tensor.MXFP4},
		{mx, TensorKind{Name: "attn_q", Layer: 0, Layers: 2, Cols: 256, Experts: 32}, tensor.Q8_0},
		{mx, TensorKind{Name: "token_embd", Layer: -1, Cols: 256, Experts: 32}, tensor.Q8_0},
		{mx, TensorKind{Name: "output", Layer: -1, Cols: 256, Experts: 32, Output: true}, tensor.Q8_0},
	}...)
	for _, c := range cases {
		if got := c.ft.TensorType(c.k); got != c.want {
			t.Errorf("%s %+v: %s, want %s", c.ft.Name, c.k, got, c.want)
		}
	}
	// use_more_bits: TinyLlama's 22 layers, and 2, 3 and 8.
	for n, want := range map[int][]int{22: {0, 1, 4, 7, 10, 13, 16, 19, 20, 21}, 2: {1}, 3: {2}, 8: {0, 3, 6, 7}} {
		var got []int
		for i := range n {
			if UseMoreBits(i, n) {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("UseMoreBits(·, %d) = %v, want %v", n, got, want)
		}
	}
}

// TestTensorTypeLlamaq: for every file type llama-quantize made of the
// shared llamaq model (2 layers, 8/4 heads: GQA 2, untied output; see
// testdata/gguf-quants/tensor_types.txt) the recipe picks its types.
func TestTensorTypeLlamaq(t *testing.T) {
	want := map[string]map[string]tensor.DType{ // ft -> kind@layer -> type, where not the base
		"q2_k":   {"attn_output": tensor.Q3_K, "attn_v": tensor.Q3_K, "ffn_down": tensor.Q3_K},
		"q3_k_s": {},
		"q3_k_m": {"attn_output": tensor.Q4_K, "attn_v": tensor.Q5_K, "ffn_down": tensor.Q4_K},
		"q3_k_l": {"attn_output": tensor.Q5_K, "attn_v": tensor.Q5_K, "ffn_down": tensor.Q5_K},
		"iq4_nl": {}, "iq4_xs": {}, "iq3_s": {},
		"iq3_m":  {"attn_output": tensor.Q4_K, "attn_v": tensor.Q4_K},
		"q5_k_s": {}, "q5_k_m": {"attn_v@1": tensor.Q6_K, "ffn_down@1": tensor.Q6_K},
		"q6_k": {}, "q4_1": {},
	}
	for name, exc := range want {
		f := mustFT(t, name)
		for _, kind := range []string{"token_embd", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down", "output"} {
			layers := []int{0, 1}
			if kind == "token_embd" || kind == "output" {
				layers = []int{-1}
			}
			for _, l := range layers {
				k := TensorKind{Name: kind, Layer: l, Layers: 2, Cols: 256, GQA: 2, Output: kind == "output"}
				exp := f.Base
				if kind == "output" {
					exp = tensor.Q6_K
				}
				if e, ok := exc[kind]; ok {
					exp = e
				}
				if e, ok := exc[fmt.Sprintf("%s@%d", kind, l)]; ok {
					exp = e
				}
				if got := f.TensorType(k); got != exp {
					t.Errorf("%s %s layer %d: %s, llama-quantize %s", name, kind, l, got, exp)
				}
			}
		}
	}
}

func TestKindOf(t *testing.T) {
	for name, want := range map[string]struct {
		kind  string
		layer int
	}{
		"blk.0.attn_q.weight": {"attn_q", 0}, "blk.17.ffn_down_exps.weight": {"ffn_down_exps", 17},
		"output.weight": {"output", -1}, "blk.x.a": {"blk.x.a", -1}, "blk.3": {"blk.3", -1},
	} {
		if k, l := KindOf(name); k != want.kind || l != want.layer {
			t.Errorf("KindOf(%q) = %q, %d, want %q, %d", name, k, l, want.kind, want.layer)
		}
	}
}

// TestSWALayers: llama_hparams::set_swa_pattern — gemma3's 6 (every
// sixth layer global), gemma2's 2 (even layers windowed), 0 (all).
func TestSWALayers(t *testing.T) {
	for _, c := range []struct {
		layers, p int
		want      []bool
	}{
		{7, 6, []bool{true, true, true, true, true, false, true}},
		{4, 2, []bool{true, false, true, false}},
		{3, 0, []bool{true, true, true}},
	} {
		if got := SWALayers(c.layers, c.p); !slices.Equal(got, c.want) {
			t.Errorf("SWALayers(%d, %d) = %v, want %v", c.layers, c.p, got, c.want)
		}
	}
}
