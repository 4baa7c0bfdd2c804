package server

// The OpenAI Responses API: POST /v1/responses.
//
// Request → chat request (responsesChat): instructions become the first
// system message (never carried over from a previous response, as OpenAI
// documents); input is a string (one user message) or a list of items —
// messages (roles user, system, developer, assistant; content a string or
// input_text / output_text parts; the output items of an earlier response
// are accepted as they came), function_call items (merged into the
// assistant turn before them, so parallel calls are one turn) and
// function_call_output items (tool messages), reasoning items (the
// assistant turn's reasoning_content). previous_response_id prepends that
// response's conversation — its input and output, from the server's
// bounded memory (responseStore) — and is a 404 when it is not (or no
// longer) there. tools are function tools ({type, name, description,
// parameters, strict}) rewritten into chat's shape; tool_choice none,
// auto, required or {type: function, name}; text.format (text,
// json_object, json_schema {name, schema, strict}) is chat's
// response_format, so it runs through the same constraint path;
// max_output_tokens is max_tokens. Any other tool type, input kind or
// setting we cannot honour is a 400 naming it.
//
// Response (responsesEncoder): a response object whose output is the
// assistant message (one output_text part) and one function_call item per
// call; status "completed", or "incomplete" with incomplete_details
// {reason: "max_output_tokens"} when the token budget ended it. Streaming
// sends the documented events, each with a sequence_number:
// response.created, response.in_progress, then per item
// response.output_item.added, (message) response.content_part.added,
// response.output_text.delta…, response.output_text.done,
// response.content_part.done, (call) response.function_call_arguments.delta,
// response.function_call_arguments.done, and response.output_item.done;
// last response.completed (or response.incomplete). A failure mid-stream
// is an error event then response.failed.

import (
	"bytes"
	"container/list"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"nanoserve/chat"
)

type responsesRequest struct {
	unsupportedParams
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	Text               *responsesText  `json:"text"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	TopK               *int            `json:"top_k"`   // extension, as on chat
	MinP               *float64        `json:"min_p"`   // extension, as on chat
	Seed               *int64          `json:"seed"`    // extension, as on chat
	Stop               json.RawMessage `json:"stop"`    // extension, as on chat
	Special            *bool           `json:"special"` // nanoserve extension, as on chat
	Stream             *bool           `json:"stream"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	Reasoning          *struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	Background   *bool           `json:"background"`
	Truncation   *string         `json:"truncation"`
	MaxToolCalls *int            `json:"max_tool_calls"`
	TopLogprobs  *int            `json:"top_logprobs"`
	Conversation json.RawMessage `json:"conversation"`
	Prompt       json.RawMessage `json:"prompt"`
	Metadata     json.RawMessage `json:"metadata"` // echoed
	User         string          `json:"user"`     // accepted and ignored
}

type responsesText struct {
	Format *struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
		Description string          `json:"description"`
	} `json:"format"`
	Verbosity *string `json:"verbosity"`
}

// responsesItem is one input item, of any type.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	ID        string          `json:"id"`
}

