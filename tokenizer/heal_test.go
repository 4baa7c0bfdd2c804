package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// bruteWithPrefix is TokensWithPrefix by a scan of the vocabulary.
func bruteWithPrefix(tk *Tokenizer, prefix string) []int {
	var out []int
	for id := range tk.Size() {
		if tk.generatable(id) && strings.HasPrefix(tk.Piece(id), prefix) {
			out = append(out, id)
		}
	}
	return out
}

// TokensWithPrefix equals a linear scan, on SentencePiece and byte-level
// vocabularies, for prefixes that are whole tokens, parts of tokens and
// no token's start; control tokens never appear.
func TestTokensWithPrefix(t *testing.T) {
	sp, _ := llamaTokenizers(t)
	bl := blTokenizer(t, gpt2Dir)
	for _, tc := range []struct {
		name string
		tk   *Tokenizer
	}{{"llama2", sp}, {"gpt2", bl}} {
		t.Run(tc.name, func(t *testing.T) {
			tk := tc.tk
			prefixes := []string{" {", " the", " hel", "\n", "\n\t", "{", "a", "The", "ing", "\xe2", "zzzqqq", " "}
			// and every 97th token's own text and its first half
			for id := 0; id < tk.Size(); id += 97 {
				if p := tk.Piece(id); p != "" {
					prefixes = append(prefixes, p, p[:len(p)/2+1])
				}
			}
			for _, p := range prefixes {
				got, want := tk.TokensWithPrefix(p), bruteWithPrefix(tk, p)
				if !slices.Equal(got, want) {
					t.Fatalf("TokensWithPrefix(%q) = %d ids %v, want %d ids %v", p, len(got), got, len(want), want)
				}
			}
			if got := tk.TokensWithPrefix(""); got != nil {
				t.Errorf("empty prefix: %v, want nil", got)
			}
			// A whole token's text includes the token itself.
			ids := tk.Encode(" the", false)
			last := ids[len(ids)-1]
			if !slices.Contains(tk.TokensWithPrefix(tk.Piece(last)), last) {
				t.Errorf("token %d (%q) not among its own extensions", last, tk.Piece(last))
			}
			if bos, ok := tk.BOS(); ok && slices.Contains(tk.TokensWithPrefix(tk.Piece(bos)), bos) {
				t.Errorf("control token %d listed", bos)
			}
		})
	}
}

// NextAfter shows only the text after the healed prefix, keeps spaces the
// dummy prefix would drop, and falls back to Next for a token without the
// prefix.
func TestDecoderNextAfter(t *testing.T) {
	sp, _ := llamaTokenizers(t)
	hello := sp.Encode("Hello world", false)
	last := hello[len(hello)-1] // "▁world"
	if sp.Piece(last) != " world" {
		t.Fatalf("last piece %q", sp.Piece(last))
	}
	d := sp.NewDecoder()
	if got := d.NextAfter(last, " wor"); got != "ld" {
		t.Errorf("NextAfter(' world', ' wor') = %q, want \"ld\"", got)
	}
	d = sp.NewDecoder()
	if got := d.NextAfter(last, " world"); got != "" {
		t.Errorf("NextAfter of the whole text = %q, want \"\"", got)
	}
	if got := d.Next(last); got != " world" {
		t.Errorf("next piece after a healed token = %q, want its space kept", got)
	}
	d = sp.NewDecoder()
	if got := d.NextAfter(last, "xyz"); got != "world" {
		t.Errorf("NextAfter without the prefix = %q, want Next's \"world\"", got)
	}

	// Byte-level: a token that ends inside a UTF-8 character is held back
	// until the character completes.
	bl := blTokenizer(t, gpt2Dir)
	ids := bl.Encode(" héllo", false)
	var b strings.Builder
	d = bl.NewDecoder()
	p0 := bl.Piece(ids[0])
	b.WriteString(d.NextAfter(ids[0], p0[:1]))
	for _, id := range ids[1:] {
		b.WriteString(d.Next(id))
	}
	b.WriteString(d.Flush())
	if want := " héllo"[1:]; b.String() != want {
		t.Errorf("byte-level healed decode %q, want %q", b.String(), want)
	}
}

// BenchmarkTokensWithPrefixIndex builds the sorted index of the 128k-token
// Llama-3 vocabulary (the one-time cost of the first healed request).
func BenchmarkTokensWithPrefixIndex(b *testing.B) {
	tk := blTokenizer(b, llama3JSON)
	for b.Loop() {
		tk.sortedPieces()
	}
}

// BenchmarkTokensWithPrefix is a lookup once the index exists.
func BenchmarkTokensWithPrefix(b *testing.B) {
	tk := blTokenizer(b, llama3JSON)
	tk.TokensWithPrefix("x")
	for b.Loop() {
		tk.TokensWithPrefix(" {")
	}
}
