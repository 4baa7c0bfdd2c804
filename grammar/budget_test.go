package grammar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestAllOfCycleRefused: a cycle through allOf inlines forever without
// writing a byte (issue 29: {"allOf":[{"$ref":"#"}]} grew 150 MB/s); it is
// refused at once, as left recursion, through every spelling.
func TestAllOfCycleRefused(t *testing.T) {
	for _, s := range []string{
		`{"allOf":[{"$ref":"#"}]}`,
		`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
		`{"definitions":{"a":{"allOf":[{"$ref":"#/definitions/b"}]},"b":{"allOf":[{"$ref":"#/definitions/a"}]}},"allOf":[{"$ref":"#/definitions/a"}]}`,
		`{"allOf":[{"allOf":[{"$ref":"#"}]}]}`,
		`{"anyOf":[{"allOf":[{"$ref":"#"}]},{"allOf":[{"$ref":"#"}]}]}`,
		`{"type":"object","properties":{"x":{"allOf":[{"$ref":"#"}]}}}`,
	} {
		b := NewBudget(context.Background(), Limits{})
		_, err := b.FromJSONSchema([]byte(s))
		var se *SchemaError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "cycle") {
			t.Errorf("%s: got %v, want a schema error naming the cycle", s, err)
		}
		if u := b.Used(); u.Steps > 100 {
			t.Errorf("%s: %d steps before the refusal", s, u.Steps)
		}
	}
	// A reference used twice side by side is no cycle.
	ok := `{"$defs":{"p":{"type":"object","properties":{"a":{"type":"integer"}}}},"allOf":[{"$ref":"#/$defs/p"},{"$ref":"#/$defs/p"}]}`
	if _, err := FromJSONSchema([]byte(ok)); err != nil {
		t.Errorf("%s: %v", ok, err)
	}
}

func bigChoices(n int) []string {
	cs := make([]string, n)
	for i := range cs {
		cs[i] = fmt.Sprintf("choice number %d", i)
	}
	return cs
}

func bigGBNF(n int) string {
	var b strings.Builder
	b.WriteString("root ::= ")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(&b, `"alt%d"`, i)
	}
	return b.String()
}

func bigEnum(n int) []byte {
	vs := make([]string, n)
	for i := range vs {
		vs[i] = fmt.Sprintf("value-%d", i)
	}
	s, _ := json.Marshal(map[string]any{"enum": vs})
	return s
}

func bigRequired(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	var req []string
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
		req = append(req, fmt.Sprintf("%q", fmt.Sprintf("p%d", i)))
	}
	fmt.Fprintf(&b, `},"required":[%s]}`, strings.Join(req, ","))
	return []byte(b.String())
}

// fanOut is a chain of definitions each inlining the previous one twice
// through allOf: 2^depth compiles unless each subschema is compiled once.
func fanOut(depth int) []byte {
	defs := []string{`"d0":{"type":"integer"}`}
	for i := 1; i <= depth; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"a":{"allOf":[{"$ref":"#/$defs/d%d"}]},"b":{"allOf":[{"$ref":"#/$defs/d%d"}]}}}`, i, i-1, i-1))
	}
	return []byte(fmt.Sprintf(`{"$defs":{%s},"allOf":[{"$ref":"#/$defs/d%d"}]}`, strings.Join(defs, ","), depth))
}

func deepArrays(n int) []byte {
	return []byte(strings.Repeat(`{"type":"array","items":`, n) + `{"type":"integer"}` + strings.Repeat("}", n))
}

