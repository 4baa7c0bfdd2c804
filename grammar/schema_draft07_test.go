package grammar

import (
	"reflect"
	"testing"
)

// draft07Tuples rewrites a 2020-12 schema tree into draft-07's tuple
// spelling: every schema holding prefixItems gets `items: [...]` instead,
// and its items (the schema of the elements after the prefix) becomes
// additionalItems. It returns how many schemas it rewrote.
func draft07Tuples(v any) int {
	n := 0
	switch v := v.(type) {
	case *obj:
		for _, k := range v.keys {
			n += draft07Tuples(v.vals[k])
		}
		if pre, ok := v.get("prefixItems"); ok {
			rest, hasRest := v.get("items")
			out := newObj()
			for _, k := range v.keys {
				switch k {
				case "prefixItems":
					out.set("items", pre)
					if hasRest {
						out.set("additionalItems", rest)
					}
				case "items":
				default:
					out.set(k, v.vals[k])
				}
			}
			*v = *out
			n++
		}
	case []any:
		for _, x := range v {
			n += draft07Tuples(x)
		}
	}
	return n
}

// The draft-07 tuple form (items as an array, additionalItems for the
// elements after it) is prefixItems and items by another name: every
// generated schema with tuples, respelled, compiles to the same grammar.
func TestDraft07TuplesSameGrammar(t *testing.T) {
	rewritten := 0
	for i := 0; i < 80; i++ {
		schema := genSchema(uint64(i), map[string]int{})
		want, err := FromJSONSchema(schema)
		if err != nil {
			t.Fatalf("schema %d %s: %v", i, schema, err)
		}
		root, err := decodeOrdered(schema)
		if err != nil {
			t.Fatal(err)
		}
		if draft07Tuples(root) == 0 {
			continue
		}
		rewritten++
		old := encodeJSON(root)
		got, err := FromJSONSchema([]byte(old))
		if err != nil {
			t.Fatalf("schema %d in draft-07 form %s: %v", i, old, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("schema %d: the draft-07 form %s compiles to another grammar than %s", i, old, schema)
		}
	}
	if rewritten < 5 {
		t.Fatalf("only %d generated schemas had tuples to respell", rewritten)
	}
}

// Over every array of up to four elements drawn from a few values, a
// draft-07 tuple schema's grammar accepts exactly what a draft-07
// validator accepts.
func TestDraft07TuplesExact(t *testing.T) {
	const d7 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	schemas := []string{
		`{` + d7 + `"type":"array","items":[{"type":"string"},{"type":"integer"}]}`,
		`{` + d7 + `"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}`,
		`{` + d7 + `"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"boolean"}}`,
		`{` + d7 + `"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false,"minItems":2}`,
		`{` + d7 + `"type":"array","items":[{"type":"integer"}],"additionalItems":true,"maxItems":2}`,
		`{` + d7 + `"type":"array","items":[{"type":"string"},false]}`,
		// additionalItems beside a single items schema (or none) has no effect in draft-07
		`{` + d7 + `"type":"array","items":{"type":"integer"},"additionalItems":false}`,
		`{` + d7 + `"type":"array","additionalItems":{"type":"string"},"maxItems":2}`,
	}
	vals := []string{`"a"`, `1`, `true`}
	var insts []string
	var grow func(s string, n int)
	grow = func(s string, n int) {
		insts = append(insts, "["+s+"]")
		if n == 4 {
			return
		}
		for _, v := range vals {
			if n == 0 {
				grow(v, 1)
			} else {
				grow(s+","+v, n+1)
			}
		}
	}
	grow("", 0)
	for _, schema := range schemas {
		c := schemaConstraint(t, schema)
		v := validator(t, []byte(schema))
		accepted := 0
		for _, in := range insts {
			got, want := matches(t, c, in), valid(t, v, in)
			if got != want {
				t.Fatalf("%s: %s accepted=%v, a draft-07 validator says %v", schema, in, got, want)
			}
			if got {
				accepted++
			}
		}
		if accepted == 0 {
			t.Fatalf("%s: no instance accepted", schema)
		}
	}
}
