package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// llamaCppPres are the pre-tokenizers of pretok_llamacpp.go.
var llamaCppPres = []string{"falcon", "deepseek-coder", "deepseek-llm", "qwen35", "gemma4"}

// TestLlamaCppPreTokenizerCases pins behaviours read from llama.cpp's
// expressions and its collapsed-category matching.
func TestLlamaCppPreTokenizerCases(t *testing.T) {
	cases := []splitCase{
		// falcon: every ASCII punctuation or symbol (backtick too) and
		// non-ASCII punctuation runs together first; then GPT-2; then ASCII
		// digit triples.
		{"falcon", "a+b=`c`!", []string{"a", "+", "b", "=`", "c", "`!"}},
		{"falcon", "x “y” €5", []string{"x", " ", "“", "y", "”", " €", "5"}},
		{"falcon", "1234567 ٣٤٥٦", []string{"123", "456", "7", " ٣٤٥٦"}},
		{"falcon", "it's", []string{"it", "'", "s"}},
		// deepseek-coder: newlines alone, \s?\p{L}+, \s?\p{P}+ (ASCII $+<=>^`|~
		// are symbols, not \p{P}), CJK runs, single numbers.
		{"deepseek-coder", "a\r\nb", []string{"a", "\r", "\n", "b"}},
		{"deepseek-coder", " foo ,bar $x", []string{" foo", " ,", "bar", " $", "x"}},
		{"deepseek-coder", "x 12 ٣", []string{"x", " ", "1", "2", " ", "٣"}},
		// Later stages cut the pieces of earlier ones: "\u3000字" (\s?\p{L}+)
		// loses its space to the CJK stage, which skips whitespace.
		{"deepseek-coder", "中文\u3000字", []string{"中文", "\u3000", "字"}},
		{"deepseek-coder", "नमस्ते", []string{"नमस", "\u094d", "त", "\u0947"}},
		// The CJK class's ends are inclusive: U+9FA5 (its last ideograph) is
		// in, U+9FA6 is out; U+0800 and U+D7FF are in, U+07FF is not.
		{"deepseek-coder", "x\u9fa5\u9fa6", []string{"x", "\u9fa5", "\u9fa6"}},
		{"deepseek-coder", "\u07ff\u0800", []string{"\u07ff", "\u0800"}},
		// deepseek-llm: its own letter class (ASCII, Latin, Greek, Cyrillic,
		// ...), its punctuation class (which holds ASCII letters too: :-~),
		// trailing whitespace of each piece, CJK runs (U+0800–U+9FA5 holds
		// Devanagari, kana, ...), number runs.
		{"deepseek-llm", "Héllo Мир 123", []string{"H", "é", "llo", " Мир", " ", "123"}},
		{"deepseek-llm", "a, b!  ", []string{"a", ",", " b", "!", "  "}},
		{"deepseek-llm", "中文 日本語", []string{"中文", " ", "日本語"}},
		{"deepseek-llm", "x 😀 y", []string{"x", " 😀", " y"}},
		{"deepseek-llm", "\u3000、。", []string{"\u3000", "、。"}},
		// qwen35: like qwen2, but combining marks join letter runs and
		// contractions fold ASCII case only.
		{"qwen35", "e\u0301 x", []string{"e\u0301", " x"}},
		{"qwen35", "नमस्ते", []string{"नमस्ते"}},
		{"qwen35", "\u0301\u0301a", []string{"\u0301\u0301a"}},
		{"qwen35", "I'M x'ſ", []string{"I", "'M", " x", "'ſ"}},
		{"qwen35", "1234", []string{"1", "2", "3", "4"}},
		{"qwen35", "a   b\n\n c", []string{"a", "  ", " b", "\n\n", " c"}},
		// gemma4: lines and newline runs.
		{"gemma4", "a b\n\nc\n", []string{"a b", "\n\n", "c", "\n"}},
	}
	checkSplits(t, cases)
}

