package server

// Anthropic's Messages API: POST /v1/messages and
// POST /v1/messages/count_tokens, so that the Anthropic SDKs and the tools
// built on them (Claude Code) can use a served model. The API key is
// accepted as "x-api-key" (as everywhere on the server) and the
// anthropic-version header is not required.
//
// Request → chat request (anthropicChat): system (a string or text
// blocks) is the first system message; messages alternate user and
// assistant, content a string or blocks — text; tool_use {id, name,
// input} (an assistant turn's call); tool_result {tool_use_id, content,
// is_error} (one tool message each, in order, before the user turn's
// text); thinking (the assistant turn's reasoning_content; redacted
// thinking is dropped). tools {name, description, input_schema} become
// chat function tools; tool_choice auto, any (required), tool {name},
// none, with disable_parallel_tool_use; max_tokens (required) and
// stop_sequences are chat's max_tokens and stop; temperature, top_p,
// top_k as on chat. Images, documents, server tools and the rest are a
// 400 naming them.
//
// Response (anthropicEncoder): a message {id, type, role, model, content,
// stop_reason, stop_sequence, usage}; content is a thinking block (when
// the reply reasons; its signature a digest of the thinking, which a
// client sends back with it), a text block (when the reply has text) and
// a tool_use block per call (input: the arguments as an object);
// stop_reason end_turn, max_tokens, stop_sequence (with the string) or
// tool_use. Streaming sends message_start, then per block
// content_block_start, content_block_delta (thinking_delta and a last
// signature_delta, text_delta, input_json_delta) and content_block_stop, then message_delta (stop_reason, usage) and
// message_stop, each as a named SSE event; a failure mid-stream is an
// error event. Errors are {"type": "error", "error": {"type", "message"}}
// with Anthropic's error types.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"nanoserve/chat"
)

