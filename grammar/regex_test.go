package grammar

import (
	"math/rand/v2"
	"regexp"
	"testing"
	"unicode/utf8"
)

// Regex grammars against Go's regexp as the oracle (full match).
func TestRegexOracle(t *testing.T) {
	res := []string{`[a-z]{2,5}@example\.(com|org)`, `\d{3}-\d{2}-\d{4}`, `(ab|cd)*e?`, `[^0-9\n]{1,4}x`, `-?(0|[1-9]\d*)(\.\d+)?`, `\w+\s\W`, `héllo|wörld|日本`, `a.b`, `^[A-F0-9]{4}$`}
	for _, which := range []int{0, 1} {
		tv := realVocab(t, which)
		for i, re := range res {
			g, err := FromRegex(re)
			if err != nil {
				t.Fatalf("%s: %v", re, err)
			}
			c, err := Compile(g, tv.v)
			if err != nil {
				t.Fatal(err)
			}
			oracle := regexp.MustCompile(`^(?:` + re + `)$`)
			rng := rand.New(rand.NewPCG(uint64(i), uint64(which)))
			for k := 0; k < 8; k++ {
				out := walk(t, c, tv, c.MinTokens()+rng.IntN(20), rng, k%2 == 1)
				if !oracle.Match(out) {
					t.Fatalf("%s: output %q does not match", re, out)
				}
			}
		}
	}
}

func TestChoices(t *testing.T) {
	tv := realVocab(t, 0)
	choices := []string{"yes", "no", "maybe so", "ja"}
	g, err := FromChoices(choices)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(g, tv.v)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	seen := map[string]bool{}
	for k := 0; k < 60; k++ {
		out := string(walk(t, c, tv, 0, rng, false))
		seen[out] = true
	}
	for s := range seen {
		if s != "yes" && s != "no" && s != "maybe so" && s != "ja" {
			t.Fatalf("output %q is not a choice", s)
		}
	}
	if len(seen) < 3 {
		t.Fatalf("only %v reached", seen)
	}
}

// Characters outside ASCII are spelt, on the Llama-2 vocabulary, by
// byte-fallback tokens <0xNN> that each hold a fraction of a UTF-8
// sequence, and by multi-byte pieces: the byte-level automaton accepts
// both, and the output is always whole characters.
func TestPartialUTF8AndByteFallback(t *testing.T) {
	tv := realVocab(t, 0)
	g, err := ParseGBNF(`root ::= [^\x00-\x7F]{3} "!"`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(g, tv.v)
	if err != nil {
		t.Fatal(err)
	}
	// Byte-fallback token <0xE6> (the lead byte of 日) is allowed at the start.
	m, _ := c.NewMatcher(0)
	mask := make([]uint64, tv.v.MaskWords())
	mustMask(t, m, mask)
	lead := -1
	for id, b := range tv.toks {
		if len(b) == 1 && b[0] == 0xE6 {
			lead = id
		}
	}
	if lead < 0 || mask[lead>>6]>>(lead&63)&1 == 0 {
		t.Fatalf("byte-fallback token for 0xE6 (id %d) not allowed", lead)
	}
	if err := m.Accept(lead); err != nil {
		t.Fatal(err)
	}
	mustMask(t, m, mask)
	for id, b := range tv.toks {
		allowed := mask[id>>6]>>(id&63)&1 != 0
		if allowed && len(b) > 0 && (b[0] < 0x80 || b[0] > 0xBF) {
			t.Fatalf("after a lead byte, token %d %q (not a continuation) is allowed", id, b)
		}
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for k := 0; k < 20; k++ {
		out := walk(t, c, tv, c.MinTokens()+k, rng, k%2 == 0)
		if !utf8.Valid(out) || utf8.RuneCount(out) != 4 {
			t.Fatalf("output %q: want 3 non-ASCII characters and !", out)
		}
	}
}
