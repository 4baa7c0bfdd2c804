package grammar

import (
	"errors"
	"strings"
	"testing"
)

// Every schema keyword or construct we cannot enforce is an error naming
// it; nothing is silently ignored.
func TestSchemaErrorsNameKeyword(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"object","minProperties":2}`, `"minProperties"`},
		{`{"type":"object","patternProperties":{"^a":{}}}`, `"patternProperties"`},
		{`{"type":"array","uniqueItems":true}`, `"uniqueItems"`},
		{`{"type":"array","contains":{"type":"string"}}`, `"contains"`},
		{`{"type":"integer","multipleOf":0}`, `"multipleOf"`},
		{`{"type":"number","multipleOf":0.12345678901234567}`, `"multipleOf"`},
		{`{"type":"integer","minimum":11,"maximum":14,"multipleOf":5}`, `"multipleOf"`},
		{`{"type":"number","exclusiveMinimum":true}`, `"exclusiveMinimum"`},
		{`{"type":"array","items":{"type":"string"},"uniqueItems":true,"maxItems":3}`, `"uniqueItems"`},
		{`{"type":"array","items":{"enum":["a","b"]},"uniqueItems":true,"minItems":3}`, `"minItems"`},
		{`{"type":"object","properties":{"a":{}},"minProperties":2}`, `"minProperties"`},
		{`{"type":"object","properties":{"a":{},"b":{}},"required":["a","b"],"maxProperties":1}`, `"minProperties"`},
		{`{"not":{"type":"string"}}`, `"not"`},
		{`{"if":{"type":"string"},"then":{"minLength":1}}`, `"if"`},
		{`{"type":"string","format":"iri"}`, `format "iri"`},
		{`{"type":"string","format":"email","maxLength":2}`, `no string satisfies`},
		{`{"type":"string","pattern":"(?=a)b"}`, `"pattern"`},
		{`{"type":"string","pattern":"(a)\\1"}`, `"pattern"`},
		{`{"type":"number","minimum":0.5,"exclusiveMaximum":0.5}`, `"minimum"`},
		{`{"$ref":"http://example.com/s.json"}`, `"$ref"`},
		{`{"$ref":"#/$defs/missing"}`, `"$ref"`},
		{`{"oneOf":[{"type":"string"},{"type":"string","maxLength":2}]}`, `"oneOf"`},
		{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, `"oneOf"`},
		{`{"allOf":[{"type":"string"},{"type":"integer"}]}`, `"type"`},
		{`{"type":"array","prefixItems":[{"type":"string"}],"items":[{"type":"string"}]}`, `"items"`},
		{`{"type":"array","items":[{"type":"string"}],"additionalItems":3}`, `"additionalItems"`},
		{`{"type":"fish"}`, `"type"`},
		{`{"type":"string","minLength":5,"maxLength":2}`, `"minLength"`},
		{`{"type":"object","properties":{"a":false},"required":["a"]}`, `"a"`},
		{`{"type":"object","required":["b"],"additionalProperties":false}`, `"required"`},
		{`{"enum":[1,2],"minimum":0}`, `"minimum"`},
		{`{"$ref":"#/properties/a","minLength":1,"properties":{"a":{}}}`, `"minLength"`},
		{`{"$ref":"#"}`, `left-recursive`},
		{`{"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]}`, `no finite output`},
		{`{"dependentRequired":{}}`, `"dependentRequired"`},
		{`false`, `schema false`},
		{`{"type":"string"`, `not valid JSON`},
		{`{"type":"integer","minimum":5,"maximum":2}`, `no value`},
		{`{"type":"string","minLength":2000}`, `"minLength"`},
	}
	v, _ := byteVocab()
	for _, tc := range cases {
		g, err := FromJSONSchema([]byte(tc.schema))
		if err == nil {
			_, err = Compile(g, v)
		}
		if err == nil {
			t.Errorf("%s: accepted, want an error naming %s", tc.schema, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not name %s", tc.schema, err, tc.want)
		}
	}
}

// Annotations constrain nothing and are accepted (Pydantic/OpenAI tool
// schemas carry them).
func TestSchemaAnnotationsAccepted(t *testing.T) {
	s := `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","$comment":"c","title":"T","description":"d",
	"type":"object","properties":{"a":{"type":"string","default":"z","examples":["q"],"deprecated":true,"readOnly":true,"writeOnly":false}},
	"required":["a"],"additionalProperties":false}`
	if _, err := FromJSONSchema([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func TestGBNFErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{`root ::= "a`, "line 1 col 10: unterminated string literal"},
		{"root ::= \"a\"\nfoo ::= [a-", "line 2 col 9: unterminated character class"},
		{`root ::= ( "a"`, "expected ) to close the group"},
		{`root ::= "a" )`, "unbalanced )"},
		{`root ::= foo`, `undefined rule "foo"`},
		{`foo ::= "a"`, `no root rule "root"`},
		{`root ::= "a" root ::= "b"`, `rule "root" defined twice`},
		{`root = "a"`, "expected ::= after rule name"},
		{`::= "a"`, "expected a rule name"},
		{`root ::= [z-a]`, "reversed"},
		{`root ::= "a"{3,1}`, "min > max"},
		{`root ::= "a"{x}`, "bad repetition"},
		{`root ::= "\q"`, `unknown escape \q`},
		{`root ::= "\xZZ"`, `bad \x escape`},
		{`root ::= root "a" | "b"`, `"root" is left-recursive`},
		{"root ::= (\"\")*", `repeats (*, +) an expression that can match the empty string`},
		{`root ::= <[12]>`, "token references"},
		{``, "empty grammar"},
		{`root ::= "a" @`, `unexpected '@'`},
	}
	v, _ := byteVocab()
	for _, tc := range cases {
		g, err := ParseGBNF(tc.src)
		if err == nil {
			_, err = Compile(g, v)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.src, err, tc.want)
		}
	}
}

func TestRegexErrors(t *testing.T) {
	for _, re := range []string{`(?=a)`, `a\1`, `\b`, `a^b`, `*a`, `[a`, `(a`, `a{2,1}`, `(?i)a`, `[[:alpha:]]`, `a++`} {
		if _, err := FromRegex(re); err == nil {
			t.Errorf("regex %q accepted", re)
		}
	}
}

func TestBudgetError(t *testing.T) {
	g, err := FromJSONSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := byteVocab()
	c, err := Compile(g, v)
	if err != nil {
		t.Fatal(err)
	}
	// {"name":""} is 11 bytes: one single-byte token each.
	if c.MinTokens() != 11 {
		t.Fatalf("MinTokens = %d, want 11", c.MinTokens())
	}
	if _, err := c.NewMatcher(10); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "max_tokens is 10") {
		t.Fatalf("NewMatcher(10) error %v, want ErrBudget naming max_tokens", err)
	}
	if _, err := c.NewMatcher(11); err != nil {
		t.Fatal(err)
	}
}