type anthropicRequest struct {
	unsupportedParams
	Model         string             `json:"model"`
	MaxTokens     *int               `json:"max_tokens"`
	Messages      []anthropicMessage `json:"messages"`
	System        json.RawMessage    `json:"system"`
	StopSequences []string           `json:"stop_sequences"`
	Stream        *bool              `json:"stream"`
	Temperature   *float64           `json:"temperature"`
	TopP          *float64           `json:"top_p"`
	TopK          *int               `json:"top_k"`
	Tools         json.RawMessage    `json:"tools"`
	ToolChoice    json.RawMessage    `json:"tool_choice"`
	Thinking      *struct {
		Type         string `json:"type"` // enabled, disabled
		BudgetTokens *int   `json:"budget_tokens"`
	} `json:"thinking"`
	Metadata    json.RawMessage `json:"metadata"` // accepted and ignored
	ServiceTier json.RawMessage `json:"service_tier"`
	Container   json.RawMessage `json:"container"`
	MCPServers  json.RawMessage `json:"mcp_servers"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is one content block of any type.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Thinking  *string         `json:"thinking"`
	Signature json.RawMessage `json:"signature"` // a thinking block's: accepted, not checked
}

// anthropicChat decodes a Messages request into the chat request chatJob
// reads. count is true for count_tokens (max_tokens not required).
func anthropicChat(ar *anthropicRequest, count bool) (*chatRequest, *apiError) {
	switch {
	case !isNull(ar.Container):
		return nil, badRequest("container", "container is not supported")
	case !isNull(ar.MCPServers):
		return nil, badRequest("mcp_servers", "mcp_servers is not supported")
	}
	cr := &chatRequest{}
	cr.Model = ar.Model
	if !count {
		if ar.MaxTokens == nil {
			return nil, badRequest("max_tokens", "max_tokens: Field required")
		}
		if *ar.MaxTokens < 1 {
			return nil, badRequest("max_tokens", "max_tokens must be at least 1, got %d", *ar.MaxTokens)
		}
		cr.MaxTokens = ar.MaxTokens
	}
	cr.Temperature, cr.TopP, cr.TopK = ar.Temperature, ar.TopP, ar.TopK
	if len(ar.StopSequences) > 0 {
		cr.Stop, _ = json.Marshal(ar.StopSequences)
	}
	if t := ar.Thinking; t != nil {
		switch t.Type {
		case "disabled":
			off := "none"
			cr.ReasoningEffort = &off // the template's thinking switch off (reasoning.go)
		case "enabled":
			if t.BudgetTokens == nil || *t.BudgetTokens < 1 {
				return nil, badRequest("thinking.budget_tokens", "thinking.budget_tokens is required with thinking enabled")
			}
			cr.ThinkingBudgetTokens = t.BudgetTokens
		default:
			return nil, badRequest("thinking.type", "thinking.type %q is not supported (enabled, disabled)", t.Type)
		}
	}
	if !isNull(ar.System) {
		sys, e := anthropicText("system", ar.System)
		if e != nil {
			return nil, e
		}
		c, _ := json.Marshal(sys)
		cr.Messages = append(cr.Messages, wireMessage{Role: "system", Content: c})
	}
	if len(ar.Messages) == 0 {
		return nil, badRequest("messages", "messages: at least one message is required")
	}
	for i, m := range ar.Messages {
		field := "messages." + strconv.Itoa(i)
		msgs, e := anthropicTurn(field, m)
		if e != nil {
			return nil, e
		}
		cr.Messages = append(cr.Messages, msgs...)
	}
	var e *apiError
	if cr.Tools, e = anthropicTools(ar.Tools); e != nil {
		return nil, e
	}
	if !isNull(ar.ToolChoice) {
		var tc struct {
			Type                   string `json:"type"`
			Name                   string `json:"name"`
			DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
		}
		if json.Unmarshal(ar.ToolChoice, &tc) != nil {
			return nil, badRequest("tool_choice", "tool_choice must be an object {\"type\": ...}")
		}
		switch tc.Type {
		case "auto", "none":
			cr.ToolChoice, _ = json.Marshal(tc.Type)
		case "any":
			cr.ToolChoice = json.RawMessage(`"required"`)
		case "tool":
			cr.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}})
		default:
			return nil, badRequest("tool_choice.type", "tool_choice.type %q is not supported (auto, any, tool, none)", tc.Type)
		}
		if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
			f := false
			cr.ParallelToolCalls = &f
		}
		if isNull(cr.Tools) && tc.Type == "none" {
			cr.ToolChoice = nil
		}
	}
	return cr, nil
}

// anthropicText reads a string or a list of text blocks as one string.
func anthropicText(field string, raw json.RawMessage) (string, *apiError) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []anthropicBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return "", badRequest(field, "%s must be a string or an array of text blocks", field)
	}
	texts := make([]string, 0, len(blocks))
	for i, b := range blocks {
		bf := field + "." + strconv.Itoa(i)
		if b.Type != "text" || b.Text == nil {
			return "", badRequest(bf+".type", "%s: only text blocks are supported here, got %q", bf, b.Type)
		}
		texts = append(texts, *b.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// anthropicTurn converts one message into chat messages: a user turn's
// tool_result blocks become tool messages (first, in order), its text a
// user message; an assistant turn's text, tool_use and thinking blocks one
// assistant message.
func anthropicTurn(field string, m anthropicMessage) ([]wireMessage, *apiError) {
	if m.Role != "user" && m.Role != "assistant" {
		return nil, badRequest(field+".role", "%s.role must be \"user\" or \"assistant\", got %q", field, m.Role)
	}
	if isNull(m.Content) {
		return nil, badRequest(field+".content", "%s.content is required", field)
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []wireMessage{{Role: m.Role, Content: m.Content}}, nil
	}
	var blocks []anthropicBlock
	if json.Unmarshal(m.Content, &blocks) != nil {
		return nil, badRequest(field+".content", "%s.content must be a string or an array of content blocks", field)
	}
	var out []wireMessage
	var texts []string
	var calls json.RawMessage
	var thinking *string
	for i, b := range blocks {
		bf := field + ".content." + strconv.Itoa(i)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return nil, badRequest(bf+".text", "%s.text is required", bf)
			}
			texts = append(texts, *b.Text)
		case "tool_use":
			if m.Role != "assistant" {
				return nil, badRequest(bf+".type", "%s: tool_use blocks belong to assistant turns", bf)
			}
			if b.ID == "" || b.Name == "" {
				return nil, badRequest(bf, "%s: a tool_use block needs id and name", bf)
			}
			args := "{}"
			if !isNull(b.Input) {
				args = string(b.Input)
			}
			c, _ := json.Marshal(toolCallOut{ID: b.ID, Type: "function", Function: functionOut{Name: b.Name, Arguments: args}})
			calls = appendRaw(calls, c)
		case "tool_result":
			if m.Role != "user" {
				return nil, badRequest(bf+".type", "%s: tool_result blocks belong to user turns", bf)
			}
			if b.ToolUseID == "" {
				return nil, badRequest(bf+".tool_use_id", "%s.tool_use_id is required", bf)
			}
			text := ""
			if !isNull(b.Content) {
				t, e := anthropicText(bf+".content", b.Content)
				if e != nil {
					return nil, e
				}
				text = t
			}
			if b.IsError && text == "" {
				text = "error"
			}
			c, _ := json.Marshal(text)
			out = append(out, wireMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: c})
		case "thinking":
			if m.Role != "assistant" || b.Thinking == nil {
				return nil, badRequest(bf, "%s: a thinking block belongs to an assistant turn and needs thinking", bf)
			}
			var sig string
			if !isNull(b.Signature) && json.Unmarshal(b.Signature, &sig) != nil {
				return nil, badRequest(bf+".signature", "%s.signature must be a string", bf)
			}
			thinking = b.Thinking
		case "redacted_thinking":
		case "image", "document", "search_result":
			return nil, badRequest(bf+".type", "%s.type %q is not supported: the served models read text only", bf, b.Type)
		default:
			return nil, badRequest(bf+".type", "%s.type %q is not supported (text, tool_use, tool_result, thinking)", bf, b.Type)
		}
	}
	if m.Role == "assistant" {
		c, _ := json.Marshal(strings.Join(texts, "\n"))
		return []wireMessage{{Role: "assistant", Content: c, ToolCalls: calls, ReasoningContent: thinking}}, nil
	}
	if len(texts) > 0 || len(out) == 0 {
		c, _ := json.Marshal(strings.Join(texts, "\n"))
		out = append(out, wireMessage{Role: "user", Content: c})
	}
	return out, nil
}

// anthropicTools rewrites {name, description, input_schema} tools into
// chat's function tools.
func anthropicTools(raw json.RawMessage) (json.RawMessage, *apiError) {
	if isNull(raw) {
		return nil, nil
	}
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if json.Unmarshal(raw, &tools) != nil {
		return nil, badRequest("tools", "tools must be an array of objects")
	}
	if len(tools) == 0 {
		return nil, nil
	}
	type function struct {
		Name        string          `json:"name"`
		Description *string         `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	out := make([]tool, 0, len(tools))
	for i, t := range tools {
		f := "tools." + strconv.Itoa(i)
		if t.Type != "" && t.Type != "custom" {
			return nil, badRequest(f+".type", "%s.type %q is not supported (only client tools with an input_schema)", f, t.Type)
		}
		if isNull(t.InputSchema) {
			return nil, badRequest(f+".input_schema", "%s.input_schema is required", f)
		}
		out = append(out, tool{"function", function{t.Name, t.Description, t.InputSchema}})
	}
	b, _ := json.Marshal(out)
	return b, nil
}

