package grammar

import (
	"math/rand/v2"
	"testing"
)

// FuzzGBNF: the parser never panics; a grammar it accepts compiles or
// errors cleanly, and a short walk over a byte vocabulary never errors.
func FuzzGBNF(f *testing.F) {
	for _, s := range []string{arithGBNF, jsonGBNF, goSubsetGBNF, `root ::= [^a-z]+ "x"{2,3}`, `root ::= ("a" | b)* b ::= "\u00e9"?`, `root ::= . "#" # c`} {
		f.Add(s)
	}
	v, _ := byteVocab("ab", "\"", "{}")
	f.Fuzz(func(t *testing.T, src string) {
		g, err := ParseGBNF(src)
		if err != nil {
			return
		}
		c, err := Compile(g, v)
		if err != nil {
			return
		}
		fuzzWalk(t, c, v)
	})
}

// FuzzSchema: the schema compiler never panics on any JSON.
func FuzzSchema(f *testing.F) {
	cov := map[string]int{}
	for i := 0; i < 30; i++ {
		f.Add(genSchema(uint64(i), cov))
	}
	f.Add([]byte(`{"type":"integer","minimum":-5,"exclusiveMaximum":1234}`))
	v, _ := byteVocab()
	f.Fuzz(func(t *testing.T, schema []byte) {
		g, err := FromJSONSchema(schema)
		if err != nil {
			return
		}
		c, err := Compile(g, v)
		if err != nil {
			return
		}
		fuzzWalk(t, c, v)
	})
}

func fuzzWalk(t *testing.T, c *Constraint, v *Vocab) {
	budget := c.MinTokens() + 5
	if budget > 2000 {
		return
	}
	m, err := c.NewMatcher(budget)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mask := make([]uint64, v.MaskWords())
	for m.Remaining() > 0 && !m.Ended() {
		n := mustMask(t, m, mask)
		if n == 0 {
			t.Fatalf("empty mask with %d tokens left", m.Remaining())
		}
		if err := m.Accept(pick(mask, n, rng, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if !m.Accepting() {
		t.Fatal("budget spent before acceptance")
	}
}
