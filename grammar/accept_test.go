package grammar

import (
	"testing"
)

// An end-of-generation token ends the output only where the grammar
// accepts: before that Accept refuses it and leaves the state as it was,
// so the output can still be completed (a matcher that took EOS early
// would end structured output that does not parse), and Mask never offers
// it.
func TestAcceptEOSOnlyWhenComplete(t *testing.T) {
	v, eog := byteVocab("ab")
	eos := eog[0]
	for _, c := range []struct {
		name string
		g    func() (*Grammar, error)
		text string // a complete output, fed one byte (= one token) at a time
	}{
		{"regex", func() (*Grammar, error) { return FromRegex(`ab(cd)?`) }, "abcd"},
		{"schema", func() (*Grammar, error) {
			return FromJSONSchema([]byte(`{"type":"object","properties":{"k":{"type":"integer"}},"required":["k"]}`))
		}, `{"k":7}`},
	} {
		g, err := c.g()
		if err != nil {
			t.Fatal(err)
		}
		con, err := Compile(g, v)
		if err != nil {
			t.Fatal(err)
		}
		const budget = 64
		m, err := con.NewMatcher(budget)
		if err != nil {
			t.Fatal(err)
		}
		mask := make([]uint64, v.MaskWords())
		for i := 0; i <= len(c.text); i++ {
			complete := matches(t, con, c.text[:i])
			m.Mask(mask)
			if offered := mask[eos>>6]>>(eos&63)&1 == 1; offered != complete {
				t.Fatalf("%s: after %q EOS offered=%v, complete=%v", c.name, c.text[:i], offered, complete)
			}
			if !complete {
				if err := m.Accept(eos); err == nil {
					t.Fatalf("%s: EOS accepted after %q, an incomplete output", c.name, c.text[:i])
				}
				if m.Ended() || m.Remaining() != budget-i {
					t.Fatalf("%s: a refused EOS changed the matcher (ended %v, %d tokens left)", c.name, m.Ended(), m.Remaining())
				}
			}
			if i < len(c.text) {
				if err := m.Accept(int(c.text[i])); err != nil {
					t.Fatalf("%s: after a refused EOS, byte %d of %q: %v", c.name, i, c.text, err)
				}
			}
		}
		if err := m.Accept(eos); err != nil || !m.Ended() {
			t.Fatalf("%s: EOS after the complete %q: %v (ended %v)", c.name, c.text, err, m.Ended())
		}
		if err := m.Accept('a'); err == nil {
			t.Fatalf("%s: a token after EOS was accepted", c.name)
		}
	}
}
