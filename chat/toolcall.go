package chat

// Tool calling, seen from the template's side and the model's side.
//
// Going in, an OpenAI request carries tools as
// [{"type": "function", "function": {"name", "description", "parameters"}}]
// — exactly what Hugging Face passes as the template variable `tools` — and
// assistant turns carry tool_calls whose function.arguments is a JSON
// *string*. HF templates expect arguments as an object (they apply tojson
// to it, or iterate its items), so ToolCall.TemplateValue decodes the string
// first, keeping key order. Tool results are messages with role "tool",
// tool_call_id and (optionally) name.
//
// Coming out, the model writes its calls as text in its family's format
// (ToolFormat); ParseToolCalls and ToolStream turn that text back into
// calls with ids, plus whatever ordinary content surrounds them.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"nanoserve/chat/internal/tmpl"
)

// ToolFormat names how a model family writes tool calls in its output.
type ToolFormat string

const (
	// ToolFormatNone: the template has no tool support; output is content.
	ToolFormatNone ToolFormat = "none"
	// ToolFormatHermes: Hermes / Qwen2.5 / Qwen3, one call per block:
	//	<tool_call>
	//	{"name": "get_weather", "arguments": {"city": "Paris"}}
	//	</tool_call>
	ToolFormatHermes ToolFormat = "hermes"
	// ToolFormatLlama3: Llama 3.1/3.2/3.3 JSON tool calling: the whole reply
	// is {"name": "get_weather", "parameters": {"city": "Paris"}}, optionally
	// after <|python_tag|>.
	ToolFormatLlama3 ToolFormat = "llama3-json"
	// ToolFormatMistral: Mistral v0.3 and later:
	//	[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}]
	// [TOOL_CALLS] is a control token; a tokenizer that drops control text
	// when decoding leaves a reply that starts with the bare array, which is
	// also accepted. Call ids are exactly 9 alphanumerics (the template
	// raises otherwise).
	ToolFormatMistral ToolFormat = "mistral"
)

// ToolFormats lists the formats ParseToolFormat accepts (for flag help).
var ToolFormats = []ToolFormat{ToolFormatHermes, ToolFormatLlama3, ToolFormatMistral, ToolFormatGeneric, ToolFormatNone}

// ParseToolFormat reads a format name as a CLI flag gives it; "" and "auto"
// return "" (meaning: detect from the template).
func ParseToolFormat(s string) (ToolFormat, error) {
	switch s {
	case "", "auto":
		return "", nil
	case "qwen":
		return ToolFormatHermes, nil
	case "llama3":
		return ToolFormatLlama3, nil
	}
	for _, f := range ToolFormats {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(ToolFormats))
	for i, f := range ToolFormats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("chat: unknown tool-call format %q (auto, %s)", s, strings.Join(names, ", "))
}

// DetectToolFormat picks the tool-call format from a chat template's
// source, by the literal wrapper text the template teaches the model:
// "<tool_call>" (Hermes/Qwen), "[TOOL_CALLS]" (Mistral), or Llama-3's
// '"parameters"' instruction in a header-id template. A template that
// mentions none of these gets ToolFormatNone.
func DetectToolFormat(src string) ToolFormat {
	switch {
	case strings.Contains(src, "<tool_call>"):
		return ToolFormatHermes
	case strings.Contains(src, "[TOOL_CALLS]"):
		return ToolFormatMistral
	case strings.Contains(src, `"parameters"`) && (strings.Contains(src, "<|start_header_id|>") || strings.Contains(src, "<|python_tag|>")):
		return ToolFormatLlama3
	}
	return ToolFormatNone
}

