package server

// Tool calling on /v1/chat/completions.
//
// Request: tools (OpenAI's [{type: "function", function: {name,
// description, parameters}}], passed to the chat template as they came),
// tool_choice ("none", "auto", "required", or {type: "function", function:
// {name}}) and parallel_tool_calls; assistant messages with tool_calls and
// "tool" messages with tool_call_id travel to the template the way Hugging
// Face passes them (see chat.OpenAIToolCall). The legacy functions /
// function_call fields and "function" messages map onto the same path, and
// such a request is answered in the legacy shape (message.function_call,
// finish_reason "function_call").
//
// Response: the model's text is parsed in the template's tool-call format
// (chat.ToolFormat; Options.ToolFormat overrides detection) into
// message.tool_calls plus the remaining content (null when none), with
// finish_reason "tool_calls". Streaming emits OpenAI's deltas: for each
// call one chunk {index, id, type, function: {name, arguments: ""}} and
// then chunks with argument text; a call is sent once its text is complete
// (the parser holds back text that may belong to a call), so a streamed
// reply accumulates to exactly the non-streamed one.
//
// tool_choice "none" leaves the output unparsed (the tools still reach the
// template, as vLLM does by default). "required" and a named function
// constrain the output to a call (chat.ToolCallConstraint), compiled by
// the grammar engine like any other constraint (field "tool_choice"): in
// the llama3-json format the call is bare JSON, its JSON Schema alone; the
// Hermes and Mistral formats wrap the JSON in literal text, so the schema
// goes inside grammar.Wrap (Hermes' `<tool_call>` blocks, repeated for
// parallel calls; Mistral's [TOOL_CALLS], matched as the control token
// when the vocabulary has it). Either way the reply always parses as a
// call valid for the function's parameters.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/grammar"
)

// toolSetup is a chat request's validated tool fields.
type toolSetup struct {
	tools    []any // the template's `tools`, each element as the client sent it
	fns      []chat.ToolFunction
	choice   string // "none", "auto", "required" or "function"
	name     string // the forced function when choice is "function"
	parallel bool
	legacy   bool // functions/function_call: answer with function_call
	format   chat.ToolFormat
	forced   *constraintSpec // the constraint a forced call must match (nil: the model chooses)
}

// parse reports whether the reply is parsed for calls.
func (t *toolSetup) parse() bool { return t != nil && t.choice != "none" }

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// chatTools validates tools, tool_choice, parallel_tool_calls and the
// legacy functions / function_call. It returns nil when the request has
// no tools. Its jobs: which fields (toolFields), the function list
// (toolList), the choice (toolChoice), and for a forced call its
// constraint (forcedCall).
func (s *Server) chatTools(cr *chatRequest) (*toolSetup, *apiError) {
	tf, e := toolFields(cr)
	if tf == nil || e != nil {
		return nil, e
	}
	ts := &toolSetup{format: s.toolFormat, parallel: !tf.legacy, legacy: tf.legacy}
	seen, e := ts.toolList(tf)
	if e != nil {
		return nil, e
	}
	if e := ts.toolChoice(tf, seen); e != nil {
		return nil, e
	}
	if cr.ParallelToolCalls != nil {
		if tf.legacy {
			return nil, badRequest("parallel_tool_calls", "parallel_tool_calls goes with tools, not functions (deprecated)")
		}
		ts.parallel = *cr.ParallelToolCalls
	}
	if ts.choice != "none" && (ts.format == "" || ts.format == chat.ToolFormatNone) {
		return nil, badRequest(tf.field, "%s need a tool-call format to read calls from the reply, but the model's chat template has no tool-call format "+
			"(start the server with --tool-call-format, or send %s \"none\")", tf.field, tf.choiceField)
	}
	switch {
	case ts.choice == "required" || ts.choice == "function":
		if e := ts.forcedCall(tf.choiceField); e != nil {
			return nil, e
		}
	case ts.choice == "auto" && ts.format == chat.ToolFormatGeneric:
		// The generic format has no markers to notice a call by: the
		// reply is always the format's JSON object, a call or an answer.
		c, err := chat.GenericReplyConstraint(ts.fns, ts.parallel)
		if err != nil {
			return nil, badRequest(tf.field, "%s", strings.TrimPrefix(err.Error(), "chat: "))
		}
		ts.forced = &constraintSpec{field: tf.field, kind: engine.ConstraintJSONSchema, spec: string(c.Schema)}
	}
	return ts, nil
}