// TestLargeInputsWithinBudget: issue 29's expensive compiles (100k
// choices, 100k GBNF alternatives, an enum of 100k values, 10k required
// properties; before: 18-52 s each), deep nesting (190 arrays: the items
// expression was written twice per level, 2^190) and a chain of allOf
// inlinings (each subschema compiled once, not 2^40 times) compile within the
// default limits with work linear in the input, and a generation over
// them keeps few live stacks (the alternatives are left-factored).
func TestLargeInputsWithinBudget(t *testing.T) {
	n := 30_000
	if *fullRun {
		n = 100_000 // issue 29's sizes
	}
	v, _ := byteVocab()
	cases := []struct {
		name  string
		build func(b *Budget) (*Grammar, error)
		out   string // a valid output
		per   int64  // steps allowed per input item
		items int
	}{
		{"choices", func(b *Budget) (*Grammar, error) { return b.FromChoices(bigChoices(n)) }, "choice number 12345", 200, n},
		{"gbnf", func(b *Budget) (*Grammar, error) { return b.ParseGBNF(bigGBNF(n)) }, "alt12345", 200, n},
		{"enum", func(b *Budget) (*Grammar, error) { return b.FromJSONSchema(bigEnum(n)) }, `"value-12345"`, 200, n},
		{"required", func(b *Budget) (*Grammar, error) { return b.FromJSONSchema(bigRequired(n / 10)) }, "", 400, n / 10},
		{"deep arrays", func(b *Budget) (*Grammar, error) { return b.FromJSONSchema(deepArrays(190)) }, strings.Repeat("[", 190) + "1" + strings.Repeat("]", 190), 2000, 190},
		{"allOf fan-out", func(b *Budget) (*Grammar, error) { return b.FromJSONSchema(fanOut(40)) }, `{"a": {"b": ` + strings.Repeat(`{"a": `, 38) + "7" + strings.Repeat("}", 40), 2000, 40},
	}
	for _, tc := range cases {
		b := NewBudget(context.Background(), Limits{})
		g, err := tc.build(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c, err := b.Compile(g, v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		u := b.Used()
		t.Logf("%s: %d steps, %d nodes, %d MiB", tc.name, u.Steps, u.Nodes, u.Bytes>>20)
		if u.Steps > tc.per*int64(tc.items) {
			t.Errorf("%s: %d steps for %d items (more than %d each)", tc.name, u.Steps, tc.items, tc.per)
		}
		if tc.out == "" {
			continue
		}
		m, err := c.NewMatcher(0)
		if err != nil {
			t.Fatal(err)
		}
		widest := 0
		for i := 0; i < len(tc.out); i++ {
			if err := m.AcceptBytes([]byte{tc.out[i]}); err != nil {
				t.Fatalf("%s: %q: %v", tc.name, tc.out[:i+1], err)
			}
			widest = max(widest, len(m.state))
		}
		if !m.Accepting() {
			t.Errorf("%s: %q not accepted", tc.name, tc.out)
		}
		if widest > 16 {
			t.Errorf("%s: %d live stacks while reading %q (the alternatives are not factored)", tc.name, widest, tc.out)
		}
	}
}

// TestLimitsNamed: each limit, when exceeded, is a *LimitError naming it;
// a cancelled context stops the compile.
func TestLimitsNamed(t *testing.T) {
	v, _ := byteVocab()
	src := bigGBNF(5000)
	for _, tc := range []struct {
		lim  Limits
		name string
	}{
		{Limits{Steps: 1000}, "steps"},
		{Limits{Nodes: 1000}, "nodes"},
		{Limits{Bytes: 100_000}, "bytes"},
	} {
		b := NewBudget(context.Background(), tc.lim)
		g, err := b.ParseGBNF(src)
		if err == nil {
			_, err = b.Compile(g, v)
		}
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != tc.name || !strings.Contains(err.Error(), tc.name+" limit") {
			t.Errorf("limits %+v: got %v, want the %s limit", tc.lim, err, tc.name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := NewBudget(ctx, Limits{})
	g, err := b.FromJSONSchema(bigEnum(50_000))
	if err == nil {
		_, err = b.Compile(g, v)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled compile: got %v, want context.Canceled", err)
	}
}

// TestMaskStepLimit: a Mask that runs out of steps fails with a
// *LimitError and caches nothing partial: the same Mask with room gives
// the exact mask of a fresh Constraint.
func TestMaskStepLimit(t *testing.T) {
	tv := realVocab(t, 0)
	g, err := FromJSONSchema([]byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"number"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	text := []byte(`{"a": "x`)
	want := make([]uint64, tv.v.MaskWords())
	{
		c, err := Compile(g, tv.v)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := c.NewMatcher(0)
		if err := m.AcceptBytes(text); err != nil {
			t.Fatal(err)
		}
		mustMask(t, m, want)
	}
	c, err := Compile(g, tv.v)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.NewMatcher(0)
	if err := m.AcceptBytes(text); err != nil {
		t.Fatal(err)
	}
	got := make([]uint64, tv.v.MaskWords())
	c.lim.Steps = 50
	_, err = m.Mask(got)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "steps" {
		t.Fatalf("Mask with 50 steps: got %v, want the steps limit", err)
	}
	c.lim.Steps = DefaultLimits().Steps
	mustMask(t, m, got)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("mask word %d after a failed Mask: %x, want %x", i, got[i], want[i])
		}
	}
}

// TestNumbersBounded: numbers have at most 16 integer and 16 fraction
// digits, as llama.cpp's json-schema-to-grammar writes them, so a forced
// output cannot spend its budget on one number.
func TestNumbersBounded(t *testing.T) {
	v, _ := byteVocab()
	for _, tc := range []struct {
		schema string
		ok     []string
		bad    []string
	}{
		{`{"type":"integer"}`, []string{"1234567890123456", "-1234567890123456", "0"}, []string{"12345678901234567"}},
		{`{"type":"number"}`, []string{"1.1234567890123456", "9999999999999999.5"}, []string{"1.12345678901234567", "12345678901234567"}},
		{`{"type":"integer","minimum":5}`, []string{"5", "1234567890123456"}, []string{"12345678901234567"}},
		{`{"type":"number","maximum":0}`, []string{"-1234567890123456", "-0.5"}, []string{"-12345678901234567"}},
		{`{"type":"number","minimum":0.5,"multipleOf":0.5}`, []string{"1234567890123456.5", "1.5000000000000000"}, []string{"12345678901234567", "1.50000000000000000"}},
		{`{"type":"number","exclusiveMinimum":0.25}`, []string{"1.1234567890123456", "0.2500000000000001"}, []string{"1.12345678901234567", "0.25000000000000001"}},
	} {
		g, err := FromJSONSchema([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Compile(g, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append(tc.ok, tc.bad...) {
			m, _ := c.NewMatcher(0)
			err := m.AcceptBytes([]byte(s))
			accepted := err == nil && m.Accepting()
			if want := !strings.Contains(strings.Join(tc.bad, "\x00")+"\x00", s+"\x00"); accepted != want {
				t.Errorf("%s: %q accepted=%v, want %v", tc.schema, s, accepted, want)
			}
		}
	}
}

// TestDefaultLimitsFitRealSchemas: the generated property-test schemas
// (every supported keyword, nesting, references) use a small fraction of
// each default limit.
func TestDefaultLimitsFitRealSchemas(t *testing.T) {
	tv := realVocab(t, 0)
	var most Limits
	for i := 0; i < 200; i++ {
		b := NewBudget(context.Background(), Limits{})
		g, err := b.FromJSONSchema(genSchema(uint64(i), map[string]int{}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Compile(g, tv.v); err != nil {
			t.Fatal(err)
		}
		u := b.Used()
		most = Limits{max(most.Nodes, u.Nodes), max(most.Bytes, u.Bytes), max(most.Steps, u.Steps)}
	}
	d := DefaultLimits()
	t.Logf("most used by a generated schema: %d nodes, %d KiB, %d steps (defaults %d, %d MiB, %d)", most.Nodes, most.Bytes>>10, most.Steps, d.Nodes, d.Bytes>>20, d.Steps)
	if most.Nodes*20 > d.Nodes || most.Bytes*20 > d.Bytes || most.Steps*20 > d.Steps {
		t.Errorf("a generated schema uses more than 5%% of a default limit")
	}
}

// TestNullableNestingBounded: nested optional repetitions (each level
// nullable, 10^4 deep) make the first expansion explore every way of
// skipping them: it stops at the default limits with a *LimitError and a
// bounded heap instead of running on (the bad-input check found it
// hanging for over a minute while it grew).
func TestNullableNestingBounded(t *testing.T) {
	v, _ := byteVocab()
	g, err := ParseGBNF(`root ::= (((("a"{0,10000}){0,10000}){0,10000}){0,10000})`)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = Compile(g, v)
	runtime.ReadMemStats(&after)
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a *LimitError", err)
	}
	t.Logf("%v in %v; heap in use %d MiB → %d MiB", err, time.Since(start), before.HeapInuse>>20, after.HeapInuse>>20)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > DefaultLimits().Bytes*2 {
		t.Errorf("the heap grew %d MiB", grew>>20)
	}
}

// TestLimitsInclusive: a compile that uses exactly its limits succeeds (a
// limit is the most allowed, not a bound never reached), one less fails;
// zero or negative limits mean the defaults.
func TestLimitsInclusive(t *testing.T) {
	v, _ := byteVocab()
	src := bigGBNF(200)
	compile := func(l Limits) (Limits, error) {
		b := NewBudget(context.Background(), l)
		g, err := b.ParseGBNF(src)
		if err == nil {
			_, err = b.Compile(g, v)
		}
		return b.Used(), err
	}
	used, err := compile(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile(used); err != nil {
		t.Errorf("limits equal to the use %+v: %v", used, err)
	}
	for _, l := range []Limits{
		{Nodes: used.Nodes - 1, Bytes: used.Bytes, Steps: used.Steps},
		{Nodes: used.Nodes, Bytes: used.Bytes - 1, Steps: used.Steps},
		{Nodes: used.Nodes, Bytes: used.Bytes, Steps: used.Steps - 1},
	} {
		if _, err := compile(l); err == nil {
			t.Errorf("limits %+v one below the use %+v: no error", l, used)
		}
	}
	for _, l := range []Limits{{}, {Nodes: -1, Bytes: -1, Steps: -1}} {
		if got := NewBudget(nil, l).Limits(); got != DefaultLimits() {
			t.Errorf("limits %+v: got %+v, want the defaults %+v", l, got, DefaultLimits())
		}
	}
}

// TestNumericKeywordsBudgeted: bounds of any width and precision build a
// grammar of O(digits) expressions, and a multipleOf whose remainder
// automaton would be huge stops at the budget with a *LimitError, in
// bounded time, instead of building it.
func TestNumericKeywordsBudgeted(t *testing.T) {
	for _, s := range []string{
		`{"type":"number","minimum":-999999999999999.9999999999999999,"exclusiveMaximum":999999999999999.123456789}`,
		`{"type":"number","exclusiveMinimum":0.0000000000000001,"maximum":0.0000000000000009}`,
		`{"type":"number","minimum":-1000000,"maximum":1000000,"multipleOf":0.5}`,
		`{"type":"integer","multipleOf":1000}`, // minimised: four states (trailing zeros)
	} {
		b := NewBudget(context.Background(), Limits{})
		if _, err := b.FromJSONSchema([]byte(s)); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if u := b.Used(); u.Nodes > 20_000 || u.Steps > 500_000 {
			t.Errorf("%s: %d nodes, %d steps", s, u.Nodes, u.Steps)
		}
	}
	// Past the automaton caps: refused at once, naming the keyword.
	for _, s := range []string{`{"type":"integer","multipleOf":999999999937}`, `{"type":"integer","multipleOf":1009}`} {
		b := NewBudget(context.Background(), Limits{})
		_, err := b.FromJSONSchema([]byte(s))
		var se *SchemaError
		if !errors.As(err, &se) || se.Keyword != "multipleOf" {
			t.Errorf("%s: %v, want a schema error naming multipleOf", s, err)
		}
		if u := b.Used(); u.Steps > 1_000_000 {
			t.Errorf("%s: %d steps before the refusal", s, u.Steps)
		}
	}
	// Within the caps, the product with the number's shape is counted:
	// a tight budget stops it with a *LimitError.
	b := NewBudget(context.Background(), Limits{Nodes: 20_000})
	_, err := b.FromJSONSchema([]byte(`{"type":"integer","multipleOf":499}`))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "nodes" {
		t.Errorf("multipleOf 499 under 20k nodes: %v, want a *LimitError", err)
	}
}
