package train

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"nanoserve/kvcache"
	"nanoserve/model"
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
		best := 0
		for j, v := range lg {
			if v > lg[best] {
				best = j
			}
		}
		if g.Tok.IsEOG(best) {
			break
		}
		ids = append(ids, best)
		seq = append(seq, best)
	}
	if want := g.Tok.Decode(ids); got != want || len(ids) < 12 {
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