// ---- output ----

// anthropicUsage is a message's token counts as Anthropic gives them: the
// prompt's tokens the cache did not hold (input_tokens) and those it did
// (cache_read_input_tokens; nothing is written to a cache on request, so
// cache_creation_input_tokens is 0).
type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// anthropicContent is one output block: thinking, text or tool_use.
type anthropicContent struct {
	Type      string          `json:"type"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"` // a thinking block's (thinkingSignature)
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	args      string          // a tool_use block's arguments as streamed
}

type anthropicMessageOut struct {
	ID           string             `json:"id"`
	Type         string             `json:"type"` // "message"
	Role         string             `json:"role"`
	Model        string             `json:"model"`
	Content      []anthropicContent `json:"content"`
	StopReason   *string            `json:"stop_reason"`
	StopSequence *string            `json:"stop_sequence"`
	Usage        anthropicUsage     `json:"usage"`
}

// anthropicEncoder is the Messages API's replyEncoder.
type anthropicEncoder struct {
	msg  anthropicMessageOut
	open int // index of the open block (-1: none)
}

func newAnthropicEncoder(model string) *anthropicEncoder {
	return &anthropicEncoder{msg: anthropicMessageOut{ID: newID("msg_"), Type: "message", Role: "assistant", Model: model, Content: []anthropicContent{}}, open: -1}
}

