package model

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/testshared"
)

// rewriteArch copies the gguf-archs fixture name with the metadata keys in
// set replaced (or added) and the tensors named in drop left out.
func rewriteArch(t *testing.T, name string, set map[string]gguf.Value, drop ...string) string {
	t.Helper()
	return rewriteArchFn(t, name, set, func(n string, dims []uint64, data []byte) ([]uint64, []byte, bool) {
		return dims, data, !slices.Contains(drop, n)
	})
}

// rewriteArchFn is rewriteArch with each tensor passed through edit (new
// dims and data; false drops it).
func rewriteArchFn(t *testing.T, name string, set map[string]gguf.Value, edit func(name string, dims []uint64, data []byte) ([]uint64, []byte, bool)) string {
	t.Helper()
	src, err := gguf.Open(testshared.Path(t, "testdata/gguf-archs/"+name+"/"+name+"-F16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	w := gguf.NewWriter()
	done := map[string]bool{}
	for _, kv := range src.KV {
		if v, ok := set[kv.Key]; ok {
			kv.Value, done[kv.Key] = v, true
		}
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range set {
		if !done[k] {
			if err := w.AddKV(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ti := range src.Tensors {
		dims, data, keep := edit(ti.Name, ti.Dims, ti.Data)
		if !keep {
			continue
		}
		if err := w.AddTensor(ti.Name, ti.Type, dims, data); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), name+".gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestArchBadInput: malformed issue-31 files are refused with an error
// naming what is wrong, never a panic or a silently different model.
func TestArchBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		set        map[string]gguf.Value
		drop       []string
		want       string
	}{
		{"every layer shares KV", "gemma4", map[string]gguf.Value{"gemma4.attention.shared_kv_layers": gguf.Uint32(6)}, nil, "leaves no layer owning a cache"},
		{"no global owner", "gemma4", map[string]gguf.Value{"gemma4.attention.shared_kv_layers": gguf.Uint32(4)}, nil, "no earlier global layer owning a cache"},
		{"ffn lengths", "gemma4", map[string]gguf.Value{"gemma4.feed_forward_length": gguf.NewArray([]int32{64, 64, 64, 128, 128})}, nil, "feed_forward_length has 5 entries for 6 layers"},
		{"per-layer embeddings", "gemma4", nil, []string{"per_layer_token_embd.weight"}, "missing tensor per_layer_token_embd"},
		{"rope dims", "gemma4", map[string]gguf.Value{"gemma4.rope.dimension_count_swa": gguf.Uint32(18)}, nil, "invalid rope dimension 18 for head dim 16"},
		{"kv heads within a kind", "gemma4", map[string]gguf.Value{"gemma4.attention.head_count_kv": gguf.NewArray([]int32{2, 1, 2, 2, 2, 2})}, nil, "layers of one kind (windowed or global) with different counts"},
		{"kv heads count", "gemma4", map[string]gguf.Value{"gemma4.attention.head_count_kv": gguf.NewArray([]int32{2, 2, 2})}, nil, "head_count_kv has 3 entries for 6 layers"},
		{"kv heads vs tensors", "gemma4", map[string]gguf.Value{"gemma4.attention.head_count_kv": gguf.NewArray([]int32{2, 2, 1, 2, 2, 1})}, nil, "blk.2.attn_k.weight has dims [32 64], want [32 32]"},
		{"sinks", "gpt-oss", nil, []string{"blk.2.attn_sinks.weight"}, "missing tensor blk.2.attn_sinks.weight"},
		{"expert bias", "gpt-oss", nil, []string{"blk.0.ffn_up_exps.bias"}, "missing tensor blk.0.ffn_up_exps.bias"},
		{"router bias", "gpt-oss", nil, []string{"blk.1.ffn_gate_inp.bias"}, "missing tensor blk.1.ffn_gate_inp.bias"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(rewriteArch(t, tc.arch, tc.set, tc.drop...), Options{Threads: 1})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
