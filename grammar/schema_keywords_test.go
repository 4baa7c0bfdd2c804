package grammar

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// valid says whether the JSON Schema validator the property test uses
// accepts instance text.
func valid(t *testing.T, v *jsonschema.Schema, text string) bool {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return v.Validate(inst) == nil
}

// Bounds (integral or fractional, inclusive, exclusive numeric or the
// draft-4 boolean form) and multipleOf are exact: over a grid of numbers
// with up to three fraction digits, written plainly and with a trailing
// zero, the grammar accepts a numeral iff the validator does (integers
// only for type integer, whose grammar writes no point).
func TestNumberKeywordsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 2))
	mults := []string{"", "0.5", "0.25", "3", "1.5", "0.1", "0.05", "2", "0.3", "0.125"}
	fixed := []string{
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"number","minimum":1.5,"exclusiveMinimum":true,"maximum":3,"exclusiveMaximum":true}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer","minimum":-2,"exclusiveMinimum":true,"maximum":3,"exclusiveMaximum":false}`,
		`{"type":"number","minimum":2,"exclusiveMinimum":2,"maximum":4.5,"exclusiveMaximum":4.5,"multipleOf":0.25}`,
		`{"type":"number","exclusiveMinimum":-0.5,"exclusiveMaximum":0.5}`,
	}
	for k := 0; k < 30+len(fixed); k++ {
		typ := []string{"number", "integer"}[k%3/2]
		draft4 := k%4 == 3
		var kw []string
		bnd := func() string {
			d := []int64{1, 4, 100, 8}[rng.IntN(4)]
			return big.NewRat(int64(rng.IntN(int(16*d)))-8*d, d).FloatString(3) // within the grid
		}
		lo, hi := bnd(), bnd()
		for _, b := range []struct{ v, incl, excl string }{{lo, "minimum", "exclusiveMinimum"}, {hi, "maximum", "exclusiveMaximum"}} {
			switch x := rng.IntN(5); {
			case x == 0:
			case x%2 == 1:
				kw = append(kw, `"`+b.incl+`":`+b.v)
			case draft4: // the boolean form qualifies the inclusive keyword
				kw = append(kw, `"`+b.incl+`":`+b.v, `"`+b.excl+`":true`)
			default:
				kw = append(kw, `"`+b.excl+`":`+b.v)
			}
		}
		if m := mults[k%len(mults)]; m != "" {
			kw = append(kw, `"multipleOf":`+m)
		}
		schema := fmt.Sprintf(`{"type":%q,%s}`, typ, strings.Join(kw, ","))
		if draft4 {
			schema = fmt.Sprintf(`{"$schema":"http://json-schema.org/draft-04/schema#","type":%q,%s}`, typ, strings.Join(kw, ","))
		}
		if k >= 30 {
			schema = fixed[k-30]
			typ = map[bool]string{true: "integer", false: "number"}[strings.Contains(schema, "integer")]
		}
		g, err := FromJSONSchema([]byte(schema))
		if err != nil {
			if strings.Contains(err.Error(), "no value") || strings.Contains(err.Error(), "no multiple") {
				continue // empty ranges: TestSchemaErrorsNameKeyword
			}
			t.Fatalf("%s: %v", schema, err)
		}
		v, _ := byteVocab()
		c, err := Compile(g, v)
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		val := validator(t, []byte(schema))
		accepted := 0
		for n := -1700; n <= 1700; n++ {
			x := big.NewRat(int64(n), 200)
			var forms []string
			if x.IsInt() {
				forms = []string{x.FloatString(0)}
				if typ == "number" {
					forms = append(forms, x.FloatString(1))
				}
			} else if typ == "number" {
				s := strings.TrimRight(x.FloatString(3), "0")
				forms = []string{s, s + "0"}
			}
			for _, s := range forms {
				got, want := matches(t, c, s), valid(t, val, s)
				if got != want {
					t.Fatalf("%s: %s accepted=%v, the validator says %v", schema, s, got, want)
				}
				if got {
					accepted++
				}
			}
		}
		if accepted == 0 && len(kw) > 0 {
			t.Logf("%s: no numeral of the grid accepted", schema)
		}
	}
}

