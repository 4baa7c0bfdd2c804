package chat

// Forcing a tool call: tool_choice "required" or a named function means the
// reply must be a call, in the model's format, to one of the offered
// functions with arguments valid for its parameters schema. A JSON-Schema
// grammar can enforce the JSON part; the format's wrapper text
// ("<tool_call>\n" ... "\n</tool_call>", "[TOOL_CALLS] ") is not JSON, so
// CallConstraint describes the reply as literal text + schema + literal text.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ToolFunction is one function a request offers: OpenAI's
// tools[].function.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema object; empty: no parameters
}

// CallConstraint is the shape of a forced reply: Prefix, then one JSON
// value valid against Schema, then Suffix. With Repeat the reply is one or
// more such blocks joined by Separator (parallel calls in formats that
// write one block per call). Text the parser reads back as the call(s)
// with ParseToolCalls in the same format.
type CallConstraint struct {
	Prefix    string
	Schema    json.RawMessage
	Suffix    string
	Repeat    bool
	Separator string
	// ControlTokens are texts in Prefix that the model writes as one
	// control token (Mistral's [TOOL_CALLS]), not as text.
	ControlTokens []string
}

// callSchema is one call object's schema; field order is the order the
// grammar should make the model write the keys (name first, so a streamed
// call names its function early).
type callSchema struct {
	Type                 string    `json:"type"`
	Properties           callProps `json:"properties"`
	Required             []string  `json:"required"`
	AdditionalProperties bool      `json:"additionalProperties"`
}

// callProps is {"name": {"const": name}, argsKey: the parameters schema}.
type callProps struct {
	name, argsKey string
	args          json.RawMessage
}

