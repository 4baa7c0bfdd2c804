package grammar

import (
	"math/rand/v2"
	"testing"
)

func byteVocab(extra ...string) (*Vocab, []int) {
	var toks [][]byte
	for b := 0; b < 256; b++ {
		toks = append(toks, []byte{byte(b)})
	}
	for _, e := range extra {
		toks = append(toks, []byte(e))
	}
	toks = append(toks, []byte("</s>"))
	eos := len(toks) - 1
	v, err := NewVocab(toks, nil, []int{eos})
	if err != nil {
		panic(err)
	}
	return v, []int{eos}
}

func TestSmoke(t *testing.T) {
	g, err := ParseGBNF(`root ::= expr
expr ::= term (("+"|"-") term)*
term ::= [0-9]+ | "(" expr ")"`)
	if err != nil {
		t.Fatal(err)
	}
	v, eos := byteVocab("12", "+(", ")+", "((", "9)")
	c, err := Compile(g, v)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 20; k++ {
		m, err := c.NewMatcher(12)
		if err != nil {
			t.Fatal(err)
		}
		mask := make([]uint64, v.MaskWords())
		var out []byte
		for {
			if m.Remaining() == 0 {
				if !m.Accepting() {
					t.Fatalf("budget spent before acceptance: %q", out)
				}
				break
			}
			n := m.Mask(mask)
			if n == 0 {
				t.Fatalf("empty mask after %q", out)
			}
			var ids []int
			for id := 0; id < v.Size(); id++ {
				if mask[id>>6]>>(id&63)&1 != 0 {
					ids = append(ids, id)
				}
			}
			id := ids[rng.IntN(len(ids))]
			if err := m.Accept(id); err != nil {
				t.Fatal(err)
			}
			if id == eos[0] {
				break
			}
			out = append(out, v.tokens[id]...)
		}
		t.Logf("%q", out)
	}
}
