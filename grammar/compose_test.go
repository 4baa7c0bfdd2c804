package grammar

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// splitWrapped reads out as w.Prefix value w.Suffix (repeated, joined by
// w.Separator, when w.Repeat) and returns the values; it fails the test
// when out has any other shape.
func splitWrapped(t *testing.T, w Wrapper, out []byte) [][]byte {
	t.Helper()
	var vals [][]byte
	rest := out
	for {
		if !bytes.HasPrefix(rest, []byte(w.Prefix)) {
			t.Fatalf("output %q: no prefix %q at %q", out, w.Prefix, rest)
		}
		rest = rest[len(w.Prefix):]
		d := json.NewDecoder(bytes.NewReader(rest))
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			t.Fatalf("output %q: no JSON value at %q: %v", out, rest, err)
		}
		n := int(d.InputOffset())
		if !bytes.Equal(v, rest[:n]) {
			t.Fatalf("output %q: JSON value %q is surrounded by space", out, rest[:n])
		}
		vals = append(vals, rest[:n])
		rest = rest[n:]
		if !bytes.HasPrefix(rest, []byte(w.Suffix)) {
			t.Fatalf("output %q: no suffix %q at %q", out, w.Suffix, rest)
		}
		rest = rest[len(w.Suffix):]
		if len(rest) == 0 {
			return vals
		}
		if !w.Repeat || !bytes.HasPrefix(rest, []byte(w.Separator)) {
			t.Fatalf("output %q: trailing %q", out, rest)
		}
		rest = rest[len(w.Separator):]
	}
}

// TestWrapProperty: seeded JSON Schemas wrapped in tool-call text (Hermes'
// repeated block; a control token before the value, matched by id on
// Qwen3 where <|im_start|> is a special token and as text on Llama-2 where
// [TOOL_CALLS] is no token), walked uniformly and greedily under tight
// budgets: every output is prefix + a value that validates + suffix.
func TestWrapProperty(t *testing.T) {
	wrappers := []Wrapper{
		{Prefix: "<tool_call>\n", Suffix: "\n</tool_call>", Repeat: true, Separator: "\n"},
		{Prefix: "[TOOL_CALLS] ", ControlTokens: []string{"[TOOL_CALLS]"}},
		{Prefix: "<|im_start|>call ", Suffix: "<|im_start|>", ControlTokens: []string{"<|im_start|>"}, Repeat: true, Separator: " "},
	}
	n := 12
	if *fullRun {
		n = 60
	}
	outputs, multi, byID := 0, 0, 0
	for _, which := range []int{0, 1} {
		tv := realVocab(t, which)
		for i := 0; i < n; i++ {
			schema := genSchema(uint64(1000+i), map[string]int{})
			g, err := FromJSONSchema(schema)
			if err != nil {
				t.Fatalf("schema %s: %v", schema, err)
			}
			v := validator(t, schema)
			for wi, w := range wrappers {
				wg, err := Wrap(g, w)
				if err != nil {
					t.Fatal(err)
				}
				c, err := Compile(wg, tv.v)
				if err != nil {
					t.Fatalf("schema %s, wrapper %d: %v", schema, wi, err)
				}
				if _, ok := tv.v.control["<|im_start|>"]; ok && wi == 2 {
					// Qwen3 holds <|im_start|> as a special token: it alone
					// may open the output.
					m, _ := c.NewMatcher(0)
					mask := make([]uint64, tv.v.MaskWords())
					if n := mustMask(t, m, mask); n != 1 {
						t.Fatalf("%s: %d tokens may start %q, want the control token alone", tv.name, n, w.Prefix)
					}
					byID++
				}
				rng := rand.New(rand.NewPCG(uint64(i), uint64(wi)))
				for k := 0; k < 4; k++ {
					budget := c.MinTokens() + []int{0, 4, 30, 120}[k]
					out := walk(t, c, tv, budget, rng, k%2 == 1)
					vals := splitWrapped(t, w, out)
					for _, val := range vals {
						checkInstance(t, v, schema, val)
					}
					outputs++
					if len(vals) > 1 {
						multi++
					}
				}
			}
		}
	}
	if byID == 0 {
		t.Error("no vocabulary held a wrapper's control token")
	}
	if multi == 0 {
		t.Error("no walk repeated a wrapped value")
	}
	t.Logf("%d wrapped outputs validated, %d with several values", outputs, multi)
}