// toolRequest is which tool fields a chat request uses: tools and
// tool_choice, or the legacy functions and function_call.
type toolRequest struct {
	legacy             bool
	field, choiceField string          // "tools", "tool_choice" or "functions", "function_call"
	list, choice       json.RawMessage // their values
}

// toolFields tells which tool fields a request uses (nil: none, and a
// tool_choice other than none/auto without tools is a 400).
func toolFields(cr *chatRequest) (*toolRequest, *apiError) {
	hasTools, hasFns := !isNull(cr.Tools), !isNull(cr.Functions)
	switch {
	case hasTools && hasFns:
		return nil, badRequest("functions", "functions (deprecated) and tools cannot be used together; use tools")
	case !hasTools && !hasFns:
		for _, f := range []struct {
			name string
			raw  json.RawMessage
		}{{"tool_choice", cr.ToolChoice}, {"function_call", cr.FunctionCall}} {
			if !isNull(f.raw) && string(f.raw) != `"none"` && string(f.raw) != `"auto"` {
				return nil, badRequest(f.name, "%s %s needs tools", f.name, f.raw)
			}
		}
		return nil, nil // parallel_tool_calls alone changes nothing
	case hasFns:
		if !isNull(cr.ToolChoice) {
			return nil, badRequest("tool_choice", "tool_choice goes with tools; with functions (deprecated) use function_call")
		}
		return &toolRequest{legacy: true, field: "functions", choiceField: "function_call", list: cr.Functions, choice: cr.FunctionCall}, nil
	}
	return &toolRequest{field: "tools", choiceField: "tool_choice", list: cr.Tools, choice: cr.ToolChoice}, nil
}