func (e *anthropicEncoder) start(promptTokens int) []sseEvent {
	e.msg.Usage.InputTokens = promptTokens
	m := e.msg
	m.Content = []anthropicContent{}
	return []sseEvent{{"message_start", map[string]any{"type": "message_start", "message": m}}, {"ping", map[string]any{"type": "ping"}}}
}

// closeBlock ends the open block.
func (e *anthropicEncoder) closeBlock() []sseEvent {
	if e.open < 0 {
		return nil
	}
	i := e.open
	e.open = -1
	var evs []sseEvent
	switch b := &e.msg.Content[i]; b.Type {
	case "tool_use":
		b.Input = toolInput(b.args)
	case "thinking":
		sig := thinkingSignature(*b.Thinking)
		b.Signature = &sig
		evs = append(evs, sseEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
			"delta": map[string]any{"type": "signature_delta", "signature": sig}}})
	}
	return append(evs, sseEvent{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}})
}

// thinkingSignature is a thinking block's signature: Anthropic's API signs
// a block so that it can be sent back unchanged, and clients keep and
// return it; here it is the base64 SHA-256 digest of the thinking
// (nothing secret: a local model's thinking needs no proof of origin, so
// thinking blocks sent back are read whatever their signature).
func thinkingSignature(thinking string) string {
	sum := sha256.Sum256([]byte("nanoserve thinking\x00" + thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// toolInput is a call's arguments as the JSON object tool_use.input holds.
func toolInput(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(args)
}

func (e *anthropicEncoder) reasoning(text string) []sseEvent {
	var evs []sseEvent
	if e.open < 0 || e.msg.Content[e.open].Type != "thinking" {
		evs = e.closeBlock()
		e.open = len(e.msg.Content)
		empty, sig := "", ""
		e.msg.Content = append(e.msg.Content, anthropicContent{Type: "thinking", Thinking: &empty, Signature: &sig})
		evs = append(evs, sseEvent{"content_block_start", map[string]any{"type": "content_block_start", "index": e.open,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}})
	}
	b := &e.msg.Content[e.open]
	t := *b.Thinking + text
	b.Thinking = &t
	return append(evs, sseEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": e.open,
		"delta": map[string]any{"type": "thinking_delta", "thinking": text}}})
}

func (e *anthropicEncoder) content(text string) []sseEvent {
	var evs []sseEvent
	if e.open < 0 || e.msg.Content[e.open].Type != "text" {
		evs = e.closeBlock()
		e.open = len(e.msg.Content)
		empty := ""
		e.msg.Content = append(e.msg.Content, anthropicContent{Type: "text", Text: &empty})
		evs = append(evs, sseEvent{"content_block_start", map[string]any{"type": "content_block_start", "index": e.open,
			"content_block": map[string]any{"type": "text", "text": ""}}})
	}
	b := &e.msg.Content[e.open]
	t := *b.Text + text
	b.Text = &t
	return append(evs, sseEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": e.open,
		"delta": map[string]any{"type": "text_delta", "text": text}}})
}

