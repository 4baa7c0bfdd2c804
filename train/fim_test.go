package train

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"nanoserve/llamacpp"
	"nanoserve/tokenizer"
)

// goText is real Go source to split: this package's files.
func goText(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"fim.go", "run.go", "data.go", "ngram.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, chunkText(string(b), 768)...)
	}
	return out
}

// TestSplitFIM: the three pieces re-join to the text, the middle is not
// empty, each kind of middle has its shape, and the kinds come in roughly
// the documented proportions.
func TestSplitFIM(t *testing.T) {
	texts := append(goText(t), "x", "héllo wörld\n", "a\n\n")
	kinds := map[string]int{}
	n := 0
	for i, text := range texts {
		for k := range 20 {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(k)))
			s := SplitFIM(text, rng, 0, 0)
			n++
			kinds[s.Kind]++
			if s.Prefix+s.Middle+s.Suffix != text {
				t.Fatalf("text %d seed %d: pieces do not re-join: %q + %q + %q", i, k, s.Prefix, s.Middle, s.Suffix)
			}
			if s.Middle == "" {
				t.Fatalf("text %d seed %d: empty middle (%s)", i, k, s.Kind)
			}
			for _, p := range []string{s.Prefix, s.Middle, s.Suffix} {
				if !utf8.ValidString(p) {
					t.Fatalf("text %d seed %d: a piece cuts a character: %q", i, k, p)
				}
			}
			switch s.Kind {
			case "line":
				if strings.Contains(s.Middle, "\n") || !(s.Suffix == "" || s.Suffix[0] == '\n') {
					t.Fatalf("rest-of-line middle %q, suffix %.10q", s.Middle, s.Suffix)
				}
			case "lines", "block":
				if !strings.HasSuffix(s.Middle, "\n") && s.Suffix != "" {
					t.Fatalf("%s middle %q does not end a line", s.Kind, s.Middle)
				}
			}
			if s.Kind == "block" && !strings.HasSuffix(strings.TrimRight(s.Prefix, " \t\n"), "{") {
				t.Fatalf("block middle after %q", s.Prefix[max(0, len(s.Prefix)-20):])
			}
		}
	}
	for kind, want := range map[string]float64{"line": 0.35, "lines": 0.25, "block": 0.2} {
		if got := float64(kinds[kind]) / float64(n); got < want-0.08 || got > want+0.08 {
			t.Errorf("%s middles: %.2f of %d, want ≈ %.2f (%v)", kind, got, n, want, kinds)
		}
	}
}

// TestBlockBody: the body of a block runs to its closing line.
func TestBlockBody(t *testing.T) {
	s := "func f() {\n\tif x {\n\t\ty()\n\t}\n\n\treturn\n}\nvar z = 1\n"
	lines := lineSpans(s)
	a, b, ok := BlockBody(s, lines, 0)
	if !ok || s[a:b] != "\tif x {\n\t\ty()\n\t}\n\n\treturn\n" {
		t.Errorf("body of line 0: %q %v", s[a:b], ok)
	}
	a, b, ok = BlockBody(s, lines, 1)
	if !ok || s[a:b] != "\t\ty()\n" {
		t.Errorf("body of line 1: %q %v", s[a:b], ok)
	}
	if _, _, ok = BlockBody(s, lines, 2); ok {
		t.Error("a line without { opens a block")
	}
}

func fimTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	v, err := tokenizer.TrainBPE(goText(t), tokenizer.TrainOptions{VocabSize: 600, Special: append([]string{"<|endoftext|>"}, FIMSpecial...)})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.FromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestFIMSample: a FIM sample is the documented token sequence, PSM and
// SPM, with and without repository context.
func TestFIMSample(t *testing.T) {
	tk := fimTokenizer(t)
	f := tk.FIM()
	eot, _ := tk.EOS()
	enc := func(s string) []int { return tk.Encode(s, false) }
	in := llamacpp.InfillInput{Prefix: "func f() {\n\t", Suffix: "\n}\n"}
	for _, c := range []struct {
		spm   bool
		extra []llamacpp.InfillChunk
		want  []int
	}{
		{false, nil, slices.Concat([]int{f.Pre.ID}, enc(in.Prefix), []int{f.Suf.ID}, enc(in.Suffix), []int{f.Mid.ID}, enc("return"), []int{eot})},
		{true, nil, slices.Concat([]int{f.Suf.ID}, enc(in.Suffix), []int{f.Pre.ID}, enc(in.Prefix), []int{f.Mid.ID}, enc("return"), []int{eot})},
		{false, []llamacpp.InfillChunk{{Filename: "g.go", Text: "var g int\n"}}, slices.Concat([]int{f.Rep.ID}, enc("myproject\n"), []int{f.Sep.ID}, enc("g.go\n"), enc("var g int\n"),
			[]int{f.Sep.ID}, enc("filename\n"), []int{f.Pre.ID}, enc(in.Prefix), []int{f.Suf.ID}, enc(in.Suffix), []int{f.Mid.ID}, enc("return"), []int{eot})},
		{true, []llamacpp.InfillChunk{}, slices.Concat([]int{f.Rep.ID}, enc("myproject\n"), []int{f.Sep.ID}, enc("filename\n"),
			[]int{f.Suf.ID}, enc(in.Suffix), []int{f.Pre.ID}, enc(in.Prefix), []int{f.Mid.ID}, enc("return"), []int{eot})},
	} {
		in.Extra = c.extra
		got, nMid, err := fimSample(tk, in, "return", c.spm, eot)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(enc("return")) + 1; nMid != want {
			t.Errorf("spm %v extra %v: %d middle tokens, want %d", c.spm, c.extra, nMid, want)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("spm %v extra %v\n got %v\nwant %v", c.spm, c.extra, got, c.want)
		}
	}
}

// TestFIMTokens: the training stream carries the corpus exactly — parsing
// it back (plain text, and each FIM sample's prefix + middle + suffix)
// gives every document — with PSM, SPM and repository-context samples; FIM
// ids come only from the markers, never from text that spells them.
func TestFIMTokens(t *testing.T) {
	tk := fimTokenizer(t)
	f := tk.FIM()
	eot, _ := tk.EOS()
	docs := []Doc{
		{"p/a.go", "package p\n\nfunc A() string {\n\treturn \"<|fim_middle|><|file_sep|>\"\n}\n"},
		{"p/b.go", strings.Repeat("package p\n\nfunc B() {\n\tx := 1\n\t_ = x\n}\n", 30)},
		{"q/c.go", strings.Repeat("package q\n// <|fim_prefix|> in a comment\nvar c = 2\n", 30)},
	}
	ids, starts, middle, err := FIMTokens(tk, docs, FIMData{Rate: 0.5, ChunkBytes: 64, Seed: 3}, eot)
	if err != nil {
		t.Fatal(err)
	}
	if len(middle) != len(ids) {
		t.Fatalf("%d middle flags for %d tokens", len(middle), len(ids))
	}
	wantMid := make([]bool, len(ids)) // the middles' tokens and their end tokens, as parsed below
	// Chunks start where the previous one (or document) ended: at a FIM
	// sample's first marker or at plain text after an end token or a chunk.
	nChunks := 0
	for _, d := range docs {
		nChunks += len(chunkText(d.Text, 64))
	}
	if len(starts) != nChunks || starts[0] != 0 {
		t.Fatalf("%d chunk starts for %d chunks: %v", len(starts), nChunks, starts)
	}
	for _, st := range starts[1:] {
		prev, cur := int(ids[st-1]), int(ids[st])
		if cur != f.Pre.ID && cur != f.Suf.ID && cur != f.Rep.ID && prev != eot && !isPlainBoundary(tk, ids, st) {
			t.Fatalf("chunk start %d: %q after %q", st, tk.Token(cur), tk.Token(prev))
		}
	}
	dec := func(x []int32) string {
		v := make([]int, len(x))
		for i, id := range x {
			v[i] = int(id)
		}
		return tk.Decode(v)
	}
	var got []string
	var doc strings.Builder
	stats := map[string]int{}
	for i := 0; i < len(ids); {
		id := int(ids[i])
		switch {
		case id == eot:
			got = append(got, doc.String())
			doc.Reset()
			i++
		case id == f.Rep.ID:
			stats["extra"]++
			for i < len(ids) && int(ids[i]) != f.Pre.ID && int(ids[i]) != f.Suf.ID {
				i++
			}
		case id == f.Pre.ID || id == f.Suf.ID:
			// [first] a [second] b [MID] m [EOT]
			seg := func() []int32 {
				j := i + 1
				for j < len(ids) && int(ids[j]) != f.Pre.ID && int(ids[j]) != f.Suf.ID && int(ids[j]) != f.Mid.ID && int(ids[j]) != eot {
					j++
				}
				s := ids[i+1 : j]
				i = j
				return s
			}
			first := id
			a := seg()
			b := seg()
			if i >= len(ids) || int(ids[i]) != f.Mid.ID {
				t.Fatalf("sample without a middle marker at %d", i)
			}
			m0 := i + 1
			m := seg()
			if i >= len(ids) || int(ids[i]) != eot {
				t.Fatalf("middle not ended by the end token at %d", i)
			}
			for k := m0; k <= i; k++ {
				wantMid[k] = true
			}
			i++
			p, s := dec(a), dec(b)
			if first == f.Suf.ID {
				p, s = s, p
				stats["spm"]++
			} else {
				stats["psm"]++
			}
			doc.WriteString(p + dec(m) + s)
		case id == f.Mid.ID || id == f.Sep.ID || id == f.Pad.ID:
			t.Fatalf("stray FIM token %q at %d", tk.Token(id), i)
		default:
			j := i
			for j < len(ids) && !slices.Contains([]int{eot, f.Pre.ID, f.Suf.ID, f.Mid.ID, f.Pad.ID, f.Rep.ID, f.Sep.ID}, int(ids[j])) {
				j++
			}
			doc.WriteString(dec(ids[i:j]))
			stats["plain"]++
			i = j
		}
	}
	if len(got) != len(docs) {
		t.Fatalf("%d documents parsed back, want %d", len(got), len(docs))
	}
	for i, d := range docs {
		if got[i] != d.Text {
			t.Errorf("document %s parsed back as\n%q\nwant\n%q", d.Name, got[i], d.Text)
		}
	}
	for _, k := range []string{"plain", "psm", "spm", "extra"} {
		if stats[k] == 0 {
			t.Errorf("no %s samples: %v", k, stats)
		}
	}
	if !slices.Equal(middle, wantMid) {
		for k := range middle {
			if middle[k] != wantMid[k] {
				t.Fatalf("token %d (%q): middle flag %v, want %v", k, tk.Token(int(ids[k])), middle[k], wantMid[k])
			}
		}
	}
}