// toolList reads the functions of tools (or functions) into ts: what the
// template gets and what constraints see. It returns the names.
func (ts *toolSetup) toolList(tf *toolRequest) (map[string]bool, *apiError) {
	field := tf.field
	var items []json.RawMessage
	if json.Unmarshal(tf.list, &items) != nil {
		return nil, badRequest(field, "%s must be an array", field)
	}
	if len(items) == 0 {
		return nil, badRequest(field, "%s must not be empty (leave it out for no tools)", field)
	}
	seen := map[string]bool{}
	for i, it := range items {
		f := field + "[" + strconv.Itoa(i) + "]"
		fnRaw := it
		if !tf.legacy {
			var tool struct {
				Type     string          `json:"type"`
				Function json.RawMessage `json:"function"`
			}
			if json.Unmarshal(it, &tool) != nil {
				return nil, badRequest(f, "%s must be an object {\"type\": \"function\", \"function\": {...}}", f)
			}
			if tool.Type != "function" {
				return nil, badRequest(f+".type", "%s.type %q is not supported (only \"function\")", f, tool.Type)
			}
			if isNull(tool.Function) {
				return nil, badRequest(f+".function", "%s.function is required", f)
			}
			fnRaw = tool.Function
			f += ".function"
		}
		var fn struct {
			Name        *string         `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(fnRaw, &fn) != nil {
			return nil, badRequest(f, "%s must be an object with name, description and parameters", f)
		}
		if fn.Name == nil || !functionName.MatchString(*fn.Name) {
			return nil, badRequest(f+".name", "%s.name must be 1 to 64 letters, digits, '_' or '-'", f)
		}
		if seen[*fn.Name] {
			return nil, badRequest(f+".name", "%s.name %q is repeated", f, *fn.Name)
		}
		seen[*fn.Name] = true
		if !isNull(fn.Parameters) {
			var obj map[string]json.RawMessage
			if json.Unmarshal(fn.Parameters, &obj) != nil {
				return nil, badRequest(f+".parameters", "%s.parameters must be a JSON Schema object", f)
			}
		}
		cf := chat.ToolFunction{Name: *fn.Name, Parameters: fn.Parameters}
		if fn.Description != nil {
			cf.Description = *fn.Description
		}
		ts.fns = append(ts.fns, cf)
		if tf.legacy {
			ts.tools = append(ts.tools, json.RawMessage(`{"type":"function","function":`+string(it)+`}`))
		} else {
			ts.tools = append(ts.tools, it)
		}
	}
	return seen, nil
}

// toolChoice reads tool_choice (or function_call) into ts.choice and, for
// a named function, ts.name (one of seen).
func (ts *toolSetup) toolChoice(tf *toolRequest, seen map[string]bool) *apiError {
	choiceField, choice := tf.choiceField, tf.choice
	ts.choice = "auto"
	if isNull(choice) {
		return nil
	}
	var str string
	if json.Unmarshal(choice, &str) == nil {
		switch str {
		case "none", "auto", "required":
			if tf.legacy && str == "required" {
				return badRequest(choiceField, "function_call must be \"none\", \"auto\" or {\"name\": ...}")
			}
			ts.choice = str
			return nil
		}
		return badRequest(choiceField, "%s %q is not supported (\"none\", \"auto\", \"required\" or a function)", choiceField, str)
	}
	var obj struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(choice, &obj) != nil {
		return badRequest(choiceField, "%s must be a string or an object naming a function", choiceField)
	}
	name := obj.Function.Name
	if tf.legacy {
		name = obj.Name
	} else if obj.Type != "function" {
		return badRequest(choiceField, "%s type %q is not supported (only {\"type\": \"function\", \"function\": {\"name\": ...}})", choiceField, obj.Type)
	}
	if !seen[name] {
		return badRequest(choiceField, "%s names the function %q, which is not among the %s", choiceField, name, tf.field)
	}
	ts.choice, ts.name = "function", name
	return nil
}

// forcedCall sets the constraint a forced call ("required", a named
// function) must match: the call's JSON Schema, wrapped in the format's
// literal text where it has some.
func (ts *toolSetup) forcedCall(choiceField string) *apiError {
	c, err := chat.ToolCallConstraint(ts.format, ts.fns, ts.name, ts.parallel)
	if err != nil {
		return badRequest(choiceField, "%s", strings.TrimPrefix(err.Error(), "chat: "))
	}
	ts.forced = &constraintSpec{field: choiceField, kind: engine.ConstraintJSONSchema, spec: string(c.Schema)}
	if c.Prefix != "" || c.Suffix != "" || c.Repeat {
		// The format's literal text around the JSON (Hermes' blocks,
		// Mistral's control token) is part of the grammar.
		spec, err := json.Marshal(engine.WrappedSpec{Wrapper: grammar.Wrapper{Prefix: c.Prefix, Suffix: c.Suffix, Repeat: c.Repeat,
			Separator: c.Separator, ControlTokens: c.ControlTokens}, Schema: c.Schema})
		if err != nil {
			return badRequest(choiceField, "%s: %v", choiceField, err)
		}
		ts.forced.kind, ts.forced.spec = engine.ConstraintWrapped, string(spec)
	}
	return nil
}

// toolMessages holds what converting messages needs to remember: the ids
// synthesized for legacy function_call turns, answered in order by
// "function" messages.
type toolMessages struct {
	format  chat.ToolFormat
	pending []string // legacy call ids not yet answered
	n       int
}

// assistantCalls converts an assistant message's tool_calls (or legacy
// function_call) for the template.
func (tm *toolMessages) assistantCalls(field string, m wireMessage) ([]any, *apiError) {
	var out []any
	if !isNull(m.ToolCalls) {
		var calls []json.RawMessage
		if json.Unmarshal(m.ToolCalls, &calls) != nil {
			return nil, badRequest(field+".tool_calls", "%s.tool_calls must be an array", field)
		}
		for j, c := range calls {
			cf := field + ".tool_calls[" + strconv.Itoa(j) + "]"
			var head struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			}
			json.Unmarshal(c, &head)
			if head.Type != "" && head.Type != "function" {
				return nil, badRequest(cf+".type", "%s.type %q is not supported (only \"function\")", cf, head.Type)
			}
			if head.ID == "" {
				return nil, badRequest(cf+".id", "%s.id is required", cf)
			}
			v, err := chat.OpenAIToolCall(c, tm.format)
			if err != nil {
				return nil, badRequest(cf, "%s: %s", cf, strings.TrimPrefix(err.Error(), "chat: "))
			}
			out = append(out, v)
		}
	}
	if !isNull(m.FunctionCall) {
		// A legacy call gets an id (9 alphanumerics, which every format
		// accepts) for the "function" message that answers it.
		tm.n++
		id := fmt.Sprintf("fncall%03d", tm.n%1000)
		tm.pending = append(tm.pending, id)
		raw := `{"id":"` + id + `","type":"function","function":` + string(m.FunctionCall) + `}`
		v, err := chat.OpenAIToolCall(json.RawMessage(raw), tm.format)
		if err != nil {
			return nil, badRequest(field+".function_call", "%s.function_call: %s", field, strings.TrimPrefix(err.Error(), "chat: "))
		}
		out = append(out, v)
	}
	return out, nil
}

// ---- responses ----

// toolCallOut is one element of message.tool_calls, or of a streamed
// delta.tool_calls (with Index; name and id only in a call's first delta).
type toolCallOut struct {
	Index    *int        `json:"index,omitempty"`
	ID       string      `json:"id,omitempty"`
	Type     string      `json:"type,omitempty"`
	Function functionOut `json:"function"`
}

type functionOut struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// keep reports whether the call with this index is answered: calls beyond
// the first are dropped when parallel calls are off.
func (t *toolSetup) keep(index int) bool { return t.parallel || index == 0 }

// calls parses a whole reply: its content and the calls it keeps (the
// first alone when parallel calls are off). Sinks of any API read tool
// calls through it (streams through chat.NewToolStream(t.format, nil) and
// keep).
func (t *toolSetup) calls(text string) (string, []chat.ToolCall) {
	content, calls := chat.ParseToolCalls(t.format, text, nil)
	n := 0
	for n < len(calls) && t.keep(n) {
		n++
	}
	return content, calls[:n]
}

// toolCallsOut is message.tool_calls of a non-streamed reply.
func toolCallsOut(calls []chat.ToolCall, t *toolSetup) []toolCallOut {
	out := make([]toolCallOut, 0, len(calls))
	for i, c := range calls {
		if !t.keepCall(i) {
			break
		}
		out = append(out, toolCallOut{ID: c.ID, Type: "function", Function: functionOut{Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}

// finishReason is "tool_calls" ("function_call" for a legacy request) when
// the reply ended on its own and held calls.
func (t *toolSetup) finishReason(reason string, calls int) string {
	if calls == 0 || reason != "stop" {
		return reason
	}
	if t.legacy {
		return "function_call"
	}
	return "tool_calls"
}

// reply fills a non-streamed message from the reply text: content and
// tool_calls (or the legacy function_call), and returns the finish reason.
func (t *toolSetup) reply(msg *replyMessage, text, reason string) string {
	content, calls := chat.ParseToolCalls(t.format, text, nil)
	msg.Content = &content
	if len(calls) == 0 {
		return reason
	}
	if content == "" {
		msg.Content = nil
	}
	out := toolCallsOut(calls, t)
	if t.legacy {
		msg.FunctionCall = &out[0].Function
	} else {
		msg.ToolCalls = out
	}
	return t.finishReason(reason, len(calls))
}

// sendTools streams what choice i's tool-call parser released: content,
// then each call delta in its own chunk as OpenAI sends them (legacy
// requests get delta.function_call). Pending logprobs ride on the first
// chunk.
func (o *responder) sendTools(i int, content string, deltas []chat.ToolCallDelta) bool {
	lp := func() *chatLogprobs {
		lps := o.pending[i]
		if len(lps) == 0 {
			return nil
		}
		delete(o.pending, i)
		return o.chatLogprobs(lps)
	}
	if content != "" {
		if !o.send(o.chatChunk(i, &chatMessage{Content: &content}, lp(), nil)) {
			return false
		}
	}
	for _, d := range deltas {
		if !o.j.tools.keepCall(d.Index) {
			continue
		}
		fn := functionOut{Name: d.Name, Arguments: d.Arguments}
		delta := &chatMessage{}
		if o.j.tools.isLegacy() {
			delta.FunctionCall = &fn
		} else {
			idx := d.Index
			delta.ToolCalls = []toolCallOut{{Index: &idx, ID: d.ID, Type: d.Type, Function: fn}}
		}
		if !o.send(o.chatChunk(i, delta, lp(), nil)) {
			return false
		}
	}
	return true
}
