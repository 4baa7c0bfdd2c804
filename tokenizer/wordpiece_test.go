package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// wpVocab is a small BERT vocabulary in the GGUF converter's spelling
// ("▁" word starts, continuations bare).
func wpVocab() Vocab {
	toks := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "▁hello", "▁world", "▁un", "aff", "able", "▁,", "▁!",
		"▁$", "▁中", "▁文", "▁cafe", "▁a", "b", "▁ab", "▁i", "▁istanbul", "▁ᄀ", "▁[", "▁]", "▁cls", "▁x", "▁y", "▁一"}
	types := make([]TokenType, len(toks))
	for i := range types {
		types[i] = TypeNormal
	}
	for _, id := range []int{0, 1, 2, 3} {
		types[id] = TypeControl
	}
	return Vocab{Model: "bert", Tokens: toks, Types: types, UNK: Some(1), BOS: Some(2)}
}

func TestWordPiece(t *testing.T) {
	tk, err := FromVocab(wpVocab())
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int { return slices.Index(tk.Vocab().Tokens, s) }
	cases := []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"▁hello", "▁,", "▁world", "▁!"}},
		{"unaffable", []string{"▁un", "aff", "able"}},
		{"unaffablex", []string{"[UNK]"}}, // a position no token starts: the whole word is unknown
		{"hello xyz world", []string{"▁hello", "[UNK]", "▁world"}},
		{"Café", []string{"▁cafe"}},             // é -> e (first of its decomposition), lowercased
		{"cafe\u0301", []string{"▁cafe"}},       // combining mark dropped
		{"中文", []string{"▁中", "▁文"}},            // CJK ideographs are words of their own
		{"一x", []string{"▁一", "▁x"}},            // U+4E00, the first ideograph, too
		{"x$y", []string{"▁x", "▁$", "▁y"}},     // ASCII symbols split
		{"a\x00b\u200bb", []string{"▁ab", "b"}}, // NUL and format characters dropped, not separators
		{"a\u3000b", []string{"▁a", "[UNK]"}},   // Unicode whitespace separates ("▁b" is no token)
		{"İstanbul", []string{"▁istanbul"}},     // İ -> I -> i
		{"가", []string{"▁ᄀ"}},                   // Hangul syllable -> leading jamo
		{"[CLS]", []string{"▁[", "▁cls", "▁]"}}, // control token text is text
		{"  ", nil},
	}
	for _, c := range cases {
		var want []int
		for _, s := range c.want {
			want = append(want, id(s))
		}
		if got := tk.Encode(c.in, false); !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v %q", c.in, got, want, c.want)
		}
	}
	if got := tk.Decode(tk.Encode("Hello, unaffable world", false)); got != "hello , unaffable world" {
		t.Errorf("decode: %q", got)
	}
	if got := tk.Encode("[CLS]", true); !slices.Equal(got, []int{2}) {
		t.Errorf("[CLS] parsed: %v", got)
	}
}

func TestWordPieceCasedKeepAccents(t *testing.T) {
	v := wpVocab()
	v.Tokens = append(v.Tokens, "▁Café", "▁e\u0301")
	v.Types = append(v.Types, TypeNormal, TypeNormal)
	v.Cased, v.KeepAccents = true, true
	tk, err := FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	n := len(v.Tokens)
	if got := tk.Encode("Café e\u0301", false); !slices.Equal(got, []int{n - 2, n - 1}) {
		t.Errorf("got %v, want [%d %d]", got, n-2, n-1)
	}
}

// FuzzWordPiece: any input encodes to ids of the vocabulary.
func FuzzWordPiece(f *testing.F) {
	for _, s := range []string{"", "Hello, World!", "unaffable", "中文 x$y", "\xff\xfe a", "cafe\u0301 가"} {
		f.Add(s)
	}
	tk, err := FromVocab(wpVocab())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, id := range tk.Encode(s, false) {
			if id < 0 || id >= tk.Size() {
				t.Fatalf("%q: id %d", s, id)
			}
		}
	})
}

// gemma4Vocab is a small Gemma 4 style vocabulary: UTF-8 text with "▁"
// spaces, byte tokens, merges between texts.
func gemma4Vocab() Vocab {
	toks := []string{"<pad>", "<eos>", "<bos>", "<unk>"}
	types := []TokenType{TypeControl, TypeControl, TypeControl, TypeControl}
	for b := 0; b < 256; b++ {
		toks = append(toks, "<0x"+string("0123456789ABCDEF"[b>>4])+string("0123456789ABCDEF"[b&15])+">")
		types = append(types, TypeByte)
	}
	for _, s := range []string{"▁", "a", "b", "ab", "▁ab", "\n", "\n\n", "中", "▁中"} {
		toks = append(toks, s)
		types = append(types, TypeNormal)
	}
	return Vocab{Model: "gemma4", Tokens: toks, Types: types, BOS: Some(2), EOS: Some(1),
		Merges: []string{"a b", "▁ ab", "▁ 中"}}
}

