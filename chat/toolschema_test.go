package chat

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestToolCallConstraint: the constraint's text shape, filled with a call
// valid for its schema, parses back as that call in the same format; the
// schema pins the function name and the arguments schema.
func TestToolCallConstraint(t *testing.T) {
	fns := []ToolFunction{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{Name: "ping"},
	}
	for _, f := range []ToolFormat{ToolFormatHermes, ToolFormatLlama3, ToolFormatMistral} {
		for _, parallel := range []bool{false, true} {
			c, err := ToolCallConstraint(f, fns, "", parallel)
			if err != nil {
				t.Fatal(err)
			}
			var schema map[string]any
			if err := json.Unmarshal(c.Schema, &schema); err != nil {
				t.Fatalf("%s: schema %s: %v", f, c.Schema, err)
			}
			argsKey := "arguments"
			if f == ToolFormatLlama3 {
				argsKey = "parameters"
			}
			call := `{"name": "get_weather", "` + argsKey + `": {"city": "Paris"}}`
			value := call
			if f == ToolFormatMistral {
				value = "[" + call + "]"
				if parallel != (schema["maxItems"] == nil) {
					t.Errorf("%s parallel=%v: maxItems %v", f, parallel, schema["maxItems"])
				}
				schema = schema["items"].(map[string]any)
			}
			alts := schema["anyOf"].([]any)
			first := alts[0].(map[string]any)
			props := first["properties"].(map[string]any)
			if len(alts) != 2 || props["name"].(map[string]any)["const"] != "get_weather" || props[argsKey] == nil ||
				!reflect.DeepEqual(first["required"], []any{"name", argsKey}) || first["additionalProperties"] != false {
				t.Errorf("%s: schema %s", f, c.Schema)
			}
			if !strings.HasPrefix(string(c.Schema), `{"`) || (f == ToolFormatHermes) != c.Repeat && parallel {
				t.Errorf("%s: %+v", f, c)
			}
			// Mistral's [TOOL_CALLS] is a control token, matched by id.
			if wantCtl := f == ToolFormatMistral; wantCtl != slices.Contains(c.ControlTokens, "[TOOL_CALLS]") ||
				(!wantCtl && len(c.ControlTokens) > 0) || (wantCtl && !strings.HasPrefix(c.Prefix, "[TOOL_CALLS]")) {
				t.Errorf("%s: control tokens %q", f, c.ControlTokens)
			}
			text := c.Prefix + value + c.Suffix
			if c.Repeat {
				text += c.Separator + text
			}
			content, calls := ParseToolCalls(f, text, counterIDs())
			want := 1
			if c.Repeat {
				want = 2
			}
			if content != "" || len(calls) != want || calls[0].Name != "get_weather" || calls[0].Arguments != `{"city": "Paris"}` {
				t.Errorf("%s: %q parsed as %q %+v", f, text, content, calls)
			}
		}
	}
	c, err := ToolCallConstraint(ToolFormatHermes, fns, "ping", false)
	if err != nil || string(c.Schema) != `{"type":"object","properties":{"name":{"const":"ping"},"arguments":{"type":"object","properties":{}}},"required":["name","arguments"],"additionalProperties":false}` {
		t.Errorf("named: %s %v", c.Schema, err)
	}
	for _, bad := range []struct {
		f    ToolFormat
		fns  []ToolFunction
		only string
		want string
	}{
		{ToolFormatHermes, fns, "nope", "not among the tools"},
		{ToolFormatHermes, nil, "", "at least one tool"},
		{ToolFormatNone, fns, "", "cannot force"},
		{ToolFormatHermes, []ToolFunction{{Name: "f", Parameters: json.RawMessage(`[1]`)}}, "", "JSON Schema object"},
		{ToolFormatHermes, []ToolFunction{{Name: ""}}, "", "name is empty"},
	} {
		if _, err := ToolCallConstraint(bad.f, bad.fns, bad.only, false); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: err %v", bad, err)
		}
	}
}

