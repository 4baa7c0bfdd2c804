package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"testing"

	"nanoserve/chat"
	"nanoserve/engine"
)

// TestAnthropicChat: a Messages request maps onto chat's — system first,
// a user turn's tool_result blocks as tool messages before its text, an
// assistant turn's text, tool_use and thinking as one message, tools with
// input_schema as parameters, tool_choice any/tool/none and
// disable_parallel_tool_use, stop_sequences — and what cannot be honoured
// is a 400 naming the field.
func TestAnthropicChat(t *testing.T) {
	var ar anthropicRequest
	body := `{"model":"m","max_tokens":9,"system":[{"type":"text","text":"S1"},{"type":"text","text":"S2"}],"stop_sequences":["END"],
		"messages":[
			{"role":"user","content":"hi"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"text","text":"Looking."},
				{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}},{"type":"tool_use","id":"toolu_2","name":"g","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"one"},
				{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"two"}],"is_error":true},{"type":"text","text":"thanks"}]}],
		"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}},{"name":"g","input_schema":{"type":"object"}}],
		"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`
	if err := json.Unmarshal([]byte(body), &ar); err != nil {
		t.Fatal(err)
	}
	cr, e := anthropicChat(&ar, false)
	if e != nil {
		t.Fatal(e.Message)
	}
	var got []string
	for _, m := range cr.Messages {
		s := fmt.Sprintf("%s %s calls=%s id=%s", m.Role, m.Content, m.ToolCalls, m.ToolCallID)
		if m.ReasoningContent != nil {
			s += " thinking=" + *m.ReasoningContent
		}
		got = append(got, s)
	}
	want := []string{
		`system "S1\nS2" calls= id=`,
		`user "hi" calls= id=`,
		`assistant "Looking." calls=[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"toolu_2","type":"function","function":{"name":"g","arguments":"{}"}}] id= thinking=hmm`,
		`tool "one" calls= id=toolu_1`,
		`tool "two" calls= id=toolu_2`,
		`user "thanks" calls= id=`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w := `[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}},{"type":"function","function":{"name":"g","parameters":{"type":"object"}}}]`; string(cr.Tools) != w {
		t.Errorf("tools %s, want %s", cr.Tools, w)
	}
	if string(cr.ToolChoice) != `"required"` || cr.ParallelToolCalls == nil || *cr.ParallelToolCalls || string(cr.Stop) != `["END"]` || *cr.MaxTokens != 9 {
		t.Errorf("tool_choice %s parallel %v stop %s max_tokens %d", cr.ToolChoice, cr.ParallelToolCalls, cr.Stop, *cr.MaxTokens)
	}
	// chat's decoder reads the messages: calls and results pair up.
	if cm, ae := chatMessages(cr.Messages, chat.ToolFormatHermes); ae != nil || len(cm[2].ToolCalls) != 2 || cm[4].ToolCallID != "toolu_2" {
		t.Errorf("chat messages %+v %v", cm, ae)
	}
	for tc, want := range map[string]string{
		`{"type":"tool","name":"f"}`: `{"function":{"name":"f"},"type":"function"}`,
		`{"type":"auto"}`:            `"auto"`,
		`{"type":"none"}`:            `"none"`,
	} {
		ar.ToolChoice = json.RawMessage(tc)
		if cr, e := anthropicChat(&ar, false); e != nil || string(cr.ToolChoice) != want {
			t.Errorf("tool_choice %s: %s %v, want %s", tc, cr.ToolChoice, e, want)
		}
	}

	for _, c := range []struct{ body, field string }{
		{`{"messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{`{"max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
		{`{"max_tokens":5,"messages":[]}`, "messages"},
		{`{"max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, "messages.0.role"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, "messages.0.content.0.type"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}]}`, "messages.0.content.0.type"},
		{`{"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"a"}]}]}`, "messages.0.content.0.type"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, "tools.0.type"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f"}]}`, "tools.0.input_schema"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"sometimes"}}`, "tool_choice.type"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled"}}`, "thinking.budget_tokens"},
		{`{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"system":[{"type":"image"}]}`, "system.0.type"},
	} {
		var ar anthropicRequest
		if err := json.Unmarshal([]byte(c.body), &ar); err != nil {
			t.Fatal(err)
		}
		if _, e := anthropicChat(&ar, false); e == nil || e.Param == nil || *e.Param != c.field {
			t.Errorf("%s: %v, want a 400 on %s", c.body, e, c.field)
		}
	}
	// thinking: enabled is the reasoning budget, disabled turns the
	// template's thinking off.
	ar = anthropicRequest{MaxTokens: &[]int{9}[0], Messages: []anthropicMessage{{Role: "user", Content: json.RawMessage(`"x"`)}}}
	json.Unmarshal([]byte(`{"type":"enabled","budget_tokens":64}`), &ar.Thinking)
	if cr, e := anthropicChat(&ar, false); e != nil || cr.ThinkingBudgetTokens == nil || *cr.ThinkingBudgetTokens != 64 || cr.ReasoningEffort != nil {
		t.Errorf("thinking enabled: %+v %v", cr.reasoningParams, e)
	}
	json.Unmarshal([]byte(`{"type":"disabled"}`), &ar.Thinking)
	if cr, e := anthropicChat(&ar, false); e != nil || cr.ReasoningEffort == nil || *cr.ReasoningEffort != "none" {
		t.Errorf("thinking disabled: %+v %v", cr.reasoningParams, e)
	}
	// count_tokens needs no max_tokens.
	ar = anthropicRequest{Messages: []anthropicMessage{{Role: "user", Content: json.RawMessage(`"x"`)}}}
	if _, e := anthropicChat(&ar, true); e != nil {
		t.Errorf("count_tokens without max_tokens: %v", e)
	}
}

// TestAnthropicEncoder: text then a call makes message_start, ping, a text
// block (start, deltas, stop), a tool_use block (start, input_json
// deltas, stop), message_delta with stop_reason tool_use and the usage,
// message_stop; the whole message holds the same blocks, the call's input
// as an object; the stop reasons map as Anthropic names them.
func TestAnthropicEncoder(t *testing.T) {
	e := newAnthropicEncoder("m")
	var evs []sseEvent
	evs = append(evs, e.start(5)...)
	evs = append(evs, e.content("Hel")...)
	evs = append(evs, e.content("lo")...)
	evs = append(evs, e.call(chat.ToolCallDelta{ID: "toolu_a", Type: "function", Name: "f"})...)
	evs = append(evs, e.call(chat.ToolCallDelta{Arguments: `{"x":`})...)
	evs = append(evs, e.call(chat.ToolCallDelta{Arguments: `1}`})...)
	evs = append(evs, e.end(replyEnd{reason: "tool_calls", usage: usage{PromptTokens: 5, CompletionTokens: 9}})...)
	var names []string
	var text, partial string
	for _, ev := range evs {
		names = append(names, ev.name)
		var m struct {
			Type  string
			Index int
			Delta struct {
				Type, Text  string
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			}
			Message anthropicMessageOut
			Usage   anthropicUsage
		}
		if err := json.Unmarshal(marshal(ev.data), &m); err != nil {
			t.Fatal(err)
		}
		if m.Type != ev.name {
			t.Errorf("event %s has type %s", ev.name, m.Type)
		}
		switch {
		case ev.name == "message_start" && (m.Message.Usage.InputTokens != 5 || len(m.Message.Content) != 0 || m.Message.StopReason != nil):
			t.Errorf("message_start %+v", m.Message)
		case m.Delta.Type == "text_delta":
			text += m.Delta.Text
		case m.Delta.Type == "input_json_delta":
			partial += m.Delta.PartialJSON
			if m.Index != 1 {
				t.Errorf("input_json_delta index %d", m.Index)
			}
		case ev.name == "message_delta" && (m.Delta.StopReason != "tool_use" || m.Usage.OutputTokens != 9):
			t.Errorf("message_delta %+v", m)
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(names, " "), want)
	}
	whole := string(marshal(e.whole()))
	if w := `"content":[{"type":"text","text":"Hello"},{"type":"tool_use","id":"toolu_a","name":"f","input":{"x":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":9}}`; !strings.HasSuffix(whole, w) ||
		text != "Hello" || partial != `{"x":1}` {
		t.Errorf("whole %s\nwant …%s (text %q, partial %q)", whole, w, text, partial)
	}

	// Thinking first: a thinking block with thinking_delta and its
	// signature, then the text.
	e = newAnthropicEncoder("m")
	evs = e.start(0)
	evs = append(evs, e.reasoning("Hm")...)
	evs = append(evs, e.reasoning("m.")...)
	evs = append(evs, e.content("Hi")...)
	evs = append(evs, e.reasoning("Later.")...) // harmony may think again after some text: a new block
	evs = append(evs, e.end(replyEnd{reason: "stop"})...)
	var got []string
	for _, ev := range evs[2:] {
		got = append(got, string(marshal(ev.data)))
	}
	if w := `{"content_block":{"signature":"","thinking":"","type":"thinking"},"index":0,"type":"content_block_start"} ` +
		`{"delta":{"thinking":"Hm","type":"thinking_delta"},"index":0,"type":"content_block_delta"} ` +
		`{"delta":{"thinking":"m.","type":"thinking_delta"},"index":0,"type":"content_block_delta"} ` +
		`{"delta":{"signature":"` + thinkingSignature("Hmm.") + `","type":"signature_delta"},"index":0,"type":"content_block_delta"} ` +
		`{"index":0,"type":"content_block_stop"} ` +
		`{"content_block":{"text":"","type":"text"},"index":1,"type":"content_block_start"}`; !strings.HasPrefix(strings.Join(got, " "), w) {
		t.Errorf("thinking events\n%s\nwant first\n%s", strings.Join(got, "\n"), w)
	}
	if whole := string(marshal(e.whole())); !strings.Contains(whole, `"content":[{"type":"thinking","thinking":"Hmm.","signature":"`+thinkingSignature("Hmm.")+`"},{"type":"text","text":"Hi"},{"type":"thinking","thinking":"Later.","signature":"`+thinkingSignature("Later.")+`"}]`) ||
		thinkingSignature("Hmm.") == thinkingSignature("Later.") {
		t.Errorf("thinking message %s", whole)
	}

	for _, c := range []struct {
		end          replyEnd
		reason, stop string
	}{
		{replyEnd{reason: "stop"}, "end_turn", ""},
		{replyEnd{reason: "length"}, "max_tokens", ""},
		{replyEnd{reason: "stop", stopSeq: "END"}, "stop_sequence", "END"},
	} {
		e := newAnthropicEncoder("m")
		e.start(0)
		e.end(c.end)
		if *e.msg.StopReason != c.reason || (c.stop == "") != (e.msg.StopSequence == nil) || c.stop != "" && *e.msg.StopSequence != c.stop {
			t.Errorf("%+v: stop_reason %s, stop_sequence %v", c.end, *e.msg.StopReason, e.msg.StopSequence)
		}
	}
	if f := newAnthropicEncoder("m").failed(&apiError{status: 503, Message: "cut"}); len(f) != 1 || f[0].name != "error" ||
		string(marshal(f[0].data)) != `{"error":{"message":"cut","type":"overloaded_error"},"type":"error"}` {
		t.Errorf("failed: %s", marshal(f[0].data))
	}
}

// TestMatchedStop: the stop string that ended a reply is found from its
// ids (the earliest of the request's strings after the reply's text);
// none when an end-of-generation token or the budget ended it.
func TestMatchedStop(t *testing.T) {
	tok := sharedEngine(t).Tokenizer()
	ids := tok.Encode(" Once upon a time there was a dog", false)
	res := &engine.Result{IDs: ids, Text: " Once upon a", FinishReason: engine.FinishStop}
	if got := matchedStop(tok, res, []string{"dog", " time", "zzz"}); got != " time" {
		t.Errorf("matched %q, want \" time\"", got)
	}
	if got := matchedStop(tok, res, []string{"zzz"}); got != "" {
		t.Errorf("no string matches: %q", got)
	}
	res.FinishReason = engine.FinishLength
	if got := matchedStop(tok, res, []string{" time"}); got != "" {
		t.Errorf("length: %q", got)
	}
}

// TestAnthropicErrors: on Anthropic's paths every error, the front's own
// (unknown model, wrong method, missing key) and the handler's, has
// Anthropic's shape and type; count_tokens counts what the chat template
// renders.
func TestAnthropicErrors(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.APIKey = "k" })
	do := func(method, path, key, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.url+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	for _, c := range []struct {
		method, path, key, body string
		status                  int
		typ                     string
	}{
		{"POST", "/v1/messages", "", `{}`, 401, "authentication_error"},
		{"GET", "/v1/messages", "k", ``, 405, "invalid_request_error"},
		{"POST", "/v1/messages", "k", `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, 404, "not_found_error"},
		{"POST", "/v1/messages", "k", `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}`, 400, "invalid_request_error"},
		{"POST", "/v1/messages/count_tokens", "k", `{"messages":"x"}`, 400, "invalid_request_error"},
		{"POST", "/v1/messages", "k", `{"max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":5}]},{"role":"user","content":"y"}]}`, 400, "invalid_request_error"},
	} {
		status, m := do(c.method, c.path, c.key, c.body)
		inner, _ := m["error"].(map[string]any)
		if status != c.status || m["type"] != "error" || inner == nil || inner["type"] != c.typ || inner["message"] == "" {
			t.Errorf("%s %s %s: %d %v, want %d %s", c.method, c.path, c.body, status, m, c.status, c.typ)
		}
	}
	// The OpenAI paths keep OpenAI's shape.
	if status, m := do("POST", "/v1/chat/completions", "", `{}`); status != 401 || m["type"] != nil || m["error"] == nil {
		t.Errorf("chat 401: %v", m)
	}
	status, m := do("POST", "/v1/messages/count_tokens", "k", `{"system":"S","messages":[{"role":"user","content":"Tell me a story"}]}`)
	tok := sharedEngine(t).Tokenizer()
	want := len(tok.Encode("<|system|>S\n<|user|>Tell me a story\n<|assistant|>", true))
	if _, ok := tok.BOS(); ok && tok.AddBOS() {
		want++
	}
	if status != 200 || m["input_tokens"] != float64(want) {
		t.Errorf("count_tokens: %d %v, want %d", status, m, want)
	}
}

// TestReplySinkFailure: a generation that fails mid-way ends a stream
// with the API's error events (Responses: error, response.failed;
// Anthropic: an error event in its shape) and answers a whole request
// with a 500 in the API's error shape.
func TestReplySinkFailure(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.gen = scripted(func(ctx context.Context, req engine.Request) (iter.Seq[engine.Token], func() *engine.Result) {
		res := &engine.Result{FinishReason: engine.FinishError, Err: errors.New("the model broke"), Text: "Hel"}
		return func(yield func(engine.Token) bool) { yield(engine.Token{Text: "Hel"}) }, func() *engine.Result { return res }
	})
	for _, c := range []struct{ path, body, want string }{
		{"/v1/responses", `{"input":"x","stream":true}`, "event: error\ndata: {\"code\":\"server_error\",\"message\":\"generation failed: the model broke\""},
		{"/v1/responses", `{"input":"x","stream":true}`, "event: response.failed\n"},
		{"/v1/responses", `{"input":"x"}`, `{"error":{"message":"generation failed: the model broke","type":"server_error"`},
		{"/v1/messages", `{"max_tokens":5,"messages":[{"role":"user","content":"x"}],"stream":true}`,
			"event: error\ndata: {\"error\":{\"message\":\"generation failed: the model broke\",\"type\":\"api_error\"},\"type\":\"error\"}"},
		{"/v1/messages", `{"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, `{"error":{"message":"generation failed: the model broke","type":"api_error"},"type":"error"}`},
	} {
		code, _, b := ts.post(t, c.path, c.body)
		stream := strings.Contains(c.body, `"stream":true`)
		if !strings.Contains(string(b), c.want) || stream && code != 200 || !stream && code != 500 {
			t.Errorf("%s %s: %d\n%s\nwant it to hold\n%s", c.path, c.body, code, b, c.want)
		}
	}
}

// TestAnthropicUsageCache: as Anthropic counts them, input_tokens is the
// prompt the cache did not hold and cache_read_input_tokens the part it
// did, in the message and in message_delta's cumulative usage.
func TestAnthropicUsageCache(t *testing.T) {
	e := newAnthropicEncoder("m")
	e.start(20)
	e.content("Hi")
	evs := e.end(replyEnd{reason: "stop", usage: usage{PromptTokens: 20, CompletionTokens: 3, TotalTokens: 23}, cached: 16})
	want := `{"input_tokens":4,"cache_creation_input_tokens":0,"cache_read_input_tokens":16,"output_tokens":3}`
	if whole := string(marshal(e.whole())); !strings.Contains(whole, `"usage":`+want) {
		t.Errorf("message %s, want usage %s", whole, want)
	}
	var delta string
	for _, ev := range evs {
		if ev.name == "message_delta" {
			delta = string(marshal(ev.data))
		}
	}
	if !strings.Contains(delta, `"usage":`+want) {
		t.Errorf("message_delta %s, want usage %s", delta, want)
	}
}