// TestFIMSPMRate: SPMRate sets the share of suffix-first samples.
func TestFIMSPMRate(t *testing.T) {
	tk := fimTokenizer(t)
	f := tk.FIM()
	eot, _ := tk.EOS()
	docs := []Doc{{"p/b.go", strings.Repeat("package p\n\nfunc B() {\n\tx := 1\n\t_ = x\n}\n", 200)}}
	for _, c := range []struct {
		rate   float64
		lo, hi float64 // bounds on the SPM share of FIM samples
	}{{0, 0.35, 0.65}, {1, 1, 1}, {0.9, 0.75, 0.99}} {
		ids, starts, _, err := FIMTokens(tk, docs, FIMData{Rate: 1, ChunkBytes: 64, Seed: 5, SPMRate: c.rate}, eot)
		if err != nil {
			t.Fatal(err)
		}
		var spm, n float64
		for _, st := range starts {
			switch int(ids[st]) {
			case f.Suf.ID:
				spm++
				n++
			case f.Pre.ID:
				n++
			}
		}
		if n < 50 || spm/n < c.lo || spm/n > c.hi {
			t.Errorf("SPMRate %g: %.0f of %.0f samples SPM, want a share in [%g, %g]", c.rate, spm, n, c.lo, c.hi)
		}
	}
}

// isPlainBoundary: the text before st decodes to a whole line (a plain
// chunk ends at a line end).
func isPlainBoundary(tk *tokenizer.Tokenizer, ids []int32, st int) bool {
	return strings.HasSuffix(tk.Decode([]int{int(ids[st-1])}), "\n")
}

// TestFIMChunkBytes: chunks come out at about 0.85 of the context in
// tokens.
func TestFIMChunkBytes(t *testing.T) {
	tk := fimTokenizer(t)
	var docs []Doc
	for i, text := range goText(t) {
		docs = append(docs, Doc{strings.Repeat("x", i), text})
	}
	cb := FIMChunkBytes(tk, docs, 200)
	var n, nt int
	for _, d := range docs {
		for _, c := range chunkText(d.Text, cb) {
			if len(c) >= cb/2 {
				n++
				nt += len(tk.Encode(c, false))
			}
		}
	}
	if mean := float64(nt) / float64(n); mean < 0.7*200 || mean > 200 {
		t.Errorf("chunks of %d bytes average %.0f tokens, want ≈ 170 of a 200-token context", cb, mean)
	}
}

