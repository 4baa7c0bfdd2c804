package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nanoserve/bench"
	"nanoserve/tokenizer"
	"nanoserve/train"
)

// TestWriteInfillPrompts: each case becomes one bench serve prompt whose
// prefix is the end of the text before the gap and whose suffix is the
// start of the text after it, 3/4 and 1/4 of the token budget.
func TestWriteInfillPrompts(t *testing.T) {
	text := strings.Repeat("func f(x int) int {\n\treturn x + 1\n}\n\n", 40)
	v, err := tokenizer.TrainBPE([]string{text}, tokenizer.TrainOptions{VocabSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	cases := []train.FIMCase{{Prefix: text[:900], Middle: "x", Suffix: text[901:]}, {Prefix: "a", Suffix: "b"}}
	path := filepath.Join(t.TempDir(), "p.jsonl")
	if err := writeInfillPrompts(path, cases, tk, 40); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps, err := bench.LoadPrompts(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("%d prompts, want 2", len(ps))
	}
	p := ps[0]
	if n := len(tk.Encode(p.Prompt, false)); n != 30 || !strings.HasSuffix(cases[0].Prefix, p.Prompt) {
		t.Errorf("prefix %q: %d tokens (want 30), must end the case's prefix", p.Prompt, n)
	}
	if n := len(tk.Encode(p.Suffix, false)); n != 10 || !strings.HasPrefix(cases[0].Suffix, p.Suffix) {
		t.Errorf("suffix %q: %d tokens (want 10), must start the case's suffix", p.Suffix, n)
	}
	if ps[1].Prompt != "a" || ps[1].Suffix != "b" || p.MaxTokens != 0 {
		t.Errorf("short case %+v, max tokens %d", ps[1], p.MaxTokens)
	}
}
