package host

import (
	"slices"
	"testing"
)

// TestModelIDs: llama-server's --alias NAME (no "=") names the model's id;
// a comma list is a sorted set whose first is the id (as llama-server);
// NAME=MODEL stays nanoserve's alias.
func TestModelIDs(t *testing.T) {
	ids, rest := ModelIDs([]string{"tinyllama-2,fim,code", "x=y", "fim"})
	if !slices.Equal(ids, []string{"code", "fim", "tinyllama-2"}) || !slices.Equal(rest, []string{"x=y"}) {
		t.Fatalf("ModelIDs = %q, %q", ids, rest)
	}
	got := NameFirst([]string{"llama_gqa-F16.gguf", "llama_gqa-F16"}, []string{"code", "llama_gqa-F16"})
	if want := []string{"code", "llama_gqa-F16", "llama_gqa-F16.gguf"}; !slices.Equal(got, want) {
		t.Fatalf("NameFirst = %q, want %q", got, want)
	}
}
