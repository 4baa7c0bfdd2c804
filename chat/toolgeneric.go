package chat

// The generic tool-call format, for models whose chat template has no tool
// syntax of its own (llama-server falls back the same way).
//
// Such a template never shows the model the tools, and the model has no
// markers to write calls with. So the server does both itself:
//
//   - Going in, GenericToolPrompt describes the tools (name, description,
//     parameters schema, as JSON) and the reply's shape in a system
//     message; earlier assistant calls are written into their turn's
//     content in that same shape (GenericCallsText).
//   - The reply is constrained (always, not only when a call is forced) to
//     one JSON object: {"tool_call": {"name", "arguments"}} — with
//     parallel calls {"tool_calls": [{"name", "arguments"}, ...]} — or,
//     unless a call is required, {"response": "text for the user"}
//     (GenericReplyConstraint, ToolCallConstraint).
//   - Coming out, ParseToolCalls reads that object back: the call(s), or
//     the response string as the content. Text that is not such an object
//     (a reply cut by max_tokens) is content as it stands.
//
// The streaming parser holds the reply until it ends (the object is only
// decided then), so a streamed reply equals the whole one.

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ToolFormatGeneric: the server's own JSON shape for templates without
// tool syntax (see the comment at the top of toolgeneric.go).
const ToolFormatGeneric ToolFormat = "generic"

// GenericToolPrompt is the system text that shows the model fns and the
// JSON reply it must write. required leaves out the direct answer;
// parallel asks for a list of calls.
func GenericToolPrompt(fns []ToolFunction, required, parallel bool) string {
	var b strings.Builder
	b.WriteString("You have access to the following tools, described as JSON (each one's arguments follow its \"parameters\" JSON Schema):\n")
	for _, fn := range fns {
		params := bytes.TrimSpace(fn.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		one, _ := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}{fn.Name, fn.Description, json.RawMessage(params)})
		b.Write(one)
		b.WriteByte('\n')
	}
	b.WriteString("\nReply with a single JSON object and nothing else. ")
	if parallel {
		b.WriteString(`To call tools: {"tool_calls": [{"name": "<tool name>", "arguments": {<arguments>}}, ...]}.`)
	} else {
		b.WriteString(`To call a tool: {"tool_call": {"name": "<tool name>", "arguments": {<arguments>}}}.`)
	}
	if required {
		b.WriteString(" You must call a tool.")
	} else {
		b.WriteString(` To answer the user directly: {"response": "<your answer>"}.`)
	}
	return b.String()
}

// GenericCallsText is how an earlier assistant turn's calls are written
// in its content for a generic-format model: the object it would have
// replied with ({"tool_call": ...} for one call, {"tool_calls": [...]}
// for several). Arguments must be JSON objects (empty: {}).
func GenericCallsText(calls []ToolCall) string {
	type call struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	out := make([]call, len(calls))
	for i, c := range calls {
		args := strings.TrimSpace(c.Arguments)
		if args == "" || !json.Valid([]byte(args)) {
			args = "{}"
		}
		out[i] = call{c.Name, json.RawMessage(args)}
	}
	var b []byte
	if len(out) == 1 {
		b, _ = json.Marshal(struct {
			ToolCall call `json:"tool_call"`
		}{out[0]})
	} else {
		b, _ = json.Marshal(struct {
			ToolCalls []call `json:"tool_calls"`
		}{out})
	}
	return string(b)
}

// GenericReplyConstraint is the constraint of a generic-format reply when
// the model may choose (tool_choice auto): a call object (see
// ToolCallConstraint) or {"response": string}.
func GenericReplyConstraint(fns []ToolFunction, parallel bool) (*CallConstraint, error) {
	return genericConstraint(fns, "", parallel, true)
}

// genericConstraint builds the generic reply's schema: {"tool_call": call}
// or {"tool_calls": [call, ...]}, and with answer also {"response":
// string} as the other alternative.
func genericConstraint(fns []ToolFunction, only string, parallel, answer bool) (*CallConstraint, error) {
	base := ""
	if answer {
		base = "/anyOf/0"
	}
	key := "tool_call"
	at := base + "/properties/tool_call"
	if parallel {
		key, at = "tool_calls", base+"/properties/tool_calls/items"
	}
	one, err := callAlternatives(fns, only, "arguments", at)
	if err != nil {
		return nil, err
	}
	if parallel {
		if one, err = json.Marshal(struct {
			Type     string          `json:"type"`
			Items    json.RawMessage `json:"items"`
			MinItems int             `json:"minItems"`
		}{"array", one, 1}); err != nil {
			return nil, err
		}
	}
	callObj := wrapObject(key, one)
	if !answer {
		return &CallConstraint{Schema: callObj}, nil
	}
	s, err := json.Marshal(struct {
		AnyOf []json.RawMessage `json:"anyOf"`
	}{[]json.RawMessage{callObj, wrapObject("response", json.RawMessage(`{"type":"string"}`))}})
	if err != nil {
		return nil, err
	}
	return &CallConstraint{Schema: s}, nil
}

// wrapObject is the schema of {key: value valid for schema}, nothing else.
func wrapObject(key string, schema json.RawMessage) json.RawMessage {
	b := []byte(`{"type":"object","properties":{`)
	b = appendJSONString(b, key)
	b = append(b, ':')
	b = append(b, schema...)
	b = append(b, `},"required":[`...)
	b = appendJSONString(b, key)
	b = append(b, `],"additionalProperties":false}`...)
	return b
}

// parseGeneric reads a whole generic-format reply. ok is false when the
// text is not one JSON object holding tool_call, tool_calls or response
// (it is then content as it stands).
func parseGeneric(text string) (content string, calls []ToolCall, ok bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") {
		return "", nil, false
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(t))
	if dec.Decode(&obj) != nil || strings.TrimSpace(t[dec.InputOffset():]) != "" {
		return "", nil, false
	}
	if raw, has := obj["tool_calls"]; has {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
			return "", nil, false
		}
		for _, it := range items {
			c, ok := parseCall(it)
			if !ok {
				return "", nil, false
			}
			calls = append(calls, c)
		}
		return "", calls, true
	}
	if raw, has := obj["tool_call"]; has {
		c, ok := parseCall(raw)
		if !ok {
			return "", nil, false
		}
		return "", []ToolCall{c}, true
	}
	if raw, has := obj["response"]; has {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, nil, true
		}
		return string(bytes.TrimSpace(raw)), nil, true // a structured answer: its JSON
	}
	return "", nil, false
}
