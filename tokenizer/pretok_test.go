package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

func splitAll(p *preTokenizer, s string) []string {
	var out []string
	p.split(s, func(w string) { out = append(out, w) })
	return out
}

// splitCase is an input and the pieces a pre-tokenizer cuts it into.
type splitCase struct {
	pre, in string
	want    []string
}

func checkSplits(t *testing.T, cases []splitCase) {
	t.Helper()
	for _, c := range cases {
		p, err := newPreTokenizer(c.pre)
		if err != nil {
			t.Fatal(err)
		}
		if got := splitAll(p, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s %q: got %q, want %q", c.pre, c.in, got, c.want)
		}
	}
}

// splitRef is a reference file of splits: Cases, and per pre-tokenizer
// name the pieces of each case.
type splitRef struct {
	Cases  []string
	Splits map[string][][]string
}

func readSplits(t *testing.T, path string) splitRef {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ref splitRef
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// check compares every pre-tokenizer's pieces of every case.
func (ref splitRef) check(t *testing.T) {
	t.Helper()
	for name, want := range ref.Splits {
		p, err := newPreTokenizer(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range ref.Cases {
			if got := splitAll(p, in); !slices.Equal(got, want[i]) {
				t.Errorf("%s %q: got %q, want %q", name, in, got, want[i])
			}
		}
	}
}

// TestPreTokenizerCases pins the behaviours the hand-written matchers must
// reproduce from the regexes.
func TestPreTokenizerCases(t *testing.T) {
	cases := []splitCase{
		// Contractions: case-insensitive for Llama-3/Qwen, not for GPT-2.
		{"llama-bpe", "I'M DON'T we'Ll they'VE", []string{"I", "'M", " DON", "'T", " we", "'Ll", " they", "'VE"}},
		{"gpt2", "I'M don't", []string{"I", "'", "M", " don", "'t"}},
		{"llama-bpe", "'sa", []string{"'s", "a"}},
		{"llama-bpe", "x'ſ", []string{"x", "'ſ"}}, // U+017F folds to s
		// Digits: groups of up to 3 (Llama-3), single (Qwen), runs (GPT-2).
		{"llama-bpe", "1234567 x", []string{"123", "456", "7", " x"}},
		{"qwen2", "1234", []string{"1", "2", "3", "4"}},
		{"gpt2", "1234 5678", []string{"1234", " 5678"}},
		{"smollm", "ab 12", []string{"ab", " ", "1", "2"}},
		{"default", "12345 x", []string{"123", "45", " x"}},
		// \s+(?!\S): a run of spaces leaves its last space to the next word.
		{"llama-bpe", "a   b", []string{"a", "  ", " b"}},
		{"gpt2", "a   b", []string{"a", "  ", " b"}},
		{"llama-bpe", "end   ", []string{"end", "   "}},
		{"gpt2", "a\tb", []string{"a", "\t", "b"}},
		// Newlines: \s*[\r\n]+ ends at the last newline of a run.
		{"llama-bpe", "a\n\n  b", []string{"a", "\n\n", " ", " b"}},
		{"llama-bpe", "a \n b", []string{"a", " \n", " b"}},
		{"llama-bpe", "x!!\n\ny", []string{"x", "!!\n\n", "y"}},
		{"llama-bpe", "\r\nz", []string{"\r\n", "z"}},
		// [^\r\n\p{L}\p{N}]?\p{L}+: one non-letter glues to a word.
		{"llama-bpe", "(hello) $x", []string{"(hello", ")", " $", "x"}},
		{"llama-bpe", "($x", []string{"($", "x"}},
		{"llama-bpe", "\tTab", []string{"\tTab"}},
		{"gpt2", "(hello)", []string{"(", "hello", ")"}},
		// Unicode letters, numbers, marks, emoji.
		{"llama-bpe", "Привет мир", []string{"Привет", " мир"}},
		{"llama-bpe", "e\u0301 x", []string{"e", "\u0301", " x"}},
		{"llama-bpe", "Ⅻ½٣", []string{"Ⅻ½٣"}},
		{"qwen2", "Ⅻ½", []string{"Ⅻ", "½"}},
		{"llama-bpe", "hi 😀😀!", []string{"hi", " 😀😀!"}},
		{"gpt2", "hi 😀 x", []string{"hi", " 😀", " x"}},
		{"llama-bpe", "a\u00a0b", []string{"a", "\u00a0b"}},
		// Invalid UTF-8 bytes are characters of no class.
		{"llama-bpe", "a\xff\xfeb", []string{"a", "\xff\xfe", "b"}},
		{"llama-bpe", "a\xffb", []string{"a", "\xffb"}},
		{"gpt2", "a\xffb", []string{"a", "\xff", "b"}},
	}
	checkSplits(t, cases)
}

// TestPreTokenizerReference compares with splits made by Python's regex
// module from the original expressions (testdata/pretok_splits.json: curated
// tricky strings and random strings over a tricky alphabet).
func TestPreTokenizerReference(t *testing.T) {
	ref := readSplits(t, "testdata/pretok_splits.json")
	if len(ref.Splits) != 5 {
		t.Fatalf("reference has %d pre-tokenizers", len(ref.Splits))
	}
	ref.check(t)
}

// TestPreTokenizerCovers: pieces are non-empty and concatenate to the
// input, for arbitrary bytes.
func TestPreTokenizerCovers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "  ", "\n", "\r", "\t", "'", "s", "1", "é", "\u0301", "😀", "!", "\xff", "\xc3", "$", "\u3000", "٣"}
	names := []string{"gpt2", "llama-bpe", "qwen2", "smollm", "default"}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := r.IntN(20); n > 0; n-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		for _, name := range names {
			p, _ := newPreTokenizer(name)
			pieces := splitAll(p, s)
			if strings.Join(pieces, "") != s || slices.Contains(pieces, "") {
				t.Fatalf("%s %q: pieces %q", name, s, pieces)
			}
		}
	}
}

func TestPreTokenizerNames(t *testing.T) {
	for _, name := range []string{"gpt2", "gpt-2", "llama-bpe", "llama3", "qwen2", "smollm", "default", "starcoder", "dbrx"} {
		if _, err := newPreTokenizer(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"no-such-pre", "GPT2", "tekken"} {
		if _, err := newPreTokenizer(name); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%q: err = %v, want an error naming it", name, err)
		}
	}
	if _, err := FromVocab(Vocab{Model: "gpt2", Pre: "bogus", Tokens: []string{"a"}}); err == nil {
		t.Error("FromVocab accepted an unknown pre-tokenizer")
	}
}