func TestGemma4Tokenizer(t *testing.T) {
	tk, err := FromVocab(gemma4Vocab())
	if err != nil {
		t.Fatal(err)
	}
	toks := tk.Vocab().Tokens
	id := func(s string) int { return slices.Index(toks, s) }
	cases := []struct {
		in   string
		want []string
	}{
		{"ab ab", []string{"ab", "▁ab"}},
		{" 中b", []string{"▁中", "b"}},
		{"é", []string{"<0xC3>", "<0xA9>"}},                          // no token: its UTF-8 bytes
		{"a\xffb", []string{"a", "<0xEF>", "<0xBF>", "<0xBD>", "b"}}, // invalid byte -> U+FFFD
		{"\n\n", []string{"\n\n"}},                                   // a newline run that is a token, whole
		{"\n\n\n", []string{"\n", "\n", "\n"}},                       // one that is not: characters, no merges
		{"ab\nab", []string{"ab", "\n", "ab"}},
		{"<0x41>", []string{"<0x3C>", "<0x30>", "<0x78>", "<0x34>", "<0x31>", "<0x3E>"}}, // byte-token text is text
	}
	for _, c := range cases {
		var want []int
		for _, s := range c.want {
			want = append(want, id(s))
		}
		if got := tk.Encode(c.in, false); !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v %q", c.in, got, want, c.want)
		}
	}
	for _, s := range []string{"ab ab 中 é\n\nx", "  leading", "<bos>text"} {
		if got := tk.Decode(tk.Encode(s, false)); got != s {
			t.Errorf("round trip %q: %q", s, got)
		}
	}
}

func TestLlamaCppTypeFixes(t *testing.T) {
	v := Vocab{Model: "gpt2", Tokens: []string{"a", "</s>", "<|end|>", "<|return|>", "<|call|>", "<|channel|>", "<|im_end|>", "b"},
		Types: []TokenType{TypeNormal, TypeUserDefined, TypeControl, TypeControl, TypeControl, TypeControl, TypeNormal, TypeNormal},
		EOG:   []int{2}}
	orig := slices.Clone(v.Types)
	LlamaCppTypeFixes(&v)
	want := []TokenType{TypeNormal, TypeControl, TypeUserDefined, TypeControl, TypeControl, TypeUserDefined, TypeControl, TypeNormal}
	if !slices.Equal(v.Types, want) {
		t.Errorf("types %v, want %v", v.Types, want)
	}
	if slices.Contains(v.EOG, 2) {
		t.Errorf("harmony <|end|> still ends generation: %v", v.EOG)
	}
	if v.Types[1] == orig[1] {
		t.Error("the caller's types were changed in place")
	}
	tk, err := FromVocab(Vocab{Model: "gpt2", Pre: "gpt2", Tokens: append([]string{"<", "/", "s", ">"}, v.Tokens...),
		Types: append([]TokenType{1, 1, 1, 1}, v.Types...)})
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("</s>", false); slices.Contains(got, 5) || len(got) != 4 {
		t.Errorf("plain </s>: %v", got)
	}
	if got := tk.Encode("</s>", true); !slices.Equal(got, []int{5}) {
		t.Errorf("parsed </s>: %v", got)
	}
	if !tk.IsEOG(5) || !tk.IsEOG(10) || tk.IsEOG(6) {
		t.Errorf("EOG %v", tk.EOG())
	}

	// Gemma 4: </s> is text.
	g := Vocab{Tokens: []string{"</s>", "<|tool_response>", "x"}, Types: []TokenType{TypeControl, TypeUserDefined, TypeNormal}}
	LlamaCppTypeFixes(&g)
	if !slices.Equal(g.Types, []TokenType{TypeNormal, TypeControl, TypeNormal}) {
		t.Errorf("gemma types %v", g.Types)
	}

	// Solar-Open: <|calls|> and <|flush|> (no <|return|>) also make <|end|>
	// a separator that does not end generation.
	so := Vocab{Tokens: []string{"<|end|>", "<|calls|>", "<|flush|>", "x"},
		Types: []TokenType{TypeControl, TypeControl, TypeControl, TypeNormal}, EOG: []int{0, 2}}
	LlamaCppTypeFixes(&so)
	if so.Types[0] != TypeUserDefined || !slices.Equal(so.EOG, []int{2}) {
		t.Errorf("solar-open <|end|>: types %v, EOG %v", so.Types, so.EOG)
	}

	// A vocabulary with <|tool_response> but no </s>: nothing else changes
	// (token 0 in particular keeps its type and still ends generation).
	nt := Vocab{Tokens: []string{"<eos>", "<|tool_response>", "x"},
		Types: []TokenType{TypeControl, TypeControl, TypeNormal}, EOG: []int{0}}
	LlamaCppTypeFixes(&nt)
	if !slices.Equal(nt.Types, []TokenType{TypeControl, TypeControl, TypeNormal}) || !slices.Equal(nt.EOG, []int{0}) {
		t.Errorf("no </s>: types %v, EOG %v", nt.Types, nt.EOG)
	}
}

// TestRStrip: a parsed special token listed in Vocab.RStrip takes the ASCII
// whitespace after it (not other whitespace, and not when unparsed).
func TestRStrip(t *testing.T) {
	v := Vocab{Model: "gpt2", Pre: "gpt2", Tokens: []string{"<u>", "a", " ", "\n", "Ġ", "Ċ", "\u3000"},
		Types: []TokenType{TypeControl, 1, 1, 1, 1, 1, 1}, RStrip: []int{0}}
	tk, err := FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("<u> \n a", true); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("parsed: %v", got)
	}
	if got := tk.Encode("a<u>", true); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("at the end: %v", got)
	}
	v.RStrip = []int{7}
	if _, err := FromVocab(v); err == nil {
		t.Error("rstrip id outside the vocabulary accepted")
	}
}

// FuzzGemma4: Gemma 4's BPE gives back its input (each invalid UTF-8 byte as
// U+FFFD), since every byte has a byte token.
func FuzzGemma4(f *testing.F) {
	for _, s := range []string{"", "ab ab", " 中b\n\n\n", "é\xff", "<0x41>", "▁ab"} {
		f.Add(s)
	}
	tk, err := FromVocab(gemma4Vocab())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tk.Encode(s, false)
		if got, want := tk.Decode(ids), strings.ReplaceAll(replaceInvalidUTF8(s), "▁", " "); got != want {
			t.Fatalf("%q: decodes to %q, want %q (ids %v)", s, got, want, ids)
		}
	})
}