// minProperties/maxProperties: every in-order choice of the declared
// properties is accepted iff the validator accepts it; free-key maps obey
// maxProperties and minProperties 1.
func TestPropertyCountsExact(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	for _, bounds := range []string{`"minProperties":2`, `"maxProperties":2`, `"minProperties":1,"maxProperties":3`, `"minProperties":3,"maxProperties":3`, `"maxProperties":1`} {
		schema := `{"type":"object","properties":{"a":{"const":1},"b":{"const":2},"c":{"const":3},"d":{"const":4}},"required":["b"],` + bounds + `}`
		c := schemaConstraint(t, schema)
		val := validator(t, []byte(schema))
		for mask := 0; mask < 16; mask++ {
			var kv []string
			for i, n := range names {
				if mask>>i&1 == 1 {
					kv = append(kv, fmt.Sprintf(`"%s":%d`, n, i+1))
				}
			}
			s := "{" + strings.Join(kv, ",") + "}"
			if got, want := matches(t, c, s), valid(t, val, s); got != want {
				t.Errorf("%s: %s accepted=%v, the validator says %v", bounds, s, got, want)
			}
		}
	}
	c := schemaConstraint(t, `{"type":"object","additionalProperties":{"type":"integer"},"minProperties":1,"maxProperties":2}`)
	for s, want := range map[string]bool{`{}`: false, `{"x":1}`: true, `{"x":1,"y":2}`: true, `{"x":1,"y":2,"z":3}`: false} {
		if got := matches(t, c, s); got != want {
			t.Errorf("map: %s accepted=%v", s, got)
		}
	}
}

// uniqueItems over listed values: the grammar is the documented subset
// (each value at most once, in the listed order), and everything it
// accepts the validator accepts.
func TestUniqueItemsSubset(t *testing.T) {
	schema := `{"type":"array","items":{"enum":["x",1,1.0,true]},"uniqueItems":true,"minItems":1,"maxItems":2}`
	c := schemaConstraint(t, schema)
	val := validator(t, []byte(schema))
	vals := []string{`"x"`, `1`, `true`}
	var arrays []string
	var grow func(prefix []string)
	grow = func(prefix []string) {
		arrays = append(arrays, "["+strings.Join(prefix, ",")+"]")
		if len(prefix) < 3 {
			for _, v := range append(vals, `1.0`) {
				grow(append(prefix[:len(prefix):len(prefix)], v))
			}
		}
	}
	grow(nil)
	order := map[string]int{`"x"`: 0, `1`: 1, `true`: 2}
	for _, s := range arrays {
		var els []string
		if s != "[]" {
			els = strings.Split(s[1:len(s)-1], ",")
		}
		inOrder := len(els) >= 1 && len(els) <= 2
		for i, e := range els {
			if _, listed := order[e]; !listed || i > 0 && order[els[i-1]] >= order[e] {
				inOrder = false
			}
		}
		got := matches(t, c, s)
		if got != inOrder {
			t.Errorf("%s accepted=%v, the in-order subset says %v", s, got, inOrder)
		}
		if got && !valid(t, val, s) {
			t.Errorf("%s accepted but the validator rejects it", s)
		}
	}
}

// Every format's strings end within its stated length budget (the longest
// is exactly formatMaxLen), and walks under each format on a real
// vocabulary validate, Zod's pattern beside email and date-time included.
func TestFormatBudgetsAndWalks(t *testing.T) {
	tv := realVocab(t, 0)
	rng := rand.New(rand.NewPCG(5, 37))
	for _, f := range formatNames {
		e, _ := formatExpr(f)
		if _, got := lenRange(e); got != formatMaxLen[f] {
			t.Errorf("%s: longest string %d characters, stated %d", f, got, formatMaxLen[f])
		}
		schemas := []string{fmt.Sprintf(`{"type":"string","format":%q}`, f)}
		switch f {
		case "hostname": // a bound tighter than the format's is intersected
			schemas = append(schemas, `{"type":"string","format":"hostname","minLength":5,"maxLength":8}`)
		case "uri": // Pydantic's HttpUrl: bounds the format implies cost nothing
			schemas = append(schemas, `{"type":"string","format":"uri","minLength":1,"maxLength":2083}`)
		case "email":
			schemas = append(schemas, fmt.Sprintf(`{"type":"string","format":"email","pattern":%q}`, zodEmailPattern), `{"type":"string","format":"email","maxLength":254}`)
		case "date-time":
			schemas = append(schemas, `{"type":"string","format":"date-time","pattern":"^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))T(?:(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?(?:Z))$"}`)
		}
		for _, schema := range schemas {
			b := NewBudget(nil, Limits{})
			g, err := b.FromJSONSchema([]byte(schema))
			if err != nil {
				t.Fatalf("%s: %v", schema, err)
			}
			if u := b.Used(); u.Nodes > 5000 {
				t.Errorf("%s: %d grammar nodes", schema, u.Nodes)
			}
			c, err := Compile(g, tv.v)
			if err != nil {
				t.Fatal(err)
			}
			val := validator(t, []byte(schema))
			for w := 0; w < 4; w++ {
				out := walk(t, c, tv, c.MinTokens()+[]int{0, 5, 40, 300}[w], rng, w%2 == 1)
				checkInstance(t, val, []byte(schema), out)
				if n := len([]rune(string(out))) - 2; n > formatMaxLen[f] {
					t.Errorf("%s: %d characters: %s", f, n, out)
				}
			}
		}
	}
}