// TestWrapControlToken: a control token in the wrapper is the one token
// allowed where it stands — by id when the vocabulary holds it as a
// special token, never spelt by ordinary text tokens — and a text token
// cannot replace it; without such a token in the vocabulary its text is
// spelt.
func TestWrapControlToken(t *testing.T) {
	g, err := FromJSONSchema([]byte(`{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}`))
	if err != nil {
		t.Fatal(err)
	}
	toks := [][]byte{[]byte("[TOOL_CALLS]"), []byte("[TOOL"), []byte("_CALLS]"), []byte(" "), []byte("["), []byte("]"), []byte("1"), []byte(","), []byte("</s>")}
	special := []bool{true, false, false, false, false, false, false, false, true}
	for b := 0; b < 256; b++ { // every byte alone, so any text can be spelt
		toks, special = append(toks, []byte{byte(b)}), append(special, false)
	}
	voc, err := NewVocab(toks, special, []int{8})
	if err != nil {
		t.Fatal(err)
	}
	w := Wrapper{Prefix: "[TOOL_CALLS] ", ControlTokens: []string{"[TOOL_CALLS]"}}
	wg, err := Wrap(g, w)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(wg, voc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.NewMatcher(0)
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]uint64, voc.MaskWords())
	if n := mustMask(t, m, mask); n != 1 || mask[0] != 1 {
		t.Fatalf("first mask %b (%d tokens), want only the control token 0", mask[0], n)
	}
	if err := m.Accept(1); err == nil {
		t.Fatal("text token [TOOL accepted in place of the control token")
	}
	for _, id := range []int{0, 3, 4, 6, 5} {
		if err := m.Accept(id); err != nil {
			t.Fatalf("Accept(%d): %v", id, err)
		}
	}
	if !m.Accepting() {
		t.Fatal("[TOOL_CALLS] [1] not accepted")
	}
	if m.Accept(0) == nil {
		t.Fatal("control token accepted where the grammar has none")
	}
	// Budget: the control token plus " [1]" is 5 tokens.
	if got := c.MinTokens(); got != 5 {
		t.Errorf("MinTokens %d, want 5", got)
	}
	m, _ = c.NewMatcher(5)
	if n := mustMask(t, m, mask); n != 1 || mask[0] != 1 {
		t.Fatalf("mask at a budget of 5: %b", mask[0])
	}
	if _, err := c.NewMatcher(4); err == nil {
		t.Error("max_tokens 4 accepted for a 5-token shortest output")
	}

	// A repeated block may start again only if it still fits: after
	// "[TOOL_CALLS][1]" with one token left, end-of-generation alone.
	rg, err := Wrap(g, Wrapper{Prefix: "[TOOL_CALLS]", Repeat: true, ControlTokens: []string{"[TOOL_CALLS]"}})
	if err != nil {
		t.Fatal(err)
	}
	if c, err = Compile(rg, voc); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{5, 0} {
		m, _ = c.NewMatcher(budget)
		for _, id := range []int{0, 4, 6, 5} {
			if err := m.Accept(id); err != nil {
				t.Fatalf("Accept(%d): %v", id, err)
			}
		}
		mustMask(t, m, mask)
		if again := mask[0]&1 != 0; again != (budget == 0) || mask[0]>>8&1 == 0 {
			t.Errorf("budget %d: mask %b after [TOOL_CALLS][1]: want end-of-generation, and the control token only without a budget", budget, mask[0])
		}
	}

	// The same wrapper on a vocabulary without the control token: the text
	// is spelt.
	special[0] = false
	voc, _ = NewVocab(toks, special, []int{8})
	if c, err = Compile(wg, voc); err != nil {
		t.Fatal(err)
	}
	m, _ = c.NewMatcher(0)
	if mustMask(t, m, mask); mask[0]&0b11 != 0b11 {
		t.Fatalf("text vocabulary: mask %b, want [TOOL_CALLS] and [TOOL allowed", mask[0])
	}
	if err := m.AcceptBytes([]byte("[TOOL_CALLS] [1,1]")); err != nil || !m.Accepting() {
		t.Fatalf("text form: %v", err)
	}
}

// TestWrapNames: a wrapped grammar's rules do not collide with the
// wrapper's, whatever the inner grammar names them.
func TestWrapNames(t *testing.T) {
	g, err := ParseGBNF(`root ::= value "x" | "y"` + "\n" + `value ::= "v" root?`)
	if err != nil {
		t.Fatal(err)
	}
	wg, err := Wrap(g, Wrapper{Prefix: "<", Suffix: ">", Repeat: true, Separator: ","})
	if err != nil {
		t.Fatal(err)
	}
	tv, _ := byteVocab()
	c, err := Compile(wg, tv)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<y>", "<vx>,<vvyxx>", "<vvxx>"} {
		m, _ := c.NewMatcher(0)
		if err := m.AcceptBytes([]byte(s)); err != nil || !m.Accepting() {
			t.Errorf("%q: %v accepting=%v", s, err, m.Accepting())
		}
	}
	for _, s := range []string{"y", "<y>,", "<v>", "<y><y>"} {
		m, _ := c.NewMatcher(0)
		if err := m.AcceptBytes([]byte(s)); err == nil && m.Accepting() {
			t.Errorf("%q accepted", s)
		}
	}
	if _, err := Wrap(g, Wrapper{ControlTokens: []string{""}}); err == nil || !strings.Contains(err.Error(), "empty control token") {
		t.Errorf("empty control token: %v", err)
	}
}