// TestLlamaCppPreTokenizerReference compares with the splits of
// testdata/llamacpp_ref.py (Python's regex module running the expressions
// with llama.cpp's class semantics; that script reproduces every case of
// llama.cpp's own tokenizer tests for these vocabularies).
func TestLlamaCppPreTokenizerReference(t *testing.T) {
	ref := readSplits(t, "testdata/pretok_llamacpp_splits.json")
	if len(ref.Splits) != len(llamaCppPres) || len(ref.Cases) < 300 {
		t.Fatalf("reference has %d pre-tokenizers, %d cases", len(ref.Splits), len(ref.Cases))
	}
	ref.check(t)
}

// deepSeekLetterClass is deepseek-llm's letter class as its tokenizer.json
// writes it (escaped: several of its characters change under Unicode
// normalisation).
const deepSeekLetterClass = "A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af" +
	"\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481" +
	"\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b" +
	"\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d" +
	"\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec" +
	"\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d" +
	"\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3" +
	"\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17" +
	"\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2" +
	"\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943"

// TestDeepSeekLetterTable: the range table holds exactly the class.
func TestDeepSeekLetterTable(t *testing.T) {
	in := map[rune]bool{}
	rs := []rune(deepSeekLetterClass)
	for i := 0; i < len(rs); i++ {
		lo, hi := rs[i], rs[i]
		if i+2 < len(rs) && rs[i+1] == '-' {
			hi = rs[i+2]
			i += 2
		}
		for r := lo; r <= hi; r++ {
			in[r] = true
		}
	}
	for r := rune(0); r < 0x20000; r++ {
		if got := unicode.Is(deepSeekLetters, r); got != in[r] {
			t.Fatalf("U+%04X: in table %v, in class %v", r, got, in[r])
		}
	}
}

// TestTrailingSpaceStart: \s+$ cuts before the whitespace that ends a piece.
func TestTrailingSpaceStart(t *testing.T) {
	for in, want := range map[string]int{"": 0, "a": 1, "a ": 1, "a \t\n": 1, "   ": 0, "a\u3000": 1, "a\u3000 b": 6, "\xff ": 1, "é\u00a0": 2} {
		if got := trailingSpaceStart(in); got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}

// FuzzLlamaCppPreTokenizers: pieces are non-empty and concatenate to the
// input, for arbitrary bytes.
func FuzzLlamaCppPreTokenizers(f *testing.F) {
	for _, s := range []string{"", "a b", "中文 \u3000 x", "e\u0301\n\n 12", "\xff\xfe  ", "it's ٣ 😀!"} {
		f.Add(s)
	}
	pres := make([]*preTokenizer, len(llamaCppPres))
	for i, name := range llamaCppPres {
		pres[i], _ = newPreTokenizer(name)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, p := range pres {
			pieces := splitAll(p, s)
			if strings.Join(pieces, "") != s || slices.Contains(pieces, "") {
				t.Fatalf("%s %q: pieces %q", llamaCppPres[i], s, pieces)
			}
		}
	})
}

// TestLlamaCppRulesContractions: Hugging Face's (?i) folds U+017F long s to
// s in the contractions; llama.cpp (Vocab.LlamaCppRules) folds ASCII only.
func TestLlamaCppRulesContractions(t *testing.T) {
	for _, name := range []string{"llama-bpe", "dbrx", "qwen2"} {
		hf, _ := newPreTokenizerRules(name, false)
		lc, _ := newPreTokenizerRules(name, true)
		if got := splitAll(hf, "x'ſa 'Sa"); !slices.Equal(got, []string{"x", "'ſ", "a", " '", "Sa"}) {
			t.Errorf("%s Hugging Face: %q", name, got)
		}
		if got := splitAll(lc, "x'ſa 'Sa"); !slices.Equal(got, []string{"x", "'ſa", " '", "Sa"}) {
			t.Errorf("%s llama.cpp: %q", name, got)
		}
	}
}
