package train

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"nanoserve/defaultmodel"
	"nanoserve/gguf"
	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

func TestSimilarity(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want float64
	}{
		{"", "", 1}, {"abc", "abc", 1}, {"abc", "", 0}, {"kitten", "sitting", 1 - 3.0/7}, {"héllo", "hello", 0.8},
	} {
		if got := Similarity(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Similarity(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestFIMCaseDone: a line case ends at its newline; a block case before
// the first non-blank line indented less than the body.
func TestFIMCaseDone(t *testing.T) {
	line := &FIMCase{Kind: "line"}
	if got, ok := line.Done("x := 1\ny"); !ok || got != "x := 1" {
		t.Errorf("line: %q %v", got, ok)
	}
	if _, ok := line.Done("x := 1"); ok {
		t.Error("line done without a newline")
	}
	block := &FIMCase{Kind: "block", Indent: 1}
	for text, want := range map[string]string{
		"\ta()\n\n\tb()\n}\nfunc": "\ta()\n\n\tb()\n",
		"\ta()\n}":                "\ta()\n",
		"\ta()\n\t\tb()\nx":       "\ta()\n\t\tb()\n",
	} {
		if got, ok := block.Done(text); !ok || got != want {
			t.Errorf("block %q: %q %v, want %q", text, got, ok, want)
		}
	}
	for _, text := range []string{"\ta()\n", "\ta()\n\t", "\ta()\n\n"} {
		if _, ok := block.Done(text); ok {
			t.Errorf("block %q done too early", text)
		}
	}
}

// TestFIMCases: cases re-join to their document, alternate kinds, and a
// perfect completer scores 1 while an empty one scores 0 exact.
func TestFIMCases(t *testing.T) {
	var docs []Doc
	for i, text := range goText(t) {
		docs = append(docs, Doc{filepath.Join("d", strconv.Itoa(i)), text})
	}
	cases := FIMCases(docs, 60, 5)
	if len(cases) != 60 {
		t.Fatalf("%d cases", len(cases))
	}
	texts := map[string]string{}
	for _, d := range docs {
		texts[d.Name] = d.Text
	}
	for i, c := range cases {
		if c.Prefix+c.Middle+c.Suffix != texts[c.Doc] {
			t.Fatalf("case %d does not re-join", i)
		}
		want := "line"
		if i%2 == 1 {
			want = "block"
		}
		if c.Kind != want {
			t.Fatalf("case %d kind %s, want %s", i, c.Kind, want)
		}
		// The right answer completes the case as Done cuts it.
		gen := c.Middle + c.Suffix
		if got, ok := c.Done(gen); !ok || strings.TrimRight(got, " \t\n") != strings.TrimRight(c.Middle, " \t\n") {
			t.Fatalf("case %d (%s): Done cuts the true continuation to %q, middle %q", i, c.Kind, got, c.Middle)
		}
	}
	oracle := func(c *FIMCase) (string, error) { return c.Middle + c.Suffix, nil }
	r, err := EvalFIM(cases, oracle)
	if err != nil {
		t.Fatal(err)
	}
	if r["line"].Exact != 1 || r["block"].Sim != 1 || r["line"].N != 30 || r["block"].N != 30 {
		t.Errorf("oracle scores %+v", r)
	}
	r, _ = EvalFIM(cases, func(c *FIMCase) (string, error) { return "", nil })
	if r["line"].Exact != 0 || r["block"].Sim != 0 {
		t.Errorf("empty completer scores %+v", r)
	}
}

// TestGreedyMatchesRecompute: Greedy.Generate with its KV cache writes the
// same tokens as recomputing the whole sequence for every token.
func TestGreedyMatchesRecompute(t *testing.T) {
	dir := t.TempDir()
	c := Config{Dim: 32, Layers: 2, Heads: 2, KVHeads: 1, Hidden: 64, Vocab: 300, Ctx: 64, RopeTheta: 10000, NormEps: 1e-5}
	tk := fimTokenizer(t)
	c.Vocab = tk.Size()
	path := filepath.Join(dir, "m.gguf")
	p := InitParams(c, 3)
	for i := range p {
		p[i] *= 8 // a sharper, context-sensitive random model
	}
	if err := WriteGGUF(path, c, p, *tk.Vocab(), 1, Manifest{}); err != nil {
		t.Fatal(err)
	}
	g, err := LoadGreedy(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	prompt := g.Tok.Encode("func main() {\n\tx := ", false)
	got, err := g.Generate(prompt, 12, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	seq := append([]int(nil), prompt...)
	var ids []int
	for range 12 {
		cache, err := g.M.NewCache(c.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := &kvcache.Seq{}
		cache.Reserve(s, len(seq))
		b := model.Batch{}
		for i, id := range seq {
			b.Tokens, b.Pos, b.Seq, b.Output = append(b.Tokens, id), append(b.Pos, i), append(b.Seq, s), append(b.Output, i == len(seq)-1)
		}
		lg, err := g.M.Forward(b, cache)
		if err != nil {
			t.Fatal(err)
		}
		// Arg-max over the tokens a model may write: not the FIM
		// prefix, suffix, middle or repository markers.
		f := g.Tok.FIM()
		best := -1
		for j, v := range lg {
			if j == f.Pre.ID || j == f.Suf.ID || j == f.Mid.ID || j == f.Rep.ID {
				continue
			}
			if best < 0 || v > lg[best] {
				best = j
			}
		}
		if g.Tok.IsEOG(best) {
			break
		}
		ids = append(ids, best)
		seq = append(seq, best)
	}
	if want := g.Tok.DecodeWith(ids, tokenizer.DecodeOptions{Special: tokenizer.SpecialSkip}); got != want || len(ids) < 12 {
		t.Errorf("cached greedy %q, recomputed %q", got, want)
	}
}

// TestKNCompleter: on a corpus that is one repeated line, the trigram
// writes that line.
func TestKNCompleter(t *testing.T) {
	tk := fimTokenizer(t)
	var toks []int32
	for range 50 {
		for _, id := range tk.Encode("\treturn x + y\n", false) {
			toks = append(toks, int32(id))
		}
	}
	kn := NewKN3(toks, tk.Size())
	c := &FIMCase{Kind: "line", Prefix: "\treturn x + y\n", Middle: "\treturn x + y", Suffix: "\n"}
	got, err := KNCompleter(kn, tk)(c)
	if err != nil {
		t.Fatal(err)
	}
	if cut, _ := c.Done(got); cut != c.Middle {
		t.Errorf("trigram wrote %q", got)
	}
}

// TestRecordFIMEval: `fim-eval --record` stores its table in the model's
// manifest, a second record replaces the first (one key), and every other
// key and tensor survives byte for byte; a GGUF without a nanoserve
// manifest is refused by name.
func TestRecordFIMEval(t *testing.T) {
	v, err := tokenizer.TrainBPE([]string{"func main() {}\n"}, tokenizer.TrainOptions{VocabSize: 270, Special: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Dim: 16, Layers: 1, Heads: 2, KVHeads: 1, Hidden: 24, Vocab: len(v.Tokens), Ctx: 16, RopeTheta: 10000, NormEps: 1e-5}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := WriteGGUF(path, c, InitParams(c, 1), v, tensor.F16, Manifest{Corpus: "test", FIMRate: 0.5}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"first\n| a | 1 |\n", "second\n| a | 2 |\n"} {
		if err := RecordFIMEval(path, table); err != nil {
			t.Fatal(err)
		}
		man, ok, err := ReadManifest(path)
		if err != nil || !ok {
			t.Fatalf("manifest: ok %v, %v", ok, err)
		}
		if man.FIMEval != table || man.Corpus != "test" || man.FIMRate != 0.5 {
			t.Errorf("after recording %q: FIMEval %q, corpus %q, fim rate %v", table, man.FIMEval, man.Corpus, man.FIMRate)
		}
	}
	a, _ := gguf.Parse(before)
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gguf.Parse(after)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.KV) != len(a.KV)+1 {
		t.Errorf("%d keys after two records, want %d (one fim_eval key)", len(b.KV), len(a.KV)+1)
	}
	for i, kv := range a.KV {
		if b.KV[i].Key != kv.Key || b.KV[i].Value.String() != kv.Value.String() {
			t.Errorf("key %d: %s = %s, was %s = %s", i, b.KV[i].Key, b.KV[i].Value, kv.Key, kv.Value)
		}
	}
	for i, ti := range a.Tensors {
		if b.Tensors[i].Name != ti.Name || !bytes.Equal(b.Tensors[i].Data, ti.Data) {
			t.Errorf("tensor %s changed", ti.Name)
		}
	}

	plain := filepath.Join(t.TempDir(), "plain.gguf")
	w := gguf.NewWriter()
	w.AddKV("general.architecture", gguf.String("llama"))
	if err := w.WriteFile(plain); err != nil {
		t.Fatal(err)
	}
	if err := RecordFIMEval(plain, "x"); err == nil || !strings.Contains(err.Error(), "no nanoserve training manifest") {
		t.Errorf("recording into a file without a manifest: %v", err)
	}
}

// TestFIMPromptFits: on the built-in model (context 1024, FIM tokens),
// a case with long text on both sides gets a prompt that leaves room for
// its middle and still opens with <|fim_prefix|> — a prompt one token too
// long lost that marker to Generate's cut, and the model then saw plain
// text before <|fim_suffix|>.
func TestFIMPromptFits(t *testing.T) {
	p, err := defaultmodel.Path()
	if err != nil {
		t.Fatalf("built-in model: %v", err)
	}
	g, err := LoadGreedy(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	line := "\tx := compute(a, b, c) // a line of Go\n"
	f := g.Tok.FIM()
	for _, spm := range []bool{false, true} {
		g.SPM = spm
		first := f.Pre.ID
		if spm {
			first = f.Suf.ID
		}
		for _, kind := range []string{"line", "block"} {
			c := &FIMCase{Kind: kind, Prefix: strings.Repeat(line, 200), Middle: line, Suffix: strings.Repeat(line, 200)}
			ids, err := g.fimPrompt(c)
			if err != nil {
				t.Fatal(err)
			}
			if room := g.M.ContextLen - c.MaxTokens(); len(ids) > room {
				t.Errorf("spm=%v %s: prompt of %d tokens, more than the %d the context leaves beside %d to generate", spm, kind, len(ids), room, c.MaxTokens())
			}
			if ids[0] != first || ids[len(ids)-1] != f.Mid.ID {
				t.Errorf("spm=%v %s: prompt starts with %d and ends with %d, want %d ... <|fim_middle|> %d", spm, kind, ids[0], ids[len(ids)-1], first, f.Mid.ID)
			}
		}
	}
}