func (e *anthropicEncoder) call(d chat.ToolCallDelta) []sseEvent {
	var evs []sseEvent
	if d.Name != "" || d.ID != "" {
		evs = e.closeBlock()
		e.open = len(e.msg.Content)
		e.msg.Content = append(e.msg.Content, anthropicContent{Type: "tool_use", ID: d.ID, Name: d.Name})
		evs = append(evs, sseEvent{"content_block_start", map[string]any{"type": "content_block_start", "index": e.open,
			"content_block": map[string]any{"type": "tool_use", "id": d.ID, "name": d.Name, "input": map[string]any{}}}})
	}
	if d.Arguments != "" && e.open >= 0 {
		b := &e.msg.Content[e.open]
		b.args += d.Arguments
		evs = append(evs, sseEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": e.open,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": d.Arguments}}})
	}
	return evs
}

func (e *anthropicEncoder) end(end replyEnd) []sseEvent {
	evs := e.closeBlock()
	reason := "end_turn"
	switch {
	case end.reason == "tool_calls":
		reason = "tool_use"
	case end.reason == "length":
		reason = "max_tokens"
	case end.stopSeq != "":
		reason = "stop_sequence"
		e.msg.StopSequence = &end.stopSeq
	}
	e.msg.StopReason = &reason
	cached := min(end.cached, end.usage.PromptTokens)
	e.msg.Usage = anthropicUsage{InputTokens: end.usage.PromptTokens - cached, CacheReadInputTokens: cached, OutputTokens: end.usage.CompletionTokens}
	return append(evs,
		sseEvent{"message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": reason, "stop_sequence": e.msg.StopSequence},
			"usage": e.msg.Usage}},
		sseEvent{"message_stop", map[string]any{"type": "message_stop"}})
}

func (e *anthropicEncoder) whole() any { return e.msg }

func (e *anthropicEncoder) failed(ae *apiError) []sseEvent {
	return []sseEvent{{"error", anthropicErrorBody(ae)}}
}

// anthropicErrorType is Anthropic's error type for an HTTP status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusRequestTimeout, http.StatusMethodNotAllowed, http.StatusConflict:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	return "api_error"
}

// anthropicErrorBody is Anthropic's error object for e.
func anthropicErrorBody(e *apiError) any {
	return map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(e.status), "message": e.Message}}
}

// isAnthropicPath reports whether path is one of Anthropic's API paths,
// whose errors take Anthropic's shape.
func isAnthropicPath(path string) bool {
	return path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/")
}

// ---- handlers ----

// anthropicJob decodes a Messages request into a chat job.
func (s *Server) anthropicJob(r *http.Request, ar *anthropicRequest, count bool) (*anthropicRequest, *job, *apiError) {
	cr, e := anthropicChat(ar, count)
	if e != nil {
		return nil, nil, e
	}
	cr.ctx = r.Context()
	j, e := s.chatJob(cr)
	return ar, j, e
}

func (s *Server) handleAnthropicMessages(w http.ResponseWriter, r *http.Request, req *anthropicRequest) {
	start := time.Now()
	ar, j, e := s.anthropicJob(r, req, false)
	if e != nil {
		writeError(w, e)
		return
	}
	j.start = start
	if j.reply != nil && (j.tools == nil || j.tools.format != chat.ToolFormatMistral) { // Mistral's templates want their own 9-character ids
		j.reply.cfg.NewID = func() string { return newID("toolu_") }
	}
	stream := ar.Stream != nil && *ar.Stream
	out := newReplySink(s, w, j, stream, newAnthropicEncoder(j.model))
	if stream && s.eng != nil {
		// message_start reports the prompt's tokens, which the engine
		// counts only at the end: tokenize it here too.
		if ids, err := s.eng.Encode(&j.reqs[0]); err == nil {
			out.promptTokens = len(ids)
		}
	}
	s.run(r.Context(), j, out)
}

func (s *Server) handleAnthropicCountTokens(w http.ResponseWriter, r *http.Request, req *anthropicRequest) {
	_, j, e := s.anthropicJob(r, req, true)
	if e != nil {
		writeError(w, e)
		return
	}
	ids, err := s.eng.Encode(&j.reqs[0])
	if err != nil {
		writeError(w, s.startError(r.Context(), err, j))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": len(ids)})
}
