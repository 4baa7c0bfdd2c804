package engine

import (
	"testing"
	"unicode/utf8"

	"nanoserve/sample"
)

// TestOutputUTF8SplitCharacters: on the built-in model's byte-level
// vocabulary, characters spelt by several tokens (one byte each) are held
// back until complete; a generation that ends inside a character (max
// tokens, or an end-of-generation id) shows each byte of the incomplete
// character as U+FFFD (replaced, not dropped: as Hugging Face's decode
// with errors="replace", which vLLM uses, and llama.cpp's server, whose
// JSON writer replaces invalid bytes), so every piece is valid UTF-8.
func TestOutputUTF8SplitCharacters(t *testing.T) {
	e := builtin(t)
	tok := e.Tokenizer()
	eos, _ := tok.EOS()
	for _, c := range []string{"€", "日", "😀", "é"} {
		ids := tok.Encode(c, false)
		if len(ids) < 2 {
			t.Fatalf("%q is one token %v: want a character split across tokens", c, ids)
		}
		prompt := tok.Encode("x := \"", false)
		run := func(pol sample.Policy, toks []int) (pieces []string) {
			o := newOutput(tok, &pol, []int{eos}, prompt, "", 1000, false)
			for i, id := range toks {
				p := o.accept(id, len(prompt)+i)
				pieces = append(pieces, p.text)
				if p.finish != "" {
					break
				}
			}
			return pieces
		}
		// Whole: nothing until the last byte, then the character.
		got := run(sample.Greedy(), ids)
		for i, p := range got[:len(got)-1] {
			if p != "" {
				t.Errorf("%q: piece %d = %q before the character is complete", c, i, p)
			}
		}
		if got[len(got)-1] != c {
			t.Errorf("%q streamed as %q", c, got)
		}
		// Cut by max tokens or by the end-of-text id after the first byte.
		want := ""
		for range len(tok.Piece(ids[0])) {
			want += "\uFFFD"
		}
		for name, pieces := range map[string][]string{
			"max tokens":  run(withMax(sample.Greedy(), 1), ids),
			"end of text": run(sample.Greedy(), []int{ids[0], eos}),
		} {
			all := ""
			for _, p := range pieces {
				if !utf8.ValidString(p) {
					t.Errorf("%q cut by %s: invalid piece %q", c, name, p)
				}
				all += p
			}
			if all != want {
				t.Errorf("%q cut by %s: %q, want %q", c, name, all, want)
			}
		}
	}
}