func TestCallConstraintGBNFRoot(t *testing.T) {
	fns := []ToolFunction{{Name: "f"}}
	want := map[ToolFormat]map[bool]string{
		ToolFormatHermes: {
			false: `root ::= "<tool_call>\n" v "\n</tool_call>"`,
			true:  `root ::= "<tool_call>\n" v "\n</tool_call>" ("\n" "<tool_call>\n" v "\n</tool_call>")*`,
		},
		ToolFormatMistral: {false: `root ::= "[TOOL_CALLS] " v`, true: `root ::= "[TOOL_CALLS] " v`},
		ToolFormatLlama3:  {false: `root ::= v`, true: `root ::= v`},
	}
	for f, byPar := range want {
		for par, w := range byPar {
			c, err := ToolCallConstraint(f, fns, "", par)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.GBNFRoot("v"); got != w {
				t.Errorf("%s parallel=%v: %s, want %s", f, par, got, w)
			}
		}
	}
	if got := gbnfLiteral("a\"\\\t\x01é"); got != `"a\"\\\t\x01é"` {
		t.Errorf("literal %s", got)
	}
}

// TestGenericConstraint: the generic reply's schema — a call object, a
// list of them with parallel calls, and with tool_choice auto the
// {"response"} alternative — with each parameters schema's references
// rebased to where it sits.
func TestGenericConstraint(t *testing.T) {
	fns := []ToolFunction{{Name: "f", Parameters: json.RawMessage(`{"$defs":{"X":{"type":"integer"}},"type":"object","properties":{"x":{"$ref":"#/$defs/X"}}}`)}}
	args := func(base string) string {
		return `{"type":"object","properties":{"name":{"const":"f"},"arguments":{"$defs":{"X":{"type":"integer"}},"type":"object","properties":{"x":{"$ref":"#` +
			base + `/properties/arguments/$defs/X"}}}},"required":["name","arguments"],"additionalProperties":false}`
	}
	obj := func(key, schema string) string {
		return `{"type":"object","properties":{"` + key + `":` + schema + `},"required":["` + key + `"],"additionalProperties":false}`
	}
	resp := obj("response", `{"type":"string"}`)
	c, err := ToolCallConstraint(ToolFormatGeneric, fns, "", false)
	if want := obj("tool_call", args("/properties/tool_call")); err != nil || string(c.Schema) != want {
		t.Errorf("required:\n%s %v\nwant\n%s", c.Schema, err, want)
	}
	c, err = ToolCallConstraint(ToolFormatGeneric, fns, "f", true)
	if want := obj("tool_calls", `{"type":"array","items":`+args("/properties/tool_calls/items")+`,"minItems":1}`); err != nil || string(c.Schema) != want {
		t.Errorf("named, parallel:\n%s %v\nwant\n%s", c.Schema, err, want)
	}
	c, err = GenericReplyConstraint(fns, false)
	if want := `{"anyOf":[` + obj("tool_call", args("/anyOf/0/properties/tool_call")) + `,` + resp + `]}`; err != nil || string(c.Schema) != want {
		t.Errorf("auto:\n%s %v\nwant\n%s", c.Schema, err, want)
	}
	if c.Prefix != "" || c.Suffix != "" || c.Repeat {
		t.Errorf("the generic reply is bare JSON: %+v", c)
	}
	if _, err := ToolCallConstraint(ToolFormatGeneric, fns, "g", false); err == nil {
		t.Error("an unknown named function is accepted")
	}
	p := GenericToolPrompt(fns, true, false)
	if !strings.Contains(p, `{"name":"f","parameters":{"$defs"`) || !strings.Contains(p, `{"tool_call": `) || strings.Contains(p, `"response"`) {
		t.Errorf("required prompt %q", p)
	}
	if p := GenericToolPrompt(fns, false, true); !strings.Contains(p, `{"tool_calls": [`) || !strings.Contains(p, `{"response": `) {
		t.Errorf("auto parallel prompt %q", p)
	}
}
