package grammar

import (
	"math/rand/v2"
	"testing"
)

// shortestCompletion is the fewest bytes that complete text to an
// accepted output (-1: none within limit), found breadth-first over the
// alphabet with fresh matchers — no cost tables, no masks.
func shortestCompletion(t *testing.T, c *Constraint, text string, alphabet string, limit int) int {
	t.Helper()
	viable := func(s string) bool {
		m, err := c.NewMatcher(0)
		if err != nil {
			t.Fatal(err)
		}
		return m.AcceptBytes([]byte(s)) == nil
	}
	if !viable(text) {
		return -1
	}
	front := []string{text}
	for l := 0; l <= limit && len(front) > 0; l++ {
		var next []string
		for _, s := range front {
			if matches(t, c, s) {
				return l
			}
			for i := range len(alphabet) {
				if x := s + alphabet[i:i+1]; viable(x) {
					next = append(next, x)
				}
			}
		}
		front = next
	}
	return -1
}

// Budget masks are exact: with maxTokens M and n tokens taken, a token is
// allowed iff the shortest completion after it fits in the M−n−1 tokens
// left (one token a byte: every byte is a token), and end-of-generation
// iff the output is complete. The grammars have alternatives of different
// lengths behind multi-byte tokens, so a token can lengthen the shortest
// completion, and every budget is walked from its tightest value, so
// tokens that fit exactly — the last ones a tight max_tokens leaves — are
// checked along with those that do not.
func TestBudgetMaskExact(t *testing.T) {
	const alphabet = "abc"
	var extra []string
	for _, x := range alphabet {
		for _, y := range alphabet {
			extra = append(extra, string(x)+string(y))
			for _, z := range alphabet {
				extra = append(extra, string(x)+string(y)+string(z))
			}
		}
	}
	v, eog := byteVocab(extra...)
	eos := eog[0]
	var ids []int // the tokens over the alphabet, and their bytes
	var spell []string
	for _, s := range append([]string{"a", "b", "c"}, extra...) {
		ids = append(ids, len(spell))
		spell = append(spell, s)
	}
	id := func(i int) int {
		if len(spell[i]) == 1 {
			return int(spell[i][0])
		}
		return 256 + i - 3
	}
	rng := rand.New(rand.NewPCG(38, 2))
	mask := make([]uint64, v.MaskWords())
	checked, exact := 0, 0
	for _, re := range []string{`a(b|cccc|ccaaaaa)`, `(ab|c)(a|bbb|ccccc)`, `a{2,6}|b(ca){1,3}`, `(a|bb|ccc)(a|bb|ccc)c?`, `[ab]{1,3}c{0,5}`, `(abc)+|cb{3}`} {
		g, err := FromRegex(re)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Compile(g, v)
		if err != nil {
			t.Fatal(err)
		}
		for budget := c.MinTokens(); budget <= c.MinTokens()+6; budget++ {
			for walk := 0; walk < 4; walk++ {
				m, err := c.NewMatcher(budget)
				if err != nil {
					t.Fatalf("%s budget %d: %v", re, budget, err)
				}
				text := ""
				for n := 0; ; n++ {
					left := budget - n - 1
					m.Mask(mask)
					var allowed []int
					for i := range ids {
						tok := id(i)
						got := mask[tok>>6]>>(tok&63)&1 == 1
						cost := shortestCompletion(t, c, text+spell[i], alphabet, 12)
						want := cost >= 0 && left >= 0 && cost <= left
						if got != want {
							t.Fatalf("%s max_tokens %d after %q (%d taken): token %q (shortest completion %d, %d left) allowed=%v, want %v",
								re, budget, text, n, spell[i], cost, left, got, want)
						}
						checked++
						if want {
							allowed = append(allowed, i)
							if cost == left {
								exact++
							}
						}
					}
					complete := matches(t, c, text)
					if got := mask[eos>>6]>>(eos&63)&1 == 1; got != (complete && left >= 0) {
						t.Fatalf("%s max_tokens %d after %q: EOS allowed=%v, complete=%v", re, budget, text, got, complete)
					}
					if len(allowed) == 0 {
						if !complete {
							t.Fatalf("%s max_tokens %d: stuck after %q, incomplete", re, budget, text)
						}
						break
					}
					i := allowed[rng.IntN(len(allowed))]
					if err := m.Accept(id(i)); err != nil {
						t.Fatal(err)
					}
					text += spell[i]
				}
			}
		}
	}
	if exact == 0 {
		t.Fatal("no token fitted its budget exactly: the test checks nothing at the edge")
	}
	t.Logf("%d (state, token) pairs checked, %d fitting their budget exactly", checked, exact)
}
