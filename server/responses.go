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
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type responsesRequest struct {
	unsupportedParams
	telemetryFields                    // llama-server's timings_per_token, return_progress (telemetry.go)
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

// previousResponse is the conversation rr's previous_response_id names
// (nil: none named), a 404 when the server does not hold it.
func (s *Server) previousResponse(rr *responsesRequest) ([]wireMessage, *apiError) {
	if rr.PreviousResponseID == nil || *rr.PreviousResponseID == "" {
		return nil, nil
	}
	var prev []wireMessage
	var ok bool
	if s.responses != nil {
		prev, ok = s.responses.get(*rr.PreviousResponseID)
	}
	if !ok {
		return nil, &apiError{status: http.StatusNotFound, Type: "invalid_request_error", Param: strp("previous_response_id"), Code: strp("previous_response_not_found"),
			Message: fmt.Sprintf("previous response %q is not in this server's memory (it was never stored, or was dropped: the server keeps the last %d responses, %d MiB at most, and forgets them on restart); send the whole conversation as input instead",
				*rr.PreviousResponseID, responseStoreCount, responseStoreBytes>>20)}
	}
	return prev, nil
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request, req *responsesRequest) {
	start := time.Now()
	rr := *req
	prev, e := s.previousResponse(&rr)
	if e != nil {
		writeError(w, e)
		return
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
	j.setTelemetry(rr.telemetryFields, stream)
	out := newReplySink(s, w, j, stream, enc)
	out.rename = responsesParam
	s.run(r.Context(), j, out)
	if enc.done && enc.resp.Store && s.responses != nil {
		msgs := append(append(append([]wireMessage(nil), prev...), conv...), enc.outputMessage())
		s.responses.put(enc.resp.ID, msgs)
	}
}
