package grammar

import (
	"encoding/json"
	"regexp"
	"testing"
)

// additionalProperties: false with no properties declared is the empty
// object and nothing else: no key can start (validity tests of generated
// outputs would pass a grammar that allows any key, since "{}" is valid).
func TestClosedObjectWithoutProperties(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","additionalProperties":false}`,
		`{"type":"object","properties":{},"additionalProperties":false}`,
		`{"additionalProperties":false,"required":[]}`,
	} {
		c := schemaConstraint(t, schema)
		if !matches(t, c, `{}`) {
			t.Errorf("%s: {} rejected", schema)
		}
		for _, text := range []string{`{"a"`, `{"`, `{"a":1}`, `{"":null}`} {
			m, err := c.NewMatcher(0)
			if err != nil {
				t.Fatal(err)
			}
			if m.AcceptBytes([]byte(text)) == nil {
				t.Errorf("%s: %s accepted as a start (no property may appear)", schema, text)
			}
		}
	}
}

// A schema pattern is unanchored (ECMA-262 search, as JSON Schema says):
// "b" accepts any string containing b; ^ and $ anchor. The grammar's
// language is compared with Go's regexp search (the same semantics on this
// subset) over every string of up to 5 characters from a small alphabet.
func TestPatternUnanchoredExact(t *testing.T) {
	var all []string
	var grow func(s string)
	grow = func(s string) {
		all = append(all, s)
		if len(s) < 5 {
			for _, x := range []string{"a", "b", "c"} {
				grow(s + x)
			}
		}
	}
	grow("")
	for _, pat := range []string{`b`, `^b`, `b$`, `^b$`, `ab|ba`, `^a+b?$`, `c{2}`, `^(ab)*$`, `[bc]a`} {
		schema, _ := json.Marshal(map[string]any{"type": "string", "pattern": pat})
		c := schemaConstraint(t, string(schema))
		re := regexp.MustCompile(pat)
		accepted := 0
		for _, s := range all {
			got := matches(t, c, `"`+s+`"`)
			if want := re.MatchString(s); got != want {
				t.Fatalf("pattern %q: %q accepted=%v, a JSON Schema validator says %v", pat, s, got, want)
			}
			if got {
				accepted++
			}
		}
		if accepted == 0 {
			t.Fatalf("pattern %q accepts none of the strings tried", pat)
		}
	}
}