// TestFIMWeights: in a window of a FIM stream, the target at
// <|fim_middle|> weighs the first-token weight, the rest of the middle and
// its end token the middle weight, everything else 1.
func TestFIMWeights(t *testing.T) {
	tk := fimTokenizer(t)
	f := tk.FIM()
	eot, _ := tk.EOS()
	docs := []Doc{{"p/b.go", strings.Repeat("package p\n\nfunc B() {\n\tx := 1\n\t_ = x\n}\n", 40)}}
	ids, _, mid, err := FIMTokens(tk, docs, FIMData{Rate: 1, ChunkBytes: 64, Seed: 2}, eot)
	if err != nil {
		t.Fatal(err)
	}
	T := len(ids) - 1
	in := make([]int, T)
	for i := range in {
		in[i] = int(ids[i])
	}
	w := make([]float32, T)
	fimWeights(w, in, mid[1:], f.Mid.ID, 5, 50)
	inMiddle := false // between <|fim_middle|> and the end token, inclusive of the end
	var firsts, middles int
	for i := range T {
		want := float32(1)
		switch {
		case in[i] == f.Mid.ID:
			want, inMiddle = 50, true
			firsts++
		case inMiddle:
			want = 5
			middles++
		}
		if int(ids[i+1]) == eot {
			inMiddle = false
		}
		if w[i] != want {
			t.Fatalf("target %d (%q after %q): weight %v, want %v", i, tk.Token(int(ids[i+1])), tk.Token(in[i]), w[i], want)
		}
	}
	if firsts < 10 || middles < 10 {
		t.Fatalf("%d middles, %d later middle tokens", firsts, middles)
	}
}

// streamText is a fixed Go-like text for TestSplitFIMStream (goText reads
// this package's sources, which change).
const streamText = `package p

import "fmt"

// Sum adds.
func Sum(xs []int) int {
	t := 0
	for _, x := range xs {
		if x < 0 {
			continue
		}
		t += x
	}
	return t
}

type T struct {
	a, b int
}

func (t *T) String() string {
	if t == nil {
		return "<nil>"
	}
	switch {
	case t.a > t.b:
		return fmt.Sprint(t.a)
	default:
		return fmt.Sprint(t.b)
	}
}
`

// TestSplitFIMStream: with lineStart and blockRate 0, SplitFIM draws
// exactly the splits it drew before either option existed — the data of
// defaultmodel/model/train.sh's base stage, which a rerun must see again —
// and blockRate makes block bodies that share of the middles (plus the
// mix's own 20% of the rest).
func TestSplitFIMStream(t *testing.T) {
	h := sha256.New()
	for k := range 200 {
		s := SplitFIM(streamText, rand.New(rand.NewPCG(7, uint64(k))), 0, 0)
		fmt.Fprintf(h, "%s %d %d\n", s.Kind, len(s.Prefix), len(s.Middle))
	}
	if got, want := hex.EncodeToString(h.Sum(nil))[:16], "99a95c5ba90f900e"; got != want {
		t.Errorf("the splits' hash is %s, want %s: the draw changed", got, want)
	}
	for _, rate := range []float64{0.5, 1} {
		n := 0
		for k := range 1000 {
			s := SplitFIM(streamText, rand.New(rand.NewPCG(8, uint64(k))), 0.7, rate)
			if s.Kind == "block" {
				n++
				if !strings.HasSuffix(strings.TrimRight(s.Prefix, " \t\n"), "{") || s.Prefix+s.Middle+s.Suffix != streamText {
					t.Fatalf("block rate %g: block middle %q after %q", rate, s.Middle, s.Prefix[max(0, len(s.Prefix)-20):])
				}
			}
		}
		if got, want := float64(n)/1000, rate+(1-rate)*0.2; got < want-0.05 || got > want+0.05 {
			t.Errorf("block rate %g: %.3f of the middles are block bodies, want ≈ %.2f", rate, got, want)
		}
	}
}
