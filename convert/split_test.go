package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/testshared"
)

// TestConvertSplit: converting a split GGUF (given its first file) writes
// the same bytes as converting the single file, without the split.* keys.
func TestConvertSplit(t *testing.T) {
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
	dir := t.TempDir()
	parts, err := w.WriteSplit(filepath.Join(dir, "m"), 3)
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "whole.gguf"), filepath.Join(dir, "merged.gguf")
	if err := Convert(src, a, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Convert(parts[0], b, Options{}); err != nil {
		t.Fatal(err)
	}
	wa, _ := os.ReadFile(a)
	wb, _ := os.ReadFile(b)
	if !bytes.Equal(wa, wb) {
		t.Fatalf("converting the split gives %d bytes that differ from the single file's %d", len(wb), len(wa))
	}
}