// ToolCall is one function call: the id the client echoes back in the
// tool message, the function name and its arguments as JSON text (an
// object), as OpenAI's API carries them.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// TemplateValue is the call as Hugging Face templates expect it in an
// assistant message's tool_calls: {"id", "type": "function", "function":
// {"name", "arguments"}} with arguments decoded from its JSON string into
// an object (key order kept). Empty arguments read as {}. Arguments that
// are not a JSON object are an error.
func (c ToolCall) TemplateValue() (json.RawMessage, error) {
	args := strings.TrimSpace(c.Arguments)
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) || args[0] != '{' {
		return nil, fmt.Errorf("chat: tool call %q: arguments must be a JSON object, got %.40q", c.Name, c.Arguments)
	}
	b := []byte(`{"id":`)
	b = appendJSONString(b, c.ID)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = appendJSONString(b, c.Name)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, "}}"...)
	return json.RawMessage(b), nil
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewToolCallID returns a fresh random call id in the form the format
// needs: 9 alphanumerics for Mistral, "call_" + 24 alphanumerics otherwise
// (OpenAI's shape).
func NewToolCallID(f ToolFormat) string {
	n, prefix := 24, "call_"
	if f == ToolFormatMistral {
		n, prefix = 9, ""
	}
	var r [24]byte
	rand.Read(r[:n])
	b := []byte(prefix)
	for _, x := range r[:n] {
		b = append(b, alnum[int(x)%len(alnum)])
	}
	return string(b)
}

// TemplateID maps a client's call id to one the format's template accepts.
// Mistral's template raises unless an id is exactly 9 characters (its
// tokenizer wants 9 alphanumerics), yet clients send ids minted elsewhere
// ("call_abc..."); those are mapped, deterministically, to 9 alphanumerics
// derived from a hash of the id, so an assistant call and the tool result
// answering it still agree. Other formats keep ids as they are.
func (f ToolFormat) TemplateID(id string) string {
	if f != ToolFormatMistral || isMistralID(id) {
		return id
	}
	h := sha256.Sum256([]byte(id))
	b := make([]byte, 9)
	for i := range b {
		b[i] = alnum[int(h[i])%len(alnum)]
	}
	return string(b)
}

func isMistralID(id string) bool {
	if len(id) != 9 {
		return false
	}
	for i := range len(id) {
		if !strings.ContainsRune(alnum, rune(id[i])) {
			return false
		}
	}
	return true
}

// OpenAIToolCall converts one element of an assistant message's tool_calls
// as OpenAI clients send it — {"id", "type": "function", "function":
// {"name", "arguments": "<JSON text>"}} — into the value Hugging Face
// templates expect: the same object, key order kept, with
// function.arguments decoded from its string into an object in place (an
// empty string, null or no arguments read as {}; an object is kept as it is) and the id passed
// through f.TemplateID. The result goes into Message.ToolCalls.
func OpenAIToolCall(raw json.RawMessage, f ToolFormat) (any, error) {
	v, err := decodeOrdered(raw)
	if err != nil || !v.IsDict() {
		return nil, errors.New("chat: a tool call must be a JSON object")
	}
	call := v.Dict()
	fn, ok := call.GetStr("function")
	if !ok || !fn.IsDict() {
		return nil, errors.New("chat: a tool call needs a \"function\" object")
	}
	name, ok := fn.Dict().GetStr("name")
	if !ok || !name.IsString() || name.Str() == "" {
		return nil, errors.New("chat: a tool call's function needs a non-empty string \"name\"")
	}
	if args, ok := fn.Dict().GetStr("arguments"); !ok || args.IsNone() {
		fn.Dict().SetStr("arguments", tmpl.NewDict()) // absent or null: no arguments
	} else if args.IsString() {
		text := strings.TrimSpace(args.Str())
		if text == "" {
			text = "{}"
		}
		obj, err := decodeOrdered([]byte(text))
		if err != nil || !obj.IsDict() {
			return nil, fmt.Errorf("chat: tool call %q: function.arguments must be a JSON object encoded as a string", name.Str())
		}
		fn.Dict().SetStr("arguments", obj)
	} else if !args.IsDict() {
		return nil, fmt.Errorf("chat: tool call %q: function.arguments must be a JSON object encoded as a string", name.Str())
	}
	if id, ok := call.GetStr("id"); ok && id.IsString() {
		call.SetStr("id", tmpl.String(f.TemplateID(id.Str())))
	}
	return v, nil
}
