package defaultmodel

import (
	"errors"
	"testing"

	"nanoserve/gguf"
	"nanoserve/kvcache"
	"nanoserve/model"
)

// TestBuiltin loads the embedded model through the inference engine and
// checks its manifest records a release past the KN trigram baseline.
func TestBuiltin(t *testing.T) {
	p, err := Path()
	if errors.Is(err, ErrMissing) {
		t.Skip("this build has no built-in model")
	}
	if err != nil {
		t.Fatal(err)
	}
	if p2, err := Path(); err != nil || p2 != p {
		t.Fatalf("second Path() = %q, %v; want %q", p2, err, p)
	}
	b, _ := Bytes()
	if len(b) > 20<<20 {
		t.Errorf("built-in model is %d bytes, over the 20 MB budget", len(b))
	}
	f, err := gguf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	bpb, err1 := f.Float("nanoserve.train.heldout_bpb")
	base, err2 := f.Float("nanoserve.train.baseline_kn3_bpb")
	f.Close()
	if err1 != nil || err2 != nil || !(bpb < base) {
		t.Errorf("manifest: held-out %v bits/byte (%v), baseline %v (%v)", bpb, err1, base, err2)
	}
	m, err := model.Load(p, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Tokenizer == nil {
		t.Fatal("no tokenizer")
	}
	s := "func main() {\n\tfmt.Println(\"hi\")\n}\n"
	if got := m.Tokenizer.Decode(m.Tokenizer.Encode(s, false)); got != s {
		t.Errorf("tokenizer round trip %q", got)
	}
	// Greedy completion of a Go prompt produces text.
	for _, prompt := range []string{"func main() {\n\t", "if err != nil {\n\t\treturn "} {
		ids := m.Tokenizer.Encode(prompt, false)
		c, _ := m.NewCache(0)
		seq := &kvcache.Seq{}
		c.Reserve(seq, m.ContextLen)
		var out []int
		b := model.Batch{}
		for i, id := range ids {
			b.Tokens, b.Pos, b.Seq, b.Output = append(b.Tokens, id), append(b.Pos, i), append(b.Seq, seq), append(b.Output, i == len(ids)-1)
		}
		for pos := len(ids); len(out) < 48; pos++ {
			lg, err := m.Forward(b, c)
			if err != nil {
				t.Fatal(err)
			}
			next := 0
			for i, v := range lg {
				if v > lg[next] {
					next = i
				}
			}
			if m.Tokenizer.IsEOG(next) {
				break
			}
			out = append(out, next)
			b = model.Batch{Tokens: []int{next}, Pos: []int{pos}, Seq: []*kvcache.Seq{seq}, Output: []bool{true}}
		}
		if len(out) == 0 {
			t.Errorf("%q: nothing generated", prompt)
		}
		t.Logf("%q -> %q", prompt, m.Tokenizer.Decode(out))
	}
}
