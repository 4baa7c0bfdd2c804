package main

import (
	"slices"
	"testing"

	"nanoserve/internal/testshared"
)

// TestServeAliasesAndTags: llama-server's --alias NAME,NAME and --tags name
// and label the first model; its listed aliases are the operator's names
// (--alias ids and NAME=MODEL), not the names derived from its file.
func TestServeAliasesAndTags(t *testing.T) {
	gguf := testshared.Dir(t) + "/testdata/gguf/llama_gqa/llama_gqa-F16.gguf"
	f, fs := newServeFlags()
	if err := fs.Parse([]string{"--model", gguf, "--alias", "tinyllama-2,fim,code", "--alias", "story=code", "--tags", "chat,fim", "--tags", "small"}); err != nil {
		t.Fatal(err)
	}
	entries, err := f.entries()
	if err != nil {
		t.Fatal(err)
	}
	e := entries[0]
	if e.Names[0] != "code" || !slices.Contains(e.Names, "llama_gqa-F16.gguf") ||
		!slices.Equal(e.Aliases, []string{"code", "fim", "tinyllama-2", "story"}) || !slices.Equal(e.Tags, []string{"chat", "fim", "small"}) {
		t.Errorf("entry: %+v", e)
	}
}
