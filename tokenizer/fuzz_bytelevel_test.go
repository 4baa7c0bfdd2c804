package tokenizer

import (
	"nanoserve/internal/testshared"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzTokenizerJSON: any bytes given as tokenizer.json load or fail with an
// error; whatever loads encodes and decodes without panicking.
func FuzzTokenizerJSON(f *testing.F) {
	f.Add([]byte(tinyByteLevelJSON(false, "")))
	f.Add([]byte(tinyByteLevelJSON(true, `"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"`)))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"<unk>":0,"▁":1,"a":2,"▁a":3},"merges":[["▁","a"]],"byte_fallback":true,"unk_token":"<unk>"},"pre_tokenizer":{"type":"Metaspace"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseTokenizerJSON(string(data), nil)
		if err != nil {
			return
		}
		tk, err := FromVocab(v)
		if err != nil {
			return
		}
		for _, s := range []string{"", "hello world", "the<think> 12 <|end|>", "\xff\x00 é"} {
			ids := tk.Encode(s, true)
			tk.Decode(ids)
			for _, id := range ids {
				if id < 0 || id >= tk.Size() {
					t.Fatalf("id %d outside vocabulary of %d", id, tk.Size())
				}
			}
		}
	})
}

// fuzzByteLevelTokenizers returns the tiny synthetic tokenizer and, when
// ../shared is present, GPT-2, Llama-3 and Qwen3.
func fuzzByteLevelTokenizers(t testing.TB) []*Tokenizer {
	v, err := parseTokenizerJSON(tinyByteLevelJSON(false, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	tiny, err := FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	out := []*Tokenizer{tiny}
	if _, ok := testshared.Find(); ok {
		for _, rel := range []string{gpt2Dir, llama3JSON, qwen3JSON} {
			out = append(out, blTokenizer(t, rel))
		}
	}
	return out
}

// FuzzByteLevelEncode: the pieces of Encode(s) concatenate to s (to NFC(s)
// for Qwen's NFC normalizer), Decode(Encode(s)) == s for valid UTF-8, and
// the heap merge loop agrees with the quadratic one on every pre-token.
func FuzzByteLevelEncode(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "I'M 're 've 'll", "  \n\n\t x", "1234567", "é e\u0301 ſ", "😀👨\u200d👩", "\xff\xc3(", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		f.Add(s)
	}
	var tks []*Tokenizer
	f.Fuzz(func(t *testing.T, s string) {
		if tks == nil {
			tks = fuzzByteLevelTokenizers(t)
		}
		for _, tk := range tks {
			bl := tk.m.(*byteLevel)
			ids := tk.Encode(s, false)
			var raw []byte
			for _, id := range ids {
				raw = append(raw, bl.piece(id)...)
			}
			want := s
			if bl.nfc {
				want = normalizeNFC(s)
			}
			if string(raw) != want {
				t.Fatalf("pieces of %q = %q", s, raw)
			}
			if utf8.ValidString(s) {
				if d := tk.Decode(ids); d != want {
					t.Fatalf("Decode(Encode(%q)) = %q", s, d)
				}
			}
			bl.pre.split(want, func(w string) {
				if len(w) > 300 {
					return
				}
				var s1, s2 bpeScratch
				a := slices.Clone(bl.bpeScan(w, &s1))
				if b := bl.bpeHeap(w, &s2); !slices.Equal(a, b) {
					t.Fatalf("%q: scan %v heap %v", w, a, b)
				}
			})
		}
	})
}
