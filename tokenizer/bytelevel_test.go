package tokenizer

import (
	"bufio"
	"encoding/json"
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// blGolden is one line of a byte-level public.jsonl.
type blGolden struct {
	ID              string   `json:"id"`
	Category        string   `json:"category"`
	Text            string   `json:"text"`
	IDs             []int    `json:"ids"`
	IDsAllowSpecial []int    `json:"ids_allow_special"`
	Tokens          []string `json:"tokens"`
	Decoded         string   `json:"decoded"`
	RoundtripExact  bool     `json:"roundtrip_exact"`
}

func readBLGoldens(t testing.TB, set string) []blGolden {
	t.Helper()
	f, err := os.Open(filepath.Join(testshared.Dir(t), "testdata/tokenizers", set, "public.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []blGolden
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g blGolden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The big tokenizers are loaded once per test binary.
var blCache struct {
	sync.Mutex
	m map[string]*Tokenizer
}

// blTokenizer loads a shared tokenizer path (relative to shared/) once.
func blTokenizer(t testing.TB, rel string) *Tokenizer {
	t.Helper()
	p := filepath.Join(testshared.Dir(t), rel)
	blCache.Lock()
	defer blCache.Unlock()
	if tk, ok := blCache.m[p]; ok {
		return tk
	}
	tk, err := Load(p)
	if err != nil {
		t.Fatalf("Load(%s): %v", rel, err)
	}
	if blCache.m == nil {
		blCache.m = map[string]*Tokenizer{}
	}
	blCache.m[p] = tk
	return tk
}

const (
	gpt2Dir    = "testdata/tokenizers/gpt2"
	llama3JSON = "testdata/tokenizers/hf_llama3/tokenizer.json"
	qwen3JSON  = "testdata/tokenizers/hf_qwen3/tokenizer.json"
)

func TestGPT2Goldens(t *testing.T) {
	tk := blTokenizer(t, gpt2Dir)
	for _, g := range readBLGoldens(t, "gpt2") {
		if got := tk.Encode(g.Text, false); !slices.Equal(got, g.IDs) {
			t.Errorf("%s %q:\n got %v\nwant %v", g.ID, g.Text, got, g.IDs)
		}
		if got := tk.Encode(g.Text, true); !slices.Equal(got, g.IDsAllowSpecial) {
			t.Errorf("%s %q (special):\n got %v\nwant %v", g.ID, g.Text, got, g.IDsAllowSpecial)
		}
		if got := tk.Decode(g.IDs); got != g.Decoded {
			t.Errorf("%s: Decode = %q, want %q", g.ID, got, g.Decoded)
		}
	}
}

func testHFGoldens(t *testing.T, rel, set string) {
	tk := blTokenizer(t, rel)
	for _, g := range readBLGoldens(t, set) {
		got := tk.Encode(g.Text, true)
		if !slices.Equal(got, g.IDs) {
			var toks []string
			for _, id := range got {
				toks = append(toks, tk.Token(id))
			}
			t.Errorf("%s %q:\n got %v %q\nwant %v %q", g.ID, g.Text, got, toks, g.IDs, g.Tokens)
			continue
		}
		for i, id := range got {
			if i < len(g.Tokens) && tk.Token(id) != g.Tokens[i] {
				t.Errorf("%s: token %d = %q, want %q", g.ID, i, tk.Token(id), g.Tokens[i])
			}
		}
		if d := tk.Decode(g.IDs); d != g.Decoded {
			t.Errorf("%s: Decode = %q, want %q", g.ID, d, g.Decoded)
		}
		if g.RoundtripExact != (g.Decoded == g.Text) {
			t.Errorf("%s: golden roundtrip flag inconsistent", g.ID)
		}
	}
}

func TestLlama3Goldens(t *testing.T) { testHFGoldens(t, llama3JSON, "hf_llama3") }
func TestQwen3Goldens(t *testing.T)  { testHFGoldens(t, qwen3JSON, "hf_qwen3") }

// TestHFLoadOthers loads the GGUF fixtures' Hugging Face folders and checks
// they agree with the reference vocabularies they were derived from.
func TestHFLoadOthers(t *testing.T) {
	gpt2HF := blTokenizer(t, "testdata/gguf/gpt2/hf")
	gpt2 := blTokenizer(t, gpt2Dir)
	qwen2 := blTokenizer(t, "testdata/gguf/qwen2/hf/tokenizer.json")
	qwen3 := blTokenizer(t, qwen3JSON)
	for _, g := range readBLGoldens(t, "gpt2") {
		if got := gpt2HF.Encode(g.Text, false); !slices.Equal(got, g.IDs) {
			t.Errorf("gpt2/hf %s: got %v want %v", g.ID, got, g.IDs)
		}
	}
	for _, g := range readBLGoldens(t, "hf_qwen3") {
		if got := qwen2.Encode(g.Text, true); !slices.Equal(got, g.IDs) {
			t.Errorf("qwen2/hf %s: got %v want %v", g.ID, got, g.IDs)
		}
	}
	for _, tc := range []struct {
		name     string
		tk       *Tokenizer
		bos, eos int
		hasBOS   bool
		addBOS   bool
		eog      []int
	}{
		{"gpt2", gpt2, 50256, 50256, true, false, []int{50256}},
		{"gpt2/hf", gpt2HF, 50256, 50256, true, false, []int{50256}},
		{"llama3", blTokenizer(t, llama3JSON), 128000, 128001, true, false, []int{128001, 128009}},
		{"qwen3", qwen3, 0, 151645, false, false, []int{151643, 151645}},
		{"qwen2/hf", qwen2, 0, 151645, false, false, []int{151643, 151645}},
	} {
		bos, ok := tc.tk.BOS()
		if ok != tc.hasBOS || (ok && bos != tc.bos) {
			t.Errorf("%s: BOS = %d,%v want %d,%v", tc.name, bos, ok, tc.bos, tc.hasBOS)
		}
		if eos, ok := tc.tk.EOS(); !ok || eos != tc.eos {
			t.Errorf("%s: EOS = %d,%v want %d", tc.name, eos, ok, tc.eos)
		}
		if tc.tk.AddBOS() != tc.addBOS {
			t.Errorf("%s: AddBOS = %v", tc.name, tc.tk.AddBOS())
		}
		for _, id := range tc.eog {
			if !tc.tk.IsEOG(id) {
				t.Errorf("%s: %d (%q) is not EOG; EOG = %v", tc.name, id, tc.tk.Token(id), tc.tk.EOG())
			}
		}
	}
	if ty := gpt2.TokenType(50256); ty != TypeControl {
		t.Errorf("gpt2 <|endoftext|> type %d, want Control", ty)
	}
	if ty := qwen3.TokenType(151668); ty != TypeUserDefined { // </think>, special=false
		t.Errorf("qwen3 </think> type %d, want UserDefined", ty)
	}
}

// TestByteLevelRoundTrip: concatenating the pieces of Encode(s) gives back
// s for any bytes (NFC(s) for Qwen), and Decode does for valid UTF-8.
func TestByteLevelRoundTrip(t *testing.T) {
	texts := []string{
		"", "a", " ", "\n\n", "Hello, world!", "I'M 're 'Ve 'ſ x", "1234567 89",
		"héllo wörld", "e\u0301", "👨\u200d👩\u200d👧", "\xff\xfe invalid \xc3", "\x00\x01",
		"   trailing   ", "a\r\n\r\n b", "你好世界，", "\u0300\u0301 marks",
	}
	for _, rel := range []string{gpt2Dir, llama3JSON, qwen3JSON} {
		tk := blTokenizer(t, rel)
		bl := tk.m.(*byteLevel)
		for _, s := range texts {
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
				t.Errorf("%s: pieces of %q = %q", rel, s, raw)
			}
			if utf8.ValidString(s) && tk.Decode(ids) != want {
				t.Errorf("%s: Decode(Encode(%q)) = %q", rel, s, tk.Decode(ids))
			}
		}
	}
}

func TestNormalizeNFC(t *testing.T) {
	for _, s := range []string{"", "abc", "e\u0301", "ae\u0301", "é", "\xffe\u0301\xfe", "한국어", "\u1100\u1161"} {
		want := norm.NFC.String(s)
		if got := normalizeNFC(s); got != want {
			t.Errorf("normalizeNFC(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestBPEHeapMatchesScan checks the O(n log n) merge loop against the
// quadratic scan on words long and short.
func TestBPEHeapMatchesScan(t *testing.T) {
	for _, rel := range []string{gpt2Dir, llama3JSON} {
		bl := blTokenizer(t, rel).m.(*byteLevel)
		words := []string{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "abcabcabcabc", "supercalifragilisticexpialidocious",
			"thisisaverylongidentifierwithoutanyspaces", "                                ", "0123456789"}
		for _, w := range readBLGoldens(t, "gpt2") {
			words = append(words, w.Text)
		}
		for _, w := range words {
			if w == "" {
				continue
			}
			var s1, s2 bpeScratch
			a := slices.Clone(bl.bpeScan(w, &s1))
			b := bl.bpeHeap(w, &s2)
			if !slices.Equal(a, b) {
				t.Errorf("%s %q: scan %v heap %v", rel, w, a, b)
			}
		}
	}
}

// TestByteLevelConcurrent: the shared word cache gives the same ids under
// concurrent use (run with -race).
func TestByteLevelConcurrent(t *testing.T) {
	tk := blTokenizer(t, gpt2Dir)
	gs := readBLGoldens(t, "gpt2")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 3; r++ {
				for _, x := range gs {
					if got := tk.Encode(x.Text, false); !slices.Equal(got, x.IDs) {
						t.Errorf("%s: got %v want %v", x.ID, got, x.IDs)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestGGUFStyleVocab rebuilds the tokenizers from a Vocab as a GGUF loader
// fills it (tokenizer.ggml.pre name, no IgnoreMerges flag: llama.cpp turns
// it on for the Llama-3 family itself) and checks the goldens again.
func TestGGUFStyleVocab(t *testing.T) {
	for _, tc := range []struct{ rel, set, pre string }{
		{llama3JSON, "hf_llama3", "llama-bpe"},
		{qwen3JSON, "hf_qwen3", "qwen2"},
		{gpt2Dir, "gpt2", "gpt-2"},
	} {
		v := *blTokenizer(t, tc.rel).Vocab()
		v.Pre, v.IgnoreMerges = tc.pre, false
		tk, err := FromVocab(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range readBLGoldens(t, tc.set) {
			if got := tk.Encode(g.Text, tc.set != "gpt2"); !slices.Equal(got, g.IDs) {
				t.Errorf("%s %s: got %v want %v", tc.pre, g.ID, got, g.IDs)
			}
		}
	}
}
