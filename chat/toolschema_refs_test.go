package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"nanoserve/grammar"
)

// pydanticParams is what Pydantic's model_json_schema() writes for a model
// with a nested model field: the nested one under $defs, referenced from
// the properties (issue 29: `reference "#/$defs/Address" does not resolve`
// under tool_choice "required", which resolved it against the call
// wrapper instead of the parameters schema).
const pydanticParams = `{"$defs":{"Address":{"properties":{"city":{"title":"City","type":"string"},"zip":{"title":"Zip","type":"integer"}},"required":["city","zip"],"title":"Address","type":"object"}},` +
	`"properties":{"name":{"title":"Name","type":"string"},"home":{"$ref":"#/$defs/Address"},"tags":{"items":{"$ref":"#/$defs/Address"},"type":"array","default":[{"$ref":"#/not/a/schema"}]}},"required":["name","home"],"title":"Person","type":"object"}`

// TestToolCallConstraintDefs: references in a tool's parameters resolve
// against that parameters schema wherever the call schema places it (one
// tool, several tools under anyOf, Mistral's array), and the constraint
// accepts a call whose arguments use the referenced definition.
func TestToolCallConstraintDefs(t *testing.T) {
	v, err := grammar.NewVocab(byteTokens(), nil, []int{256})
	if err != nil {
		t.Fatal(err)
	}
	person := ToolFunction{Name: "add_person", Parameters: json.RawMessage(pydanticParams)}
	other := ToolFunction{Name: "other", Parameters: json.RawMessage(`{"$defs":{"Address":{"type":"integer"}},"type":"object","properties":{"a":{"$ref":"#/$defs/Address"}},"required":["a"]}`)}
	args := `{"name": "Ann", "home": {"city": "Oslo", "zip": 150}}`
	for _, tc := range []struct {
		f    ToolFormat
		fns  []ToolFunction
		text string
	}{
		{ToolFormatHermes, []ToolFunction{person}, `{"name": "add_person", "arguments": ` + args + `}`},
		{ToolFormatHermes, []ToolFunction{other, person}, `{"name": "add_person", "arguments": ` + args + `}`},
		{ToolFormatHermes, []ToolFunction{other, person}, `{"name": "other", "arguments": {"a": 7}}`},
		{ToolFormatLlama3, []ToolFunction{person}, `{"name": "add_person", "parameters": ` + args + `}`},
		{ToolFormatMistral, []ToolFunction{other, person}, `[{"name": "add_person", "arguments": ` + args + `}]`},
	} {
		c, err := ToolCallConstraint(tc.f, tc.fns, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(c.Schema), `"#/not/a/schema"`) == false {
			t.Errorf("%s: a $ref inside default (data, not a schema) was rewritten: %s", tc.f, c.Schema)
		}
		g, err := grammar.FromJSONSchema(c.Schema)
		if err != nil {
			t.Fatalf("%s, %d tools: %v\nschema %s", tc.f, len(tc.fns), err, c.Schema)
		}
		con, err := grammar.Compile(g, v)
		if err != nil {
			t.Fatal(err)
		}
		m, err := con.NewMatcher(0)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.AcceptBytes([]byte(tc.text)); err != nil || !m.Accepting() {
			t.Errorf("%s, %d tools: %s not accepted (%v)", tc.f, len(tc.fns), tc.text, err)
		}
		bad := strings.Replace(tc.text, `"zip": 150`, `"zip": "x"`, 1)
		bad = strings.Replace(bad, `"a": 7`, `"a": "x"`, 1)
		m, _ = con.NewMatcher(0)
		if err := m.AcceptBytes([]byte(bad)); err == nil && m.Accepting() {
			t.Errorf("%s, %d tools: %s accepted (the reference resolved to the wrong schema)", tc.f, len(tc.fns), bad)
		}
	}
}

func byteTokens() [][]byte {
	var toks [][]byte
	for b := 0; b < 256; b++ {
		toks = append(toks, []byte{byte(b)})
	}
	return append(toks, []byte("</s>"))
}
