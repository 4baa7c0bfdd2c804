package tokenizer

import (
	"bufio"
	"encoding/json"
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

type spGolden struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	IDs     []int    `json:"ids"`
	Pieces  []string `json:"pieces"`
	Decoded string   `json:"decoded"`
}

func readSPGoldens(t testing.TB) []spGolden {
	t.Helper()
	f, err := os.Open(filepath.Join(testshared.Dir(t), "testdata/tokenizers/llama2_sp/public.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []spGolden
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var g spGolden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, g)
	}
	if len(rows) == 0 {
		t.Fatal("no goldens")
	}
	return rows
}

var (
	llamaOnce       sync.Once
	llamaModel      *Tokenizer
	llamaBin        *Tokenizer
	llamaModelBytes []byte
	llamaErr        error
)

// llamaTokenizers loads the Llama-2 vocabulary from tokenizer.model and
// from llama2.c's tokenizer.bin (once per test binary).
func llamaTokenizers(t testing.TB) (fromModel, fromBin *Tokenizer) {
	t.Helper()
	dir := filepath.Join(testshared.Dir(t), "models/llama2c")
	llamaOnce.Do(func() {
		llamaModelBytes, llamaErr = os.ReadFile(filepath.Join(dir, "llama2-tokenizer.model"))
		if llamaErr != nil {
			return
		}
		if llamaModel, llamaErr = ParseSentencePiece(llamaModelBytes); llamaErr != nil {
			return
		}
		llamaBin, llamaErr = LoadLlama2C(filepath.Join(dir, "llama2-tokenizer.bin"))
	})
	if llamaErr != nil {
		t.Fatal(llamaErr)
	}
	return llamaModel, llamaBin
}

func TestLlama2GoldensModel(t *testing.T) {
	tok, _ := llamaTokenizers(t)
	if tok.Size() != 32000 {
		t.Fatalf("size %d", tok.Size())
	}
	for _, g := range readSPGoldens(t) {
		ids := tok.Encode(g.Text, false)
		if !slices.Equal(ids, g.IDs) {
			t.Errorf("%s %q: ids\n got %v\nwant %v", g.ID, g.Text, ids, g.IDs)
			continue
		}
		pieces := make([]string, len(ids))
		for i, id := range ids {
			pieces[i] = tok.Token(id)
		}
		if !slices.Equal(pieces, g.Pieces) {
			t.Errorf("%s: pieces %q want %q", g.ID, pieces, g.Pieces)
		}
		if got := tok.Decode(ids); got != g.Decoded {
			t.Errorf("%s: decode %q want %q", g.ID, got, g.Decoded)
		}
	}
}

func TestLlama2GoldensBin(t *testing.T) {
	_, tok := llamaTokenizers(t)
	if tok.Size() != 32000 {
		t.Fatalf("size %d", tok.Size())
	}
	for _, g := range readSPGoldens(t) {
		if strings.ContainsRune(g.Text, 0) {
			continue // llama2.c's C strings cannot hold NUL
		}
		if ids := tok.Encode(g.Text, false); !slices.Equal(ids, g.IDs) {
			t.Errorf("%s %q: ids\n got %v\nwant %v", g.ID, g.Text, ids, g.IDs)
		}
		if got := tok.Decode(g.IDs); got != g.Decoded {
			t.Errorf("%s: decode %q want %q", g.ID, got, g.Decoded)
		}
	}
}

// The same vocabulary arriving as a plain Vocab (as GGUF metadata or a
// SentencePiece-kind tokenizer.json deliver it) encodes identically.
func TestLlama2GoldensFromVocab(t *testing.T) {
	model, bin := llamaTokenizers(t)
	for name, src := range map[string]*Tokenizer{"model": model, "bin": bin} {
		v := *src.Vocab()
		v.Tokens = slices.Clone(v.Tokens)
		tok, err := FromVocab(v)
		if err != nil {
			t.Fatal(err)
		}
		if tok.Kind() != "llama" {
			t.Fatalf("kind %q", tok.Kind())
		}
		for _, g := range readSPGoldens(t) {
			if ids := tok.Encode(g.Text, false); !slices.Equal(ids, g.IDs) {
				t.Errorf("%s %s: ids\n got %v\nwant %v", name, g.ID, ids, g.IDs)
			}
		}
	}
	// The vocabularies from .model and .bin agree token for token.
	vm, vb := model.Vocab(), bin.Vocab()
	for id := range vm.Tokens {
		if vm.Tokens[id] != vb.Tokens[id] || vm.Scores[id] != vb.Scores[id] || vm.Types[id] != vb.Types[id] {
			t.Fatalf("id %d: model %q %v %v, bin %q %v %v", id, vm.Tokens[id], vm.Scores[id], vm.Types[id],
				vb.Tokens[id], vb.Scores[id], vb.Types[id])
		}
	}
}

