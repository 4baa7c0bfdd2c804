package model

import (
	"path/filepath"
	"slices"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/testshared"
)

// TestLoadSplitGGUF splits a real model into three files (llama.cpp's
// gguf-split layout) and checks the split loads to the same logits, bit
// for bit, as the single file.
func TestLoadSplitGGUF(t *testing.T) {
	src := testshared.Path(t, "testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf")
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	if err := w.AddFile(f); err != nil {
		t.Fatal(err)
	}
	paths, err := w.WriteSplit(filepath.Join(t.TempDir(), "llama_gqa-Q8_0"), 3)
	if err != nil {
		t.Fatal(err)
	}
	whole := mustLoad(t, src, Options{Threads: 2})
	split := mustLoad(t, paths[0], Options{Threads: 2})
	if !slices.Equal(split.Files, paths) {
		t.Errorf("Files = %v, want %v", split.Files, paths)
	}
	tokens := []int{1, 450, 4996, 17354, 1701, 29916}
	a, b := runSeq(t, whole, tokens, 0), runSeq(t, split, tokens, 0)
	if d, i := maxAbsDiff(a, b); d != 0 {
		t.Fatalf("split logits differ by %g at %d", d, i)
	}
	if _, err := Load(paths[1], Options{}); err == nil {
		t.Error("loading the second file of a split succeeded")
	}
}