// responsesChat decodes a Responses request into the chat request chatJob
// reads. prev is the conversation previous_response_id names (nil: none);
// conv is the conversation this request adds (input, without the
// instructions), which the stored response keeps.
func responsesChat(rr *responsesRequest, prev []wireMessage) (cr *chatRequest, conv []wireMessage, e *apiError) {
	switch {
	case rr.Background != nil && *rr.Background:
		return nil, nil, badRequest("background", "background responses are not supported: send the request and wait, or stream it")
	case rr.Truncation != nil && *rr.Truncation != "disabled":
		return nil, nil, badRequest("truncation", "truncation %q is not supported (only \"disabled\": a conversation longer than the context is a 400)", *rr.Truncation)
	case !isNull(rr.Conversation):
		return nil, nil, badRequest("conversation", "conversation is not supported: use previous_response_id")
	case !isNull(rr.Prompt):
		return nil, nil, badRequest("prompt", "prompt templates are not supported: send input and instructions")
	case rr.MaxToolCalls != nil:
		return nil, nil, badRequest("max_tool_calls", "max_tool_calls is not supported")
	case rr.TopLogprobs != nil && *rr.TopLogprobs != 0:
		return nil, nil, badRequest("top_logprobs", "top_logprobs is not supported on /v1/responses (use /v1/chat/completions)")
	}
	cr = &chatRequest{}
	cr.Model = rr.Model
	cr.MaxTokens = rr.MaxOutputTokens
	if rr.MaxOutputTokens != nil && *rr.MaxOutputTokens < 1 {
		return nil, nil, badRequest("max_output_tokens", "max_output_tokens must be at least 1, got %d", *rr.MaxOutputTokens)
	}
	cr.Temperature, cr.TopP, cr.TopK, cr.MinP, cr.Seed, cr.Stop, cr.Special = rr.Temperature, rr.TopP, rr.TopK, rr.MinP, rr.Seed, rr.Stop, rr.Special
	cr.ParallelToolCalls = rr.ParallelToolCalls
	if rr.Reasoning != nil {
		cr.ReasoningEffort = rr.Reasoning.Effort // "none": thinking off (reasoning.go)
	}
	if rr.Instructions != nil && *rr.Instructions != "" {
		c, _ := json.Marshal(*rr.Instructions)
		cr.Messages = append(cr.Messages, wireMessage{Role: "system", Content: c})
	}
	cr.Messages = append(cr.Messages, prev...)
	conv, e = responsesInput(rr.Input)
	if e != nil {
		return nil, nil, e
	}
	cr.Messages = append(cr.Messages, conv...)
	if cr.Tools, e = responsesTools(rr.Tools); e != nil {
		return nil, nil, e
	}
	if cr.ToolChoice, e = responsesToolChoice(rr.ToolChoice); e != nil {
		return nil, nil, e
	}
	if rr.Text != nil && rr.Text.Format != nil {
		f := rr.Text.Format
		switch f.Type {
		case "", "text":
		case "json_object":
			setResponseFormat(&cr.constraintParams, map[string]any{"type": "json_object"})
		case "json_schema":
			if isNull(f.Schema) {
				return nil, nil, badRequest("text.format.schema", "text.format json_schema needs a schema")
			}
			setResponseFormat(&cr.constraintParams, map[string]any{"type": "json_schema",
				"json_schema": map[string]any{"name": f.Name, "schema": f.Schema, "strict": f.Strict}})
		default:
			return nil, nil, badRequest("text.format.type", "text.format type %q is not supported (text, json_object, json_schema are)", f.Type)
		}
	}
	return cr, conv, nil
}

// setResponseFormat sets chat's response_format from its JSON form.
func setResponseFormat(p *constraintParams, rf map[string]any) {
	b, _ := json.Marshal(rf)
	json.Unmarshal(b, &p.ResponseFormat)
}