type llama2cSummary struct {
	Runs []struct {
		Prompt       string `json:"prompt"`
		PromptTokens []int  `json:"prompt_tokens"`
	} `json:"runs"`
}

// Prompt tokens as llama2.c's run.c produced them (BOS first).
func TestLlama2CPromptTokens(t *testing.T) {
	shared := testshared.Dir(t)
	for _, c := range []struct{ golden, tok string }{
		{"aidreams260K", "aidreams-tok512.bin"},
		{"tiny_mha", "llama2-tokenizer.bin"},
	} {
		tok, err := LoadLlama2C(filepath.Join(shared, "models/llama2c", c.tok))
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(shared, "testdata/llama2c", c.golden, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s llama2cSummary
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Runs) == 0 {
			t.Fatalf("%s: no runs", c.golden)
		}
		for _, r := range s.Runs {
			bos, ok := tok.BOS()
			if !ok || !tok.AddBOS() || bos != 1 {
				t.Fatalf("BOS %d %v", bos, ok)
			}
			got := append([]int{bos}, tok.Encode(r.Prompt, false)...)
			if !slices.Equal(got, r.PromptTokens) {
				t.Errorf("%s %q:\n got %v\nwant %v", c.golden, r.Prompt, got, r.PromptTokens)
			}
		}
	}
}

func TestLlama2Specials(t *testing.T) {
	tok, bin := llamaTokenizers(t)
	for _, tk := range []*Tokenizer{tok, bin} {
		if id, ok := tk.BOS(); !ok || id != 1 {
			t.Errorf("BOS %d %v", id, ok)
		}
		if id, ok := tk.EOS(); !ok || id != 2 {
			t.Errorf("EOS %d %v", id, ok)
		}
		if !tk.AddBOS() || tk.AddEOS() {
			t.Errorf("AddBOS %v AddEOS %v", tk.AddBOS(), tk.AddEOS())
		}
		if !slices.Equal(tk.EOG(), []int{2}) || !tk.IsEOG(2) || tk.IsEOG(1) {
			t.Errorf("EOG %v", tk.EOG())
		}
		if tk.Token(1) != "<s>" || tk.Token(2) != "</s>" || tk.Token(0) != "<unk>" || tk.Token(13) != "<0x0A>" {
			t.Errorf("tokens %q %q %q %q", tk.Token(0), tk.Token(1), tk.Token(2), tk.Token(13))
		}
	}
	cases := []struct {
		text    string
		special bool
		want    []int
	}{
		// Off (the default for user content): special text is plain text.
		{"<s>", false, []int{529, 29879, 29958}},
		// On: the special token, and a dummy prefix after it (llama.cpp, Meta).
		{"<s>", true, []int{1}},
		{"<s>[INST] hi [/INST]", true, append([]int{1}, tok.Encode("[INST] hi [/INST]", false)...)},
		{"Hello</s>", true, append(tok.Encode("Hello", false), 2)},
		{"</s> <unk>", true, []int{2, 259, 0}}, // "▁▁": dummy prefix + the space
		{"a<s>b", true, append(append(tok.Encode("a", false), 1), tok.Encode("b", false)...)},
	}
	for _, c := range cases {
		if got := tok.Encode(c.text, c.special); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q, %v) = %v, want %v", c.text, c.special, got, c.want)
		}
	}
	// Decode: control tokens vanish by default, render on request; <unk> is " ⁇ ".
	ids := []int{1, 15043, 3186, 2}
	if got := tok.Decode(ids); got != "Hello world" {
		t.Errorf("Decode = %q", got)
	}
	if got := tok.DecodeWith(ids, DecodeOptions{Special: SpecialRender}); got != "<s> Hello world</s>" {
		t.Errorf("DecodeWith render = %q", got)
	}
	if got := tok.Decode([]int{0}); got != " \u2047 " {
		t.Errorf("Decode(<unk>) = %q", got)
	}
	// Only the first piece's dummy-prefix space is dropped.
	if got := tok.Decode([]int{29871, 15043}); got != " Hello" {
		t.Errorf("Decode(▁ ▁Hello) = %q", got)
	}
	// A byte token first keeps the following space.
	if got := tok.Decode([]int{13, 15043}); got != "\n Hello" {
		t.Errorf("Decode(<0x0A> ▁Hello) = %q", got)
	}
	// Out-of-range ids are ignored.
	if got := tok.Decode([]int{-1, 15043, 1 << 30}); got != "Hello" {
		t.Errorf("Decode with bad ids = %q", got)
	}
}

