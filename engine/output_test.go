package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// The output stage alone (a tokenizer, no model): text pieces, a stop id
// releasing held-back text, a stop string across tokens never shown, max
// tokens and the context limit ending with "length", healing's removed
// text omitted from the first piece.
func TestOutputStage(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join(testshared.Dir(t), "models/llama2c/aidreams-tok512.bin"))
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(" the little cat sat", false)
	if len(ids) < 4 {
		t.Fatalf("encoding: %v", ids)
	}
	prompt := append([]int{1}, tok.Encode("Once", false)...) // text: the output continues it
	run := func(pol sample.Policy, healed string, ctxLen int, toks []int) (text string, last piece, n int) {
		o := newOutput(tok, &pol, []int{2}, prompt, healed, ctxLen, false)
		for i, id := range toks {
			last = o.accept(id, len(prompt)+i)
			text += last.text
			n = i + 1
			if last.finish != "" {
				break
			}
		}
		return text, last, n
	}
	base, _, _ := run(sample.Greedy(), "", 100, ids) // the plain pieces
	if text, last, _ := run(sample.Greedy(), "", 100, append(ids, 2)); text != base || !last.stop || last.finish != FinishStop {
		t.Errorf("stop id: %q %+v, want %q then a stop", text, last, base)
	}
	pol := sample.Greedy()
	pol.Stop = []string{"cat"}
	if text, last, _ := run(pol, "", 100, ids); last.finish != FinishStop || strings.Contains(text, "cat") || !strings.HasPrefix(base, text) || !strings.Contains(base[len(text):], "cat") {
		t.Errorf("stop string: %q %+v (plain %q)", text, last, base)
	}
	pol = withMax(sample.Greedy(), 2)
	if _, last, n := run(pol, "", 100, ids); last.finish != FinishLength || n != 2 {
		t.Errorf("max tokens: %+v after %d", last, n)
	}
	// Tokens sit at index 1, 2, ...: the one at index ctxLen is the last.
	if _, last, n := run(sample.Greedy(), "", len(prompt)+3, ids); last.finish != FinishLength || n != 4 {
		t.Errorf("context limit: %+v after %d tokens", last, n)
	}
	k := 0
	for len(tok.Piece(ids[k])) < 3 {
		k++
	}
	rest := ids[k:]
	plain, _, _ := run(sample.Greedy(), "", 100, rest)
	healed := tok.Piece(rest[0])
	if text, _, _ := run(sample.Greedy(), healed, 100, rest); !strings.HasPrefix(plain, healed) || text != plain[len(healed):] {
		t.Errorf("healed %q: text %q, plain %q", healed, text, plain)
	}
}
