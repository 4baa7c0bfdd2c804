package engine

import (
	"context"
	"math"
	"testing"

	"nanoserve/grammar"
)

// A request's stop ids are end-of-generation for the grammar: masked until
// the output is complete, allowed once it is (a stop token drawn early
// would end constrained output that does not parse).
func TestGrammarProcessorMasksStopUntilComplete(t *testing.T) {
	toks := make([][]byte, 0, 258)
	for b := range 256 {
		toks = append(toks, []byte{byte(b)})
	}
	const eos, stop = 256, 257
	toks = append(toks, []byte("</s>"), []byte("<|end|>"))
	special := make([]bool, len(toks))
	special[eos], special[stop] = true, true
	v, err := grammar.NewVocab(toks, special, []int{eos})
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.FromRegex(`ab(c)?`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := grammar.Compile(g, v)
	if err != nil {
		t.Fatal(err)
	}
	p, err := GrammarProcessor(c, 0, []int{stop})
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		next     byte // accepted after the check
		complete bool
	}{{'a', false}, {'b', false}, {'c', true}, {0, true}} {
		logits := make([]float32, len(toks))
		if err := p.Process(logits); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int{eos, stop} {
			if allowed := !math.IsInf(float64(logits[id]), -1); allowed != step.complete {
				t.Fatalf("step %d: id %d allowed=%v, output complete=%v", i, id, allowed, step.complete)
			}
		}
		if step.next != 0 {
			if math.IsInf(float64(logits[step.next]), -1) {
				t.Fatalf("step %d: %q masked", i, step.next)
			}
			if err := p.Accept(int(step.next)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Accept(stop); err != nil {
		t.Fatalf("stop id once complete: %v", err)
	}
}

// The constraint cache tells kinds apart: the same text as a choice list
// and as a regex is two languages, and each request gets its own.
func TestConstraintCacheKeyedByKind(t *testing.T) {
	e, _ := fakeEngine(t, Options{}, false)
	accepts := func(c *grammar.Constraint, text string) bool {
		m, err := c.NewMatcher(0)
		if err != nil {
			t.Fatal(err)
		}
		return m.AcceptBytes([]byte(text)) == nil && m.Accepting()
	}
	// `["ab"]` is the choice list {ab}, and the regex of one character
	// among " a b.
	for _, order := range [][2]string{{ConstraintChoice, ConstraintRegex}, {ConstraintRegex, ConstraintChoice}} {
		spec := `["ab"]`
		if order[0] == ConstraintRegex {
			spec = `["ba"]` // a spec not cached yet
		}
		want := map[string]map[string]bool{
			ConstraintChoice: {spec[2:4]: true, "a": false, `"`: false},
			ConstraintRegex:  {spec[2:4]: false, "a": true, `"`: true},
		}
		for _, kind := range order {
			c, err := e.Constraint(context.Background(), kind, spec)
			if err != nil {
				t.Fatal(err)
			}
			for text, ok := range want[kind] {
				if accepts(c, text) != ok {
					t.Fatalf("%s %s (after %s): %q accepted=%v, want %v", kind, spec, order[0], text, !ok, ok)
				}
			}
		}
	}
}
