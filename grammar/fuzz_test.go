package grammar

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
)

// The fuzz targets run every input under a budget (fuzzLimits, small so
// that the fuzzer explores rather than waits): each ends in a grammar or
// an error within it — a *LimitError when it needs more, never a panic or
// a hang — and the heap stays bounded (checked every 256 inputs).

var fuzzLimits = Limits{Nodes: 200_000, Bytes: 32 << 20, Steps: 1_000_000}

// fuzzHeapBound is the most heap in use the fuzz targets tolerate: the
// budget's bytes for one input, times a margin for the collector's lag
// and the fuzzer's own state.
const fuzzHeapBound = 512 << 20

type fuzzCheck struct{ n int }

// within fails the test if b counted past its limits (by more than the one
// step or allocation that tripped them) or the heap grew past its bound.
func (fc *fuzzCheck) within(t *testing.T, b *Budget) {
	u, l := b.Used(), b.Limits()
	if u.Steps > l.Steps+ctxEvery || u.Nodes > l.Nodes+1<<20 || u.Bytes > l.Bytes+64<<20 {
		t.Fatalf("budget overrun: used %+v of %+v", u, l)
	}
	if fc.n++; fc.n%256 == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > fuzzHeapBound {
			t.Fatalf("heap in use %d MiB", ms.HeapInuse>>20)
		}
	}
}

// FuzzGBNF: the parser never panics; a grammar it accepts compiles within
// the budget or errors cleanly, and a short walk over a byte vocabulary
// never errors but for the budget.
func FuzzGBNF(f *testing.F) {
	for _, s := range []string{arithGBNF, jsonGBNF, goSubsetGBNF, `root ::= [^a-z]+ "x"{2,3}`, `root ::= ("a" | b)* b ::= "\u00e9"?`, `root ::= . "#" # c`,
		`root ::= ((("a"{0,100}){0,100}){0,100})`, `root ::= "ab" | "ac" | "abc" | "b" x x ::= "y"?`, `root ::= x x ::= x "a" | "b"`} {
		f.Add(s)
	}
	v, _ := byteVocab("ab", "\"", "{}")
	var fc fuzzCheck
	f.Fuzz(func(t *testing.T, src string) {
		b := NewBudget(context.Background(), fuzzLimits)
		defer fc.within(t, b)
		g, err := b.ParseGBNF(src)
		if err != nil {
			return
		}
		c, err := b.Compile(g, v)
		if err != nil {
			return
		}
		fuzzWalk(t, c, v)
	})
}

// FuzzSchema: the schema compiler never panics on any JSON, and ends in a
// grammar or an error within the budget.
func FuzzSchema(f *testing.F) {
	cov := map[string]int{}
	for i := 0; i < 30; i++ {
		f.Add(genSchema(uint64(i), cov))
	}
	f.Add([]byte(`{"type":"integer","minimum":-5,"exclusiveMaximum":1234}`))
	f.Add([]byte(`{"allOf":[{"$ref":"#"}]}`))
	f.Add([]byte(`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`))
	f.Add([]byte(`{"anyOf":[{"allOf":[{"$ref":"#"}]},{"type":"null"}]}`))
	f.Add(fanOut(6))
	f.Add(deepArrays(20))
	f.Add(bigEnum(50))
	f.Add(bigRequired(20))
	v, _ := byteVocab()
	var fc fuzzCheck
	f.Fuzz(func(t *testing.T, schema []byte) {
		b := NewBudget(context.Background(), fuzzLimits)
		defer fc.within(t, b)
		g, err := b.FromJSONSchema(schema)
		if err != nil {
			return
		}
		c, err := b.Compile(g, v)
		if err != nil {
			return
		}
		fuzzWalk(t, c, v)
	})
}

// fuzzWalk generates one output under c within a budget of tokens: every
// mask is non-empty, every token it allows is accepted, and the output is
// complete when the budget is spent. A mask computation past its own
// step limit ends the walk (an error within the budget).
func fuzzWalk(t *testing.T, c *Constraint, v *Vocab) {
	budget := c.MinTokens() + 5
	if budget > 2000 {
		return
	}
	var le *LimitError
	m, err := c.NewMatcher(budget)
	if errors.As(err, &le) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mask := make([]uint64, v.MaskWords())
	for m.Remaining() > 0 && !m.Ended() {
		n, err := m.Mask(mask)
		if errors.As(err, &le) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("empty mask with %d tokens left", m.Remaining())
		}
		if err := m.Accept(pick(mask, n, rng, nil)); errors.As(err, &le) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if !m.Accepting() {
		t.Fatal("budget spent before acceptance")
	}
}