func TestLoadDispatch(t *testing.T) {
	dir := filepath.Join(testshared.Dir(t), "models/llama2c")
	for _, p := range []string{"llama2-tokenizer.model", "llama2-tokenizer.bin"} {
		tok, err := Load(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Encode("Hello world", false); !slices.Equal(got, []int{15043, 3186}) {
			t.Errorf("%s: %v", p, got)
		}
	}
	// A folder with tokenizer.model and a tokenizer_config.json.
	tmp := t.TempDir()
	data, err := os.ReadFile(filepath.Join(dir, "llama2-tokenizer.model"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tmp, "tokenizer.model"), data, 0o644)
	os.WriteFile(filepath.Join(tmp, "tokenizer_config.json"), []byte(`{"add_bos_token": true, "add_eos_token": true,
		"added_tokens_decoder": {"0": {"content": "<unk>", "special": true}, "32000": {"content": "<pad>", "special": true}}}`), 0o644)
	tok, err := Load(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Size() != 32001 || tok.Token(32000) != "<pad>" || !tok.AddEOS() {
		t.Errorf("size %d token %q addEOS %v", tok.Size(), tok.Token(32000), tok.AddEOS())
	}
	if got := tok.Encode("x<pad>", true); !slices.Equal(got, []int{921, 32000}) {
		t.Errorf("added special: %v", got)
	}
	// GGUF is refused with a sentinel; garbage is a clean error.
	os.WriteFile(filepath.Join(tmp, "m.gguf"), []byte("GGUF\x03\x00\x00\x00"), 0o644)
	if _, err := Load(filepath.Join(tmp, "m.gguf")); err == nil || !strings.Contains(err.Error(), "GGUF") {
		t.Errorf("gguf: %v", err)
	}
	os.WriteFile(filepath.Join(tmp, "junk.bin"), []byte{1, 2, 3, 4, 5, 6, 7}, 0o644)
	if _, err := Load(filepath.Join(tmp, "junk.bin")); err == nil {
		t.Error("junk.bin loaded")
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("empty dir loaded")
	}
	if _, err := FromVocab(Vocab{Model: "wordpiece", Tokens: []string{"a"}}); err == nil {
		t.Error("unknown model accepted")
	}
}

// Prompt ids as llama.cpp tokenized them for the Llama GGUF goldens (BOS
// included), through the Hugging Face folder's tokenizer.model.
func TestLlamaCppPromptIDs(t *testing.T) {
	shared := testshared.Dir(t)
	for _, name := range []string{"llama_gqa/llama_gqa-F16.json", "llama_k/llama_k-F16.json"} {
		dir := filepath.Join(shared, "testdata/gguf", filepath.Dir(name))
		tok, err := Load(filepath.Join(dir, "hf"))
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(shared, "testdata/gguf", name))
		if err != nil {
			t.Fatal(err)
		}
		var g struct {
			Prompts []struct {
				Prompt    string `json:"prompt"`
				PromptIDs []int  `json:"prompt_ids"`
			} `json:"prompts"`
		}
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatal(err)
		}
		if len(g.Prompts) == 0 {
			t.Fatalf("%s: no prompts", name)
		}
		for _, p := range g.Prompts {
			var got []int
			if bos, ok := tok.BOS(); ok && tok.AddBOS() {
				got = append(got, bos)
			}
			got = append(got, tok.Encode(p.Prompt, true)...)
			if !slices.Equal(got, p.PromptIDs) {
				t.Errorf("%s %q:\n got %v\nwant %v", name, p.Prompt, got, p.PromptIDs)
			}
		}
	}
}
