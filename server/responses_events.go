package server

// The Responses API's output: the response object and its streamed events,
// made by one encoder so that streamed = whole (responses.go decodes the
// request; responses_store.go keeps replies for previous_response_id).

import (
	"encoding/json"
	"strings"
	"time"

	"nanoserve/chat"
)

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

// progress is a response.in_progress event with llama-server's
// prompt_progress (return_progress).
func (e *responsesEncoder) progress(p *promptProgress) sseEvent {
	return e.ev("response.in_progress", map[string]any{"response": e.snapshot(), "prompt_progress": p})
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
	u.InputTokensDetails.CachedTokens = end.cached
	u.OutputTokensDetails.ReasoningTokens = end.reasoningTokens
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