func (p callProps) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"name":{"const":`)
	b.Write(appendJSONString(nil, p.name))
	b.WriteString(`},`)
	b.Write(appendJSONString(nil, p.argsKey))
	b.WriteByte(':')
	b.Write(p.args)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ToolCallConstraint builds the constraint for a reply that must call one
// of fns (only the function named only, when only != ""), in format f. With
// parallel, several calls may follow one another where the format allows:
// Hermes repeats its block, Mistral's array takes more items; Llama-3's
// templates render one call per turn, so it stays at one.
func ToolCallConstraint(f ToolFormat, fns []ToolFunction, only string, parallel bool) (*CallConstraint, error) {
	if len(fns) == 0 {
		return nil, fmt.Errorf("chat: a forced tool call needs at least one tool")
	}
	if f == ToolFormatGeneric {
		return genericConstraint(fns, only, parallel, false)
	}
	argsKey := "arguments"
	if f == ToolFormatLlama3 {
		argsKey = "parameters"
	}
	base := ""
	if f == ToolFormatMistral {
		base = "/items"
	}
	one, err := callAlternatives(fns, only, argsKey, base)
	if err != nil {
		return nil, err
	}
	switch f {
	case ToolFormatHermes:
		return &CallConstraint{Prefix: "<tool_call>\n", Schema: one, Suffix: "\n</tool_call>", Repeat: parallel, Separator: "\n"}, nil
	case ToolFormatLlama3:
		return &CallConstraint{Schema: one}, nil
	case ToolFormatMistral:
		arr := struct {
			Type     string          `json:"type"`
			Items    json.RawMessage `json:"items"`
			MinItems int             `json:"minItems"`
			MaxItems *int            `json:"maxItems,omitempty"`
		}{Type: "array", Items: one, MinItems: 1}
		if !parallel {
			arr.MaxItems = new(int)
			*arr.MaxItems = 1
		}
		s, err := json.Marshal(arr)
		if err != nil {
			return nil, err
		}
		return &CallConstraint{Prefix: "[TOOL_CALLS] ", Schema: s, ControlTokens: []string{"[TOOL_CALLS]"}}, nil
	}
	return nil, fmt.Errorf("chat: the tool-call format %q cannot force a call (the template has no tool-call syntax; choose one with the tool-call format option)", f)
}

// GBNFRoot is the constraint's text shape as a GBNF root rule, for a
// grammar whose rule valueRule matches one JSON value valid for Schema
// (what a JSON-Schema → GBNF compiler produces):
//
//	root ::= "<tool_call>\n" call-value "\n</tool_call>" ("\n" "<tool_call>\n" call-value "\n</tool_call>")*
//
// Literals use the GBNF escapes \n \r \t \\ \" and \xHH for other control
// bytes.
// GBNF has no control-token terminal, so ControlTokens are spelt as text
// here; the server enforces forced calls with grammar.Wrap instead, which
// matches them by token id.
func (c *CallConstraint) GBNFRoot(valueRule string) string {
	one := valueRule
	if c.Prefix != "" {
		one = gbnfLiteral(c.Prefix) + " " + one
	}
	if c.Suffix != "" {
		one += " " + gbnfLiteral(c.Suffix)
	}
	if !c.Repeat {
		return "root ::= " + one
	}
	sep := ""
	if c.Separator != "" {
		sep = gbnfLiteral(c.Separator) + " "
	}
	return "root ::= " + one + " (" + sep + one + ")*"
}

// gbnfLiteral quotes s as a GBNF string literal.
func gbnfLiteral(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\n':
			b = append(b, `\n`...)
		case ch == '\r':
			b = append(b, `\r`...)
		case ch == '\t':
			b = append(b, `\t`...)
		case ch == '\\' || ch == '"':
			b = append(b, '\\', ch)
		case ch < 0x20 || ch == 0x7f:
			b = append(b, fmt.Sprintf(`\x%02X`, ch)...)
		default:
			b = append(b, ch)
		}
	}
	return string(append(b, '"'))
}

// dataKeywords hold JSON values, not schemas: a "$ref" inside them is data.
var dataKeywords = map[string]bool{"const": true, "enum": true, "default": true, "examples": true}

// nameMaps are keywords whose value maps names to schemas.
var nameMaps = map[string]bool{"properties": true, "$defs": true, "definitions": true, "patternProperties": true, "dependentSchemas": true}

// rebaseRefs rewrites every local reference ("$ref": "#...") in the schema
// raw so that it resolves the same when raw sits at JSON pointer base
// inside another document: "#/$defs/X" becomes "#"+base+"/$defs/X". Key
// order is kept (it is the order the grammar writes properties in);
// values under const, enum, default and examples are left alone.
func rebaseRefs(raw []byte, base string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out []byte
	// schema: tok starts a schema (or a list or map of them); names: tok is
	// an object whose keys are names (properties, $defs), not keywords.
	var value func(tok json.Token, schema, names bool) error
	value = func(tok json.Token, schema, names bool) error {
		switch t := tok.(type) {
		case json.Delim:
			open, close := byte(t), byte('}')
			if t == '[' {
				close = ']'
			}
			out = append(out, open)
			for n := 0; dec.More(); n++ {
				if n > 0 {
					out = append(out, ',')
				}
				k := ""
				if open == '{' {
					kt, err := dec.Token()
					if err != nil {
						return err
					}
					k, _ = kt.(string)
					out = append(appendJSONString(out, k), ':')
				}
				v, err := dec.Token()
				if err != nil {
					return err
				}
				keyword := open == '{' && !names
				if r, ok := v.(string); ok && schema && keyword && k == "$ref" && strings.HasPrefix(r, "#") {
					out = appendJSONString(out, "#"+base+r[1:])
					continue
				}
				if err := value(v, schema && !(keyword && dataKeywords[k]), keyword && nameMaps[k]); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out = append(out, close)
		case string:
			out = appendJSONString(out, t)
		case json.Number:
			out = append(out, t.String()...)
		case bool:
			out = strconv.AppendBool(out, t)
		case nil:
			out = append(out, "null"...)
		}
		return nil
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if err := value(tok, true, false); err != nil {
		return nil, err
	}
	return out, nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// callAlternatives is the schema of one call to any of fns (only the one
// named only, when only != ""): {"name": {"const": name}, argsKey:
// parameters}, or an anyOf of those. base is the JSON pointer at which the
// result sits in the whole schema (each parameters schema's own references
// are rebased under it).
func callAlternatives(fns []ToolFunction, only, argsKey, base string) (json.RawMessage, error) {
	type offered struct {
		i      int
		params []byte
	}
	var picked []offered
	for i, fn := range fns {
		if fn.Name == "" {
			return nil, fmt.Errorf("chat: tools[%d].function.name is empty", i)
		}
		if only != "" && fn.Name != only {
			continue
		}
		params := bytes.TrimSpace(fn.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		if params[0] != '{' || !json.Valid(params) {
			return nil, fmt.Errorf("chat: tools[%d].function.parameters (%s) must be a JSON Schema object", i, fn.Name)
		}
		picked = append(picked, offered{i, params})
	}
	if len(picked) == 0 {
		return nil, fmt.Errorf("chat: tool_choice names function %q, which is not among the tools", only)
	}
	// Each parameters schema is its own document: its references ("#",
	// "#/$defs/X", what Pydantic writes) point into it. Inside the call
	// schema it sits at a known JSON pointer, so they are rebased there.
	var alts []json.RawMessage
	for k, o := range picked {
		fn := fns[o.i]
		at := base
		if len(picked) > 1 {
			at += fmt.Sprintf("/anyOf/%d", k)
		}
		at += "/properties/" + escapePointer(argsKey)
		params, err := rebaseRefs(o.params, at)
		if err != nil {
			return nil, fmt.Errorf("chat: tools[%d].function.parameters (%s): %v", o.i, fn.Name, err)
		}
		s, err := json.Marshal(callSchema{Type: "object", Properties: callProps{fn.Name, argsKey, params},
			Required: []string{"name", argsKey}, AdditionalProperties: false})
		if err != nil {
			return nil, fmt.Errorf("chat: tools[%d] (%s): %w", o.i, fn.Name, err)
		}
		alts = append(alts, s)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return json.Marshal(struct {
		AnyOf []json.RawMessage `json:"anyOf"`
	}{alts})
}
