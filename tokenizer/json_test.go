package tokenizer

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// tinyByteLevelJSON returns a small valid byte-level tokenizer.json: the 256
// byte tokens, a few merges (as strings or pairs), one special and one
// non-special added token.
func tinyByteLevelJSON(pairs bool, pre string) string {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	rules := [][2]string{{"Ġ", "t"}, {"h", "e"}, {"Ġt", "he"}, {"i", "n"}, {"Ġ", "a"}, {"e", "r"}, {"Ġ", "Ġ"}, {"1", "2"}}
	var merges []any
	for _, r := range rules {
		vocab[r[0]+r[1]] = len(vocab)
		if pairs {
			merges = append(merges, []string{r[0], r[1]})
		} else {
			merges = append(merges, r[0]+" "+r[1])
		}
	}
	n := len(vocab)
	preTok := `{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}`
	if pre != "" {
		preTok = `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + pre +
			`},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]}`
	}
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{
			{"id": n, "content": "<|end|>", "special": true},
			{"id": n + 1, "content": "<think>", "special": false},
		},
		"normalizer":     nil,
		"pre_tokenizer":  json.RawMessage(preTok),
		"post_processor": json.RawMessage(`{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<|end|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}]}`),
		"decoder":        json.RawMessage(`{"type":"ByteLevel"}`),
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "ignore_merges": false},
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

func TestTinyTokenizerJSON(t *testing.T) {
	llamaRe, _ := json.Marshal(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`)
	for _, tc := range []struct {
		pairs bool
		re    string
		pre   string
	}{{false, "", "gpt2"}, {true, "", "gpt2"}, {true, string(llamaRe), "llama-bpe"}} {
		v, err := parseTokenizerJSON(tinyByteLevelJSON(tc.pairs, tc.re), nil)
		if err != nil {
			t.Fatal(err)
		}
		if v.Model != "gpt2" || v.Pre != tc.pre || len(v.Merges) != 8 || v.Merges[2] != "Ġt he" {
			t.Fatalf("vocab: model %q pre %q merges %q", v.Model, v.Pre, v.Merges)
		}
		tk, err := FromVocab(v)
		if err != nil {
			t.Fatal(err)
		}
		// The template's leading special token is taken as BOS and AddBOS.
		if bos, ok := tk.BOS(); !ok || bos != 264 || !tk.AddBOS() {
			t.Errorf("BOS %d %v AddBOS %v", bos, ok, tk.AddBOS())
		}
		got := tk.Encode("the<think> there<|end|>12", true)
		want := []int{'t', 257, 265, 258, 'r', 'e', 264, 263}
		if !slices.Equal(got, want) {
			t.Errorf("Encode = %v, want %v", got, want)
		}
		if tk.TokenType(265) != TypeUserDefined || tk.TokenType(264) != TypeControl {
			t.Errorf("added token types %d %d", tk.TokenType(265), tk.TokenType(264))
		}
		if d := tk.Decode(got); d != "the<think> there<|end|>12" {
			t.Errorf("Decode = %q", d)
		}
	}
}

func TestTokenizerJSONErrors(t *testing.T) {
	good := tinyByteLevelJSON(false, "")
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", "", "unexpected end"},
		{"not json", "hello", "unexpected"},
		{"truncated", good[:len(good)/2], ""},
		{"no model", `{"version":"1"}`, "no \"model\""},
		{"unigram", `{"model":{"type":"Unigram","vocab":[]}}`, "Unigram"},
		{"bad regex", tinyByteLevelJSON(false, `"\\w+"`), "regex"},
		{"bad merge", strings.Replace(good, `"Ġ t"`, `"Ġt"`, 1), "merge"},
		{"huge id", `{"model":{"type":"BPE","vocab":{"a":99999999},"merges":[]}}`, "out of range"},
		{"sparse ids", `{"model":{"type":"BPE","vocab":{"a":5000},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"}}`, "ids up to"},
		{"no pre", `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, "neither"},
		{"trailing", good + "x", "trailing"},
	} {
		_, err := parseTokenizerJSON(tc.doc, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// writeLlama2SPTokenizerJSON writes a SentencePiece-kind tokenizer.json
// (as Hugging Face's converter makes for Llama-2) from the llama2.c
// tokenizer.bin: vocabulary, merges for every split of a piece into two
// pieces ordered by the merged piece's score, byte_fallback, Metaspace.
func writeLlama2SPTokenizerJSON(t *testing.T, binPath, out string) {
	data, err := os.ReadFile(binPath)
	if err != nil {
		t.Skip(err)
	}
	const n = 32000
	pieces := make([]string, 0, n)
	scores := make([]float32, 0, n)
	p := 4
	for len(pieces) < n {
		if p+8 > len(data) {
			t.Fatal("short tokenizer.bin")
		}
		sc := math.Float32frombits(binary.LittleEndian.Uint32(data[p:]))
		l := int(binary.LittleEndian.Uint32(data[p+4:]))
		pieces = append(pieces, strings.ReplaceAll(string(data[p+8:p+8+l]), " ", "▁")) // llama2.c stores ▁ as a space
		scores = append(scores, sc)
		p += 8 + l
	}
	vocab := map[string]int{}
	for id, s := range pieces {
		vocab[s] = id
	}
	type mg struct {
		l, r  string
		score float32
		id    int
	}
	var ms []mg
	for id, s := range pieces {
		if id < 3 || isByteToken(s) {
			continue
		}
		for i := 1; i < len(s); i++ {
			if !utf8.RuneStart(s[i]) {
				continue
			}
			li, okL := vocab[s[:i]]
			ri, okR := vocab[s[i:]]
			if okL && okR && li >= 3 && ri >= 3 {
				ms = append(ms, mg{s[:i], s[i:], scores[id], id})
			}
		}
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].score > ms[j].score })
	var merges []string
	for _, m := range ms {
		merges = append(merges, m.l+" "+m.r)
	}
	doc := map[string]any{
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<unk>", "special": true},
			{"id": 1, "content": "<s>", "special": true},
			{"id": 2, "content": "</s>", "special": true},
		},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
		"post_processor": json.RawMessage(`{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}]}`),
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "byte_fallback": true, "unk_token": "<unk>", "fuse_unk": true},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSentencePieceKindJSON: a Llama-2 style tokenizer.json becomes a
// SentencePiece Vocab whose merge-derived scores reproduce SentencePiece.
func TestSentencePieceKindJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tokenizer.json")
	writeLlama2SPTokenizerJSON(t, filepath.Join(testshared.Dir(t), "models/llama2c/llama2-tokenizer.bin"), out)
	tk, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Kind() != "llama" || !tk.AddBOS() || tk.TokenType(0) != TypeUnknown || tk.TokenType(1) != TypeControl || tk.TokenType(3) != TypeByte {
		t.Fatalf("kind %q AddBOS %v types %d %d %d", tk.Kind(), tk.AddBOS(), tk.TokenType(0), tk.TokenType(1), tk.TokenType(3))
	}
	if bos, _ := tk.BOS(); bos != 1 {
		t.Errorf("BOS %d", bos)
	}
	if eos, _ := tk.EOS(); eos != 2 {
		t.Errorf("EOS %d", eos)
	}
	for _, g := range readSPGoldens(t) {
		if got := tk.Encode(g.Text, false); !slices.Equal(got, g.IDs) {
			t.Errorf("%s %q:\n got %v\nwant %v", g.ID, g.Text, got, g.IDs)
		}
	}
}