// responsesInput converts input (a string or a list of items) into chat
// messages.
func responsesInput(raw json.RawMessage) ([]wireMessage, *apiError) {
	if isNull(raw) {
		return nil, badRequest("input", "input is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		c, _ := json.Marshal(text)
		return []wireMessage{{Role: "user", Content: c}}, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, badRequest("input", "input must be a string or an array of items")
	}
	var out []wireMessage
	// lastAssistant is the assistant turn the next call or reasoning item
	// joins (-1: none open).
	lastAssistant := -1
	for i, it := range items {
		field := "input[" + strconv.Itoa(i) + "]"
		var item responsesItem
		if json.Unmarshal(it, &item) != nil {
			return nil, badRequest(field, "%s must be an object", field)
		}
		switch {
		case item.Type == "function_call":
			if item.CallID == "" || item.Name == "" || item.Arguments == nil {
				return nil, badRequest(field, "%s: a function_call item needs call_id, name and arguments", field)
			}
			call, _ := json.Marshal(toolCallOut{ID: item.CallID, Type: "function", Function: functionOut{Name: item.Name, Arguments: *item.Arguments}})
			if lastAssistant < 0 {
				out = append(out, wireMessage{Role: "assistant"})
				lastAssistant = len(out) - 1
			}
			m := &out[lastAssistant]
			m.ToolCalls = appendRaw(m.ToolCalls, call)
		case item.Type == "function_call_output":
			if item.CallID == "" {
				return nil, badRequest(field+".call_id", "%s.call_id is required", field)
			}
			c, e := responsesContent(field+".output", item.Output)
			if e != nil {
				return nil, e
			}
			out = append(out, wireMessage{Role: "tool", ToolCallID: item.CallID, Content: c})
			lastAssistant = -1
		case item.Type == "reasoning":
			var rs struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			json.Unmarshal(it, &rs)
			var b strings.Builder
			for _, c := range rs.Content {
				b.WriteString(c.Text)
			}
			r := b.String()
			if lastAssistant < 0 {
				out = append(out, wireMessage{Role: "assistant"})
				lastAssistant = len(out) - 1
			}
			out[lastAssistant].ReasoningContent = &r
		case item.Type == "message" || item.Type == "" && item.Role != "":
			switch item.Role {
			case "user", "system", "developer", "assistant":
			case "":
				return nil, badRequest(field+".role", "%s.role is required", field)
			default:
				return nil, badRequest(field+".role", "%s.role %q is not supported (user, system, developer, assistant)", field, item.Role)
			}
			c, e := responsesContent(field+".content", item.Content)
			if e != nil {
				return nil, e
			}
			if item.Role == "assistant" {
				if lastAssistant >= 0 && isNull(out[lastAssistant].Content) {
					out[lastAssistant].Content = c // the text of a turn that reasoning opened
					continue
				}
				out = append(out, wireMessage{Role: "assistant", Content: c})
				lastAssistant = len(out) - 1
				continue
			}
			out = append(out, wireMessage{Role: item.Role, Content: c})
			lastAssistant = -1
		case item.Type == "item_reference":
			return nil, badRequest(field+".type", "%s: item_reference is not supported: send the item itself, or previous_response_id", field)
		default:
			return nil, badRequest(field+".type", "%s.type %q is not supported (message, function_call, function_call_output, reasoning)", field, item.Type)
		}
	}
	if len(out) == 0 {
		return nil, badRequest("input", "input must not be empty")
	}
	return out, nil
}

// appendRaw appends v to a JSON array (nil: a new one).
func appendRaw(arr json.RawMessage, v json.RawMessage) json.RawMessage {
	if isNull(arr) {
		return json.RawMessage("[" + string(v) + "]")
	}
	a := bytes.TrimSuffix(bytes.TrimSpace(arr), []byte("]"))
	return json.RawMessage(string(a) + "," + string(v) + "]")
}

// responsesContent converts a message's content (a string, or a list of
// input_text / output_text parts) into chat's (a string).
func responsesContent(field string, raw json.RawMessage) (json.RawMessage, *apiError) {
	if isNull(raw) {
		return nil, badRequest(field, "%s is required", field)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return raw, nil
	}
	var parts []struct {
		Type    string  `json:"type"`
		Text    *string `json:"text"`
		Refusal *string `json:"refusal"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil, badRequest(field, "%s must be a string or an array of content parts", field)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		pf := field + "[" + strconv.Itoa(j) + "]"
		switch p.Type {
		case "input_text", "output_text", "text":
			if p.Text == nil {
				return nil, badRequest(pf+".text", "%s.text is required", pf)
			}
			texts = append(texts, *p.Text)
		case "refusal":
			if p.Refusal != nil {
				texts = append(texts, *p.Refusal)
			}
		case "input_image", "input_file", "input_audio":
			return nil, badRequest(pf+".type", "%s.type %q is not supported: the served models read text only", pf, p.Type)
		default:
			return nil, badRequest(pf+".type", "%s.type %q is not supported (input_text, output_text)", pf, p.Type)
		}
	}
	c, _ := json.Marshal(strings.Join(texts, "\n"))
	return c, nil
}

// responsesTools rewrites Responses function tools ({type, name,
// description, parameters, strict}) into chat's ({type, function: {...}}),
// keeping the client's order of the fields: the template renders them as
// they come, so the prompt is the one the same tools give on chat.
func responsesTools(raw json.RawMessage) (json.RawMessage, *apiError) {
	if isNull(raw) {
		return nil, nil
	}
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return nil, badRequest("tools", "tools must be an array of objects")
	}
	if len(tools) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range tools {
		f := "tools[" + strconv.Itoa(i) + "]"
		fields, ok := objectFields(t)
		if !ok {
			return nil, badRequest(f, "%s must be an object", f)
		}
		var typ string
		for _, kv := range fields {
			if kv.key == "type" {
				json.Unmarshal(kv.value, &typ)
			}
		}
		if typ != "function" {
			return nil, badRequest(f+".type", "%s.type %q is not supported (only \"function\" tools)", f, typ)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"function","function":{`)
		n := 0
		for _, kv := range fields {
			if kv.key == "type" {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			k, _ := json.Marshal(kv.key)
			b.Write(k)
			b.WriteByte(':')
			b.Write(kv.value)
		}
		b.WriteString("}}")
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// field is one member of a JSON object.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields lists a JSON object's members in their order.
func objectFields(raw json.RawMessage) ([]field, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		out = append(out, field{key, v})
	}
	return out, true
}

// responsesToolChoice rewrites {type: function, name} into chat's
// {type: function, function: {name}}; the strings pass as they are.
func responsesToolChoice(raw json.RawMessage) (json.RawMessage, *apiError) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return raw, nil
	}
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.Type != "function" {
		return nil, badRequest("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}")
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": obj.Name}})
	return b, nil
}

// ---- output ----

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// responsesPart is a message's content part.
type responsesPart struct {
	Type        string `json:"type"` // "output_text"
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

// reasoningPart is a reasoning item's content part.
type reasoningPart struct {
	Type string `json:"type"` // "reasoning_text"
	Text string `json:"text"`
}

// responsesOutput is one output item: a message, a function call or
// reasoning (its text in Content[0].Text).
type responsesOutput struct {
	Type    string // "message", "function_call" or "reasoning"
	ID      string
	Status  string
	Role    string          // message
	Content []responsesPart // message
	CallID  string          // function_call
	Name    string          // function_call
	// Arguments is a function_call's JSON arguments (a pointer so that
	// copies of the item do not share the text being streamed into it).
	Arguments *string
}

// MarshalJSON writes the fields of the item's type.
func (o responsesOutput) MarshalJSON() ([]byte, error) {
	if o.Type == "function_call" {
		return json.Marshal(struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			Status    string `json:"status"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}{o.Type, o.ID, o.Status, o.CallID, o.Name, *o.Arguments})
	}
	if o.Type == "reasoning" {
		parts := make([]reasoningPart, len(o.Content))
		for i, p := range o.Content {
			parts[i] = reasoningPart{"reasoning_text", p.Text}
		}
		return json.Marshal(struct {
			Type    string          `json:"type"`
			ID      string          `json:"id"`
			Status  string          `json:"status"`
			Summary []any           `json:"summary"`
			Content []reasoningPart `json:"content"`
		}{o.Type, o.ID, o.Status, []any{}, parts})
	}
	content := o.Content
	if content == nil {
		content = []responsesPart{}
	}
	return json.Marshal(struct {
		Type    string          `json:"type"`
		ID      string          `json:"id"`
		Status  string          `json:"status"`
		Role    string          `json:"role"`
		Content []responsesPart `json:"content"`
	}{o.Type, o.ID, o.Status, o.Role, content})
}

type responsesObject struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"` // "response"
	CreatedAt         int64           `json:"created_at"`
	Status            string          `json:"status"` // in_progress, completed, incomplete, failed
	Error             *responsesError `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []responsesOutput `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	Text               any               `json:"text"`
	ToolChoice         any               `json:"tool_choice"`
	Tools              []any             `json:"tools"`
	Truncation         string            `json:"truncation"`
	Metadata           any               `json:"metadata"`
	Usage              *responsesUsage   `json:"usage"`
}

type responsesError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// responsesEncoder is the Responses API's replyEncoder.
type responsesEncoder struct {
	resp responsesObject
	seq  int
	msg  int // output index of the open message item (-1: none)
	rsn  int // output index of the open reasoning item (-1: none)
	fc   int // output index of the open function_call item (-1: none)
	done bool
}

// newResponsesEncoder starts the response object from the request.
func newResponsesEncoder(rr *responsesRequest, model string, parallel bool) *responsesEncoder {
	r := responsesObject{ID: newID("resp_"), Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Instructions: rr.Instructions, MaxOutputTokens: rr.MaxOutputTokens, Model: model, Output: []responsesOutput{},
		ParallelToolCalls: parallel, PreviousResponseID: rr.PreviousResponseID, Store: rr.Store == nil || *rr.Store,
		Temperature: rr.Temperature, TopP: rr.TopP, Truncation: "disabled", Tools: []any{}, ToolChoice: "auto", Metadata: map[string]any{}}
	r.Text = map[string]any{"format": map[string]any{"type": "text"}}
	if rr.Text != nil && rr.Text.Format != nil {
		r.Text = rr.Text
	}
	if !isNull(rr.Tools) {
		json.Unmarshal(rr.Tools, &r.Tools)
	}
	if !isNull(rr.ToolChoice) {
		json.Unmarshal(rr.ToolChoice, &r.ToolChoice)
	}
	if !isNull(rr.Metadata) {
		json.Unmarshal(rr.Metadata, &r.Metadata)
	}
	return &responsesEncoder{resp: r, msg: -1, fc: -1, rsn: -1}
}

// ev makes one event: its type and sequence number joined to fields.
func (e *responsesEncoder) ev(typ string, fields map[string]any) sseEvent {
	fields["type"] = typ
	fields["sequence_number"] = e.seq
	e.seq++
	return sseEvent{typ, fields}
}

// snapshot is the response object as it stands (events carry copies).
func (e *responsesEncoder) snapshot() responsesObject {
	r := e.resp
	r.Output = make([]responsesOutput, len(e.resp.Output))
	copy(r.Output, e.resp.Output)
	return r
}

func (e *responsesEncoder) start(int) []sseEvent {
	return []sseEvent{e.ev("response.created", map[string]any{"response": e.snapshot()}),
		e.ev("response.in_progress", map[string]any{"response": e.snapshot()})}
}

func (e *responsesEncoder) reasoning(text string) []sseEvent {
	var evs []sseEvent
	if e.rsn < 0 {
		evs = append(evs, e.closeMessage()...)
		evs = append(evs, e.closeCall()...)
		e.rsn = len(e.resp.Output)
		item := responsesOutput{Type: "reasoning", ID: newID("rs_"), Status: "in_progress"}
		e.resp.Output = append(e.resp.Output, item)
		evs = append(evs, e.ev("response.output_item.added", map[string]any{"output_index": e.rsn, "item": item}))
		e.resp.Output[e.rsn].Content = []responsesPart{{Type: "reasoning_text"}}
		evs = append(evs, e.ev("response.content_part.added", map[string]any{"item_id": item.ID, "output_index": e.rsn, "content_index": 0,
			"part": reasoningPart{"reasoning_text", ""}}))
	}
	m := &e.resp.Output[e.rsn]
	m.Content[0].Text += text
	return append(evs, e.ev("response.reasoning_text.delta", map[string]any{"item_id": m.ID, "output_index": e.rsn, "content_index": 0, "delta": text}))
}

// closeReasoning ends the open reasoning item.
func (e *responsesEncoder) closeReasoning() []sseEvent {
	if e.rsn < 0 {
		return nil
	}
	i := e.rsn
	e.rsn = -1
	m := &e.resp.Output[i]
	m.Status = "completed"
	part := reasoningPart{"reasoning_text", m.Content[0].Text}
	return []sseEvent{
		e.ev("response.reasoning_text.done", map[string]any{"item_id": m.ID, "output_index": i, "content_index": 0, "text": part.Text}),
		e.ev("response.content_part.done", map[string]any{"item_id": m.ID, "output_index": i, "content_index": 0, "part": part}),
		e.ev("response.output_item.done", map[string]any{"output_index": i, "item": *m}),
	}
}

func (e *responsesEncoder) content(text string) []sseEvent {
	var evs []sseEvent
	evs = append(evs, e.closeReasoning()...)
	evs = append(evs, e.closeCall()...)
	if e.msg < 0 {
		e.msg = len(e.resp.Output)
		item := responsesOutput{Type: "message", ID: newID("msg_"), Status: "in_progress", Role: "assistant", Content: []responsesPart{}}
		e.resp.Output = append(e.resp.Output, item)
		evs = append(evs, e.ev("response.output_item.added", map[string]any{"output_index": e.msg, "item": item}))
		part := responsesPart{Type: "output_text", Annotations: []any{}, Logprobs: []any{}}
		e.resp.Output[e.msg].Content = []responsesPart{part}
		evs = append(evs, e.ev("response.content_part.added", map[string]any{"item_id": item.ID, "output_index": e.msg, "content_index": 0, "part": part}))
	}
	m := &e.resp.Output[e.msg]
	m.Content[0].Text += text
	evs = append(evs, e.ev("response.output_text.delta", map[string]any{"item_id": m.ID, "output_index": e.msg, "content_index": 0, "delta": text, "logprobs": []any{}}))
	return evs
}

// closeMessage ends the open message item.
func (e *responsesEncoder) closeMessage() []sseEvent {
	if e.msg < 0 {
		return nil
	}
	i := e.msg
	e.msg = -1
	m := &e.resp.Output[i]
	m.Status = "completed"
	part := m.Content[0]
	return []sseEvent{
		e.ev("response.output_text.done", map[string]any{"item_id": m.ID, "output_index": i, "content_index": 0, "text": part.Text, "logprobs": []any{}}),
		e.ev("response.content_part.done", map[string]any{"item_id": m.ID, "output_index": i, "content_index": 0, "part": part}),
		e.ev("response.output_item.done", map[string]any{"output_index": i, "item": *m}),
	}
}

// closeCall ends the open function_call item.
func (e *responsesEncoder) closeCall() []sseEvent {
	if e.fc < 0 {
		return nil
	}
	i := e.fc
	e.fc = -1
	c := &e.resp.Output[i]
	c.Status = "completed"
	args := *c.Arguments
	c.Arguments = &args
	return []sseEvent{
		e.ev("response.function_call_arguments.done", map[string]any{"item_id": c.ID, "output_index": i, "name": c.Name, "arguments": args}),
		e.ev("response.output_item.done", map[string]any{"output_index": i, "item": *c}),
	}
}

func (e *responsesEncoder) call(d chat.ToolCallDelta) []sseEvent {
	var evs []sseEvent
	if d.Name != "" || d.ID != "" {
		// A new call: the reasoning or message before it (if any) and the
		// previous call are complete.
		evs = append(evs, e.closeReasoning()...)
		evs = append(evs, e.closeMessage()...)
		evs = append(evs, e.closeCall()...)
		e.fc = len(e.resp.Output)
		empty := ""
		item := responsesOutput{Type: "function_call", ID: newID("fc_"), Status: "in_progress", CallID: d.ID, Name: d.Name, Arguments: &empty}
		e.resp.Output = append(e.resp.Output, item)
		evs = append(evs, e.ev("response.output_item.added", map[string]any{"output_index": e.fc, "item": item}))
	}
	if d.Arguments != "" && e.fc >= 0 {
		c := &e.resp.Output[e.fc]
		args := *c.Arguments + d.Arguments
		c.Arguments = &args
		evs = append(evs, e.ev("response.function_call_arguments.delta", map[string]any{"item_id": c.ID, "output_index": e.fc, "delta": d.Arguments}))
	}
	return evs
}

func (e *responsesEncoder) end(end replyEnd) []sseEvent {
	evs := append(append(e.closeReasoning(), e.closeMessage()...), e.closeCall()...)
	e.done = true
	u := &responsesUsage{InputTokens: end.usage.PromptTokens, OutputTokens: end.usage.CompletionTokens, TotalTokens: end.usage.TotalTokens}
	e.resp.Usage = u
	if end.reason == "length" {
		e.resp.Status = "incomplete"
		e.resp.IncompleteDetails = &struct {
			Reason string `json:"reason"`
		}{"max_output_tokens"}
		return append(evs, e.ev("response.incomplete", map[string]any{"response": e.snapshot()}))
	}
	e.resp.Status = "completed"
	return append(evs, e.ev("response.completed", map[string]any{"response": e.snapshot()}))
}

func (e *responsesEncoder) whole() any { return e.resp }

func (e *responsesEncoder) failed(ae *apiError) []sseEvent {
	code := "server_error"
	if ae.Code != nil {
		code = *ae.Code
	}
	e.resp.Status = "failed"
	e.resp.Error = &responsesError{Code: code, Message: ae.Message}
	return []sseEvent{
		e.ev("error", map[string]any{"code": code, "message": ae.Message, "param": nil}),
		e.ev("response.failed", map[string]any{"response": e.snapshot()}),
	}
}

// outputMessage is the response's output as one assistant chat message,
// kept for a later previous_response_id.
func (e *responsesEncoder) outputMessage() wireMessage {
	m := wireMessage{Role: "assistant"}
	var text strings.Builder
	for _, it := range e.resp.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				text.WriteString(p.Text)
			}
		case "reasoning":
			r := it.Content[0].Text
			m.ReasoningContent = &r
		case "function_call":
			c, _ := json.Marshal(toolCallOut{ID: it.CallID, Type: "function", Function: functionOut{Name: it.Name, Arguments: *it.Arguments}})
			m.ToolCalls = appendRaw(m.ToolCalls, c)
		}
	}
	m.Content, _ = json.Marshal(text.String())
	return m
}

// ---- previous_response_id ----

// responseStore keeps recent responses' conversations for
// previous_response_id: at most maxCount entries and maxBytes of their
// JSON, the least recently used dropped first.
type responseStore struct {
	mu       sync.Mutex
	maxCount int
	maxBytes int
	bytes    int
	lru      *list.List // of *storedResponse, most recent at the front
	byID     map[string]*list.Element
}

type storedResponse struct {
	id    string
	msgs  []wireMessage // the conversation up to and including the response's output
	bytes int
}

func newResponseStore(maxCount, maxBytes int) *responseStore {
	return &responseStore{maxCount: maxCount, maxBytes: maxBytes, lru: list.New(), byID: map[string]*list.Element{}}
}

// Default bounds of a server's response memory.
const (
	responseStoreCount = 1024
	responseStoreBytes = 64 << 20
)

func (st *responseStore) put(id string, msgs []wireMessage) {
	b, _ := json.Marshal(msgs)
	n := len(b) + len(id)
	st.mu.Lock()
	defer st.mu.Unlock()
	if n > st.maxBytes {
		return // larger than the whole memory: never kept
	}
	if el, ok := st.byID[id]; ok {
		st.remove(el)
	}
	st.byID[id] = st.lru.PushFront(&storedResponse{id: id, msgs: msgs, bytes: n})
	st.bytes += n
	for st.lru.Len() > st.maxCount || st.bytes > st.maxBytes {
		st.remove(st.lru.Back())
	}
}

func (st *responseStore) remove(el *list.Element) {
	r := st.lru.Remove(el).(*storedResponse)
	delete(st.byID, r.id)
	st.bytes -= r.bytes
}

// get returns a stored conversation (and marks it used).
func (st *responseStore) get(id string) ([]wireMessage, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	el, ok := st.byID[id]
	if !ok {
		return nil, false
	}
	st.lru.MoveToFront(el)
	return el.Value.(*storedResponse).msgs, true
}

// ---- handler ----

// responsesParam names chat's fields in an error as this API does
// (max_tokens is max_output_tokens, messages is input).
func responsesParam(e *apiError) *apiError {
	if e.Param == nil {
		return e
	}
	c := *e
	switch p := *e.Param; {
	case p == "max_tokens":
		c.Param = strp("max_output_tokens")
		c.Message = strings.ReplaceAll(c.Message, "max_tokens", "max_output_tokens")
	case p == "messages" || strings.HasPrefix(p, "messages["):
		c.Param = strp("input")
	}
	return &c
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request, req *responsesRequest) {
	start := time.Now()
	rr := *req
	var prev []wireMessage
	if rr.PreviousResponseID != nil && *rr.PreviousResponseID != "" {
		var ok bool
		if s.responses != nil {
			prev, ok = s.responses.get(*rr.PreviousResponseID)
		}
		if !ok {
			writeError(w, &apiError{status: http.StatusNotFound, Type: "invalid_request_error", Param: strp("previous_response_id"), Code: strp("previous_response_not_found"),
				Message: fmt.Sprintf("previous response %q is not in this server's memory (it was never stored, or was dropped: the server keeps the last %d responses, %d MiB at most, and forgets them on restart); send the whole conversation as input instead",
					*rr.PreviousResponseID, responseStoreCount, responseStoreBytes>>20)})
			return
		}
	}
	cr, conv, e := responsesChat(&rr, prev)
	if e != nil {
		writeError(w, e)
		return
	}
	cr.ctx = r.Context()
	j, e := s.chatJob(cr)
	if e != nil {
		writeError(w, responsesParam(e))
		return
	}
	j.start = start
	enc := newResponsesEncoder(&rr, j.model, j.tools == nil || j.tools.parallel)
	stream := rr.Stream != nil && *rr.Stream
	out := newReplySink(s, w, j, stream, enc)
	out.rename = responsesParam
	s.run(r.Context(), j, out)
	if enc.done && enc.resp.Store && s.responses != nil {
		msgs := append(append(append([]wireMessage(nil), prev...), conv...), enc.outputMessage())
		s.responses.put(enc.resp.ID, msgs)
	}
}
