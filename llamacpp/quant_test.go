package llamacpp

import (
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
		{m, TensorKind{Name: "attn_qkv", Layer: 1, Layers: 2, Cols: 256}, tensor.Q5_K},
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
