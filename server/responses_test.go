package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"testing"

	"nanoserve/chat"
	"nanoserve/engine"
)

// TestResponsesInput: input items become the chat messages chat's own
// decoder reads — a function_call joins the assistant turn before it
// (parallel calls are one turn), reasoning opens or joins one, outputs are
// tool messages, content parts are joined — and what cannot be honoured is
// a 400 naming the item.
func TestResponsesInput(t *testing.T) {
	msgs, e := responsesInput(json.RawMessage(`[
		{"role":"developer","content":"Rules."},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},
		{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"think"}]},
		{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Let me look.","annotations":[]}]},
		{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"x\":1}","status":"completed"},
		{"type":"function_call","id":"fc_2","call_id":"call_2","name":"g","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_1","output":"one"},
		{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"two"}]},
		{"type":"function_call","call_id":"call_3","name":"f","arguments":"{}"}
	]`))
	if e != nil {
		t.Fatal(e.Message)
	}
	got := make([]string, len(msgs))
	for i, m := range msgs {
		got[i] = fmt.Sprintf("%s %s calls=%s id=%s", m.Role, m.Content, m.ToolCalls, m.ToolCallID)
		if m.ReasoningContent != nil {
			got[i] += " reasoning=" + *m.ReasoningContent
		}
	}
	want := []string{
		`developer "Rules." calls= id=`,
		`user "a\nb" calls= id=`,
		`assistant "Let me look." calls=[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"}}] id= reasoning=think`,
		`tool "one" calls= id=call_1`,
		`tool "two" calls= id=call_2`,
		`assistant  calls=[{"id":"call_3","type":"function","function":{"name":"f","arguments":"{}"}}] id=`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// What chat makes of them: the calls and results pair up.
	cm, ae := chatMessages(msgs, chat.ToolFormatHermes)
	if ae != nil || len(cm) != 6 || len(cm[2].ToolCalls) != 2 || cm[3].ToolCallID != "call_1" || cm[0].Role != "system" {
		t.Errorf("chat messages %+v, %v", cm, ae)
	}

	for _, c := range []struct{ input, field string }{
		{`null`, "input"},
		{`[]`, "input"},
		{`42`, "input"},
		{`[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]`, "input[0].content[0].type"},
		{`[{"type":"web_search_call"}]`, "input[0].type"},
		{`[{"type":"item_reference","id":"msg_1"}]`, "input[0].type"},
		{`[{"type":"function_call","name":"f"}]`, "input[0]"},
		{`[{"type":"function_call_output","output":"x"}]`, "input[0].call_id"},
		{`[{"role":"tool","content":"x"}]`, "input[0].role"},
	} {
		if _, e := responsesInput(json.RawMessage(c.input)); e == nil || e.Param == nil || *e.Param != c.field {
			t.Errorf("%s: %v, want a 400 on %s", c.input, e, c.field)
		}
	}
}

// TestResponsesChat: the request fields map onto chat's — instructions
// first and never stored, function tools rewritten in the client's field
// order, tool_choice, text.format as response_format, max_output_tokens —
// and the ones we cannot honour are a 400.
func TestResponsesChat(t *testing.T) {
	var rr responsesRequest
	body := `{"model":"m","instructions":"Be brief.","input":"hi","max_output_tokens":7,"temperature":0,
		"tools":[{"type":"function","name":"f","strict":true,"parameters":{"type":"object"},"description":"d"}],
		"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false,
		"text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"},"strict":true}}}`
	if err := json.Unmarshal([]byte(body), &rr); err != nil {
		t.Fatal(err)
	}
	prev := []wireMessage{{Role: "user", Content: json.RawMessage(`"before"`)}}
	cr, conv, e := responsesChat(&rr, prev)
	if e != nil {
		t.Fatal(e.Message)
	}
	if len(cr.Messages) != 3 || cr.Messages[0].Role != "system" || string(cr.Messages[1].Content) != `"before"` || len(conv) != 1 || string(conv[0].Content) != `"hi"` {
		t.Errorf("messages %+v, conversation %+v", cr.Messages, conv)
	}
	if want := `[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object"},"description":"d"}}]`; string(cr.Tools) != want {
		t.Errorf("tools %s, want %s", cr.Tools, want)
	}
	if string(cr.ToolChoice) != `{"function":{"name":"f"},"type":"function"}` || cr.ParallelToolCalls == nil || *cr.ParallelToolCalls {
		t.Errorf("tool_choice %s, parallel %v", cr.ToolChoice, cr.ParallelToolCalls)
	}
	if *cr.MaxTokens != 7 || *cr.Temperature != 0 || cr.ReasoningEffort != nil {
		t.Errorf("max_tokens %v temperature %v", *cr.MaxTokens, *cr.Temperature)
	}
	if rf := cr.ResponseFormat; rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || string(rf.JSONSchema.Schema) != `{"type":"object"}` {
		t.Errorf("response_format %+v", rf)
	}

	for _, c := range []struct{ body, field string }{
		{`{"input":"x","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{`{"input":"x","tool_choice":{"type":"allowed_tools"}}`, "tool_choice"},
		{`{"input":"x","text":{"format":{"type":"json_schema","name":"x"}}}`, "text.format.schema"},
		{`{"input":"x","text":{"format":{"type":"grammar"}}}`, "text.format.type"},
		{`{"input":"x","background":true}`, "background"},
		{`{"input":"x","truncation":"auto"}`, "truncation"},
		{`{"input":"x","max_output_tokens":0}`, "max_output_tokens"},
		{`{"input":"x","conversation":"conv_1"}`, "conversation"},
	} {
		var rr responsesRequest
		if err := json.Unmarshal([]byte(c.body), &rr); err != nil {
			t.Fatal(err)
		}
		if _, _, e := responsesChat(&rr, nil); e == nil || e.Param == nil || *e.Param != c.field {
			t.Errorf("%s: %v, want a 400 on %s", c.body, e, c.field)
		}
	}
}

// TestResponsesEncoder: a reply of text then two calls makes the
// documented event sequence (indices, item ids, sequence numbers in
// order), the deltas accumulate to the final response's items, and the
// whole response equals the completed event's.
func TestResponsesEncoder(t *testing.T) {
	rr := &responsesRequest{}
	e := newResponsesEncoder(rr, "m", true)
	var evs []sseEvent
	evs = append(evs, e.start(0)...)
	evs = append(evs, e.content("Hel")...)
	evs = append(evs, e.content("lo")...)
	evs = append(evs, e.call(chat.ToolCallDelta{Index: 0, ID: "call_a", Type: "function", Name: "f"})...)
	evs = append(evs, e.call(chat.ToolCallDelta{Index: 0, Arguments: `{"x":`})...)
	evs = append(evs, e.call(chat.ToolCallDelta{Index: 0, Arguments: `1}`})...)
	evs = append(evs, e.call(chat.ToolCallDelta{Index: 1, ID: "call_b", Type: "function", Name: "g"})...)
	evs = append(evs, e.call(chat.ToolCallDelta{Index: 1, Arguments: `{}`})...)
	evs = append(evs, e.end(replyEnd{reason: "tool_calls", usage: usage{PromptTokens: 5, CompletionTokens: 9, TotalTokens: 14}})...)
	var names []string
	var text, args string
	var completed map[string]any
	for i, ev := range evs {
		names = append(names, ev.name)
		var m map[string]any
		if err := json.Unmarshal(marshal(ev.data), &m); err != nil {
			t.Fatal(err)
		}
		if m["type"] != ev.name || m["sequence_number"] != float64(i) {
			t.Errorf("event %d: type %v sequence %v", i, m["type"], m["sequence_number"])
		}
		switch ev.name {
		case "response.output_text.delta":
			text += m["delta"].(string)
		case "response.function_call_arguments.delta":
			args += m["delta"].(string)
		case "response.completed":
			completed = m["response"].(map[string]any)
		}
	}
	want := "response.created response.in_progress " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.delta " +
		"response.function_call_arguments.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " +
		"response.completed"
	if strings.Join(names, " ") != want {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(names, " "), want)
	}
	whole := string(marshal(e.whole()))
	if completed == nil || string(marshal(completed)) != string(marshal(mustJSON(t, whole))) {
		t.Errorf("completed event's response %v\nwhole %s", completed, whole)
	}
	r := e.resp
	if r.Status != "completed" || len(r.Output) != 3 || r.Output[0].Content[0].Text != text || text != "Hello" ||
		*r.Output[1].Arguments+*r.Output[2].Arguments != args || r.Output[1].CallID != "call_a" || r.Output[2].Name != "g" ||
		r.Usage.InputTokens != 5 || r.Usage.OutputTokens != 9 || r.Usage.TotalTokens != 14 {
		t.Errorf("response %s", whole)
	}
	// The stored conversation turn: the text and both calls.
	m := e.outputMessage()
	if string(m.Content) != `"Hello"` || !strings.Contains(string(m.ToolCalls), `"id":"call_b"`) {
		t.Errorf("output message %+v", m)
	}

	// Reasoning first: its own item (reasoning_text events), closed when
	// the answer starts; kept as the stored turn's reasoning_content.
	e = newResponsesEncoder(rr, "m", true)
	evs = e.start(0)
	evs = append(evs, e.reasoning("Let me ")...)
	evs = append(evs, e.reasoning("think.")...)
	evs = append(evs, e.content("Hi")...)
	evs = append(evs, e.end(replyEnd{reason: "stop"})...)
	names = names[:0]
	for _, ev := range evs[2:] {
		names = append(names, ev.name)
	}
	want = "response.output_item.added response.content_part.added response.reasoning_text.delta response.reasoning_text.delta " +
		"response.reasoning_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.content_part.added response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if strings.Join(names, " ") != want {
		t.Errorf("reasoning events\n%s\nwant\n%s", strings.Join(names, " "), want)
	}
	whole = string(marshal(e.whole()))
	if !strings.Contains(whole, `"output":[{"type":"reasoning","id":"rs_`) || !strings.Contains(whole, `"summary":[],"content":[{"type":"reasoning_text","text":"Let me think."}]},{"type":"message"`) {
		t.Errorf("reasoning response %s", whole)
	}
	if m := e.outputMessage(); m.ReasoningContent == nil || *m.ReasoningContent != "Let me think." || string(m.Content) != `"Hi"` {
		t.Errorf("stored turn %+v", m)
	}

	// The token budget ran out: incomplete, with the reason.
	e = newResponsesEncoder(rr, "m", true)
	e.start(0)
	e.content("x")
	last := e.end(replyEnd{reason: "length"})
	if last[len(last)-1].name != "response.incomplete" || e.resp.Status != "incomplete" || e.resp.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("length: %s %+v", last[len(last)-1].name, e.resp)
	}
	// A failure mid-stream: an error event, then response.failed.
	e = newResponsesEncoder(rr, "m", true)
	f := e.failed(&apiError{status: 500, Message: "boom"})
	if len(f) != 2 || f[0].name != "error" || f[1].name != "response.failed" || e.resp.Error.Message != "boom" {
		t.Errorf("failed: %+v", f)
	}
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestResponseStore: the memory keeps at most maxCount responses and
// maxBytes of them, dropping the least recently used (a get counts as a
// use); one larger than the whole memory is never kept.
func TestResponseStore(t *testing.T) {
	msg := func(s string) []wireMessage {
		return []wireMessage{{Role: "user", Content: json.RawMessage(`"` + s + `"`)}}
	}
	st := newResponseStore(3, 1000)
	for _, id := range []string{"a", "b", "c"} {
		st.put(id, msg(id))
	}
	st.get("a") // a is now the most recent
	st.put("d", msg("d"))
	if _, ok := st.get("b"); ok {
		t.Errorf("b (least recently used) survived the count bound")
	}
	for _, id := range []string{"a", "c", "d"} {
		if m, ok := st.get(id); !ok || string(m[0].Content) != `"`+id+`"` {
			t.Errorf("%s: %v %v", id, m, ok)
		}
	}
	// Bytes: one entry of ~600 bytes pushes the others out.
	big := strings.Repeat("x", 600)
	st.put("big", msg(big))
	if st.bytes > st.maxBytes || st.lru.Len() != len(st.byID) {
		t.Errorf("bytes %d of %d, %d entries, %d ids", st.bytes, st.maxBytes, st.lru.Len(), len(st.byID))
	}
	if _, ok := st.get("big"); !ok {
		t.Errorf("the newest entry was dropped")
	}
	st.put("huge", msg(strings.Repeat("y", 2000)))
	if _, ok := st.get("huge"); ok {
		t.Errorf("an entry larger than the memory was kept")
	}
	total := 0
	for el := st.lru.Front(); el != nil; el = el.Next() {
		total += el.Value.(*storedResponse).bytes
	}
	if total != st.bytes {
		t.Errorf("counted %d bytes, entries hold %d", st.bytes, total)
	}
}

// TestResponsesPreviousID: previous_response_id chains responses (each
// prompt holds the earlier turns and outputs, without the earlier
// instructions), store: false keeps a response out of memory (a 404 names
// it), and the shape of both answers.
func TestResponsesPreviousID(t *testing.T) {
	ts := newTestServer(t, nil)
	sc := &script{replies: []string{"first", "second", "third"}}
	ts.gen = scripted(sc.gen)
	post := func(body string) responsesObject {
		t.Helper()
		code, _, b := ts.post(t, "/v1/responses", body)
		if code != 200 {
			t.Fatalf("%s: %d %s", body, code, b)
		}
		return decode[responsesObject](t, b)
	}
	r1 := post(`{"instructions":"Old rules.","input":"one"}`)
	r2 := post(fmt.Sprintf(`{"previous_response_id":%q,"instructions":"New rules.","input":"two","store":false}`, r1.ID))
	if r2.PreviousResponseID == nil || *r2.PreviousResponseID != r1.ID || r2.Store {
		t.Errorf("second response %+v", r2)
	}
	want := "<|system|>New rules.\n<|user|>one\n<|assistant|>first\n<|user|>two\n<|assistant|>"
	if p := sc.prompt(1); p != want {
		t.Errorf("second prompt %q, want %q", p, want)
	}
	// chat's field names in errors become this API's.
	code, _, b := ts.post(t, "/v1/responses", `{"input":"x","max_output_tokens":5,"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","required":["a"],"properties":{"a":{"type":"string","minLength":40}}}}}}`)
	if code != 400 || !strings.Contains(string(b), `"param":"max_output_tokens"`) || !strings.Contains(string(b), "max_output_tokens 5") {
		t.Errorf("a budget too small for the format: %d %s", code, b)
	}
	code, _, b = ts.post(t, "/v1/responses", fmt.Sprintf(`{"previous_response_id":%q,"input":"three"}`, r2.ID))
	if code != 404 || !strings.Contains(string(b), r2.ID) || !strings.Contains(string(b), `"param":"previous_response_id"`) {
		t.Errorf("an unstored response as previous: %d %s", code, b)
	}
}

// TestResponsesUsageDetails: usage.output_tokens_details.reasoning_tokens
// counts the tokens the model spent before its answer when it reasoned
// (thinkReply comes in 5-byte tokens: 8 of them up to "</think>\n\n"),
// streamed and whole alike, 0 when it did not; input_tokens_details.
// cached_tokens is the prompt the cache held.
func TestResponsesUsageDetails(t *testing.T) {
	sc := &script{replies: []string{thinkReply}}
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	ts.gen = scripted(func(ctx context.Context, req engine.Request) (iter.Seq[engine.Token], func() *engine.Result) {
		toks, res := sc.gen(ctx, req)
		return toks, func() *engine.Result {
			r := res()
			r.Usage.PromptTokens, r.Usage.CachedTokens = 20, 16
			return r
		}
	})
	usageOf := func(body []byte, stream bool) responsesUsage {
		t.Helper()
		if !stream {
			return *decode[responsesObject](t, body).Usage
		}
		var last []byte
		for _, line := range strings.Split(string(body), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"type":"response.completed"`) {
				last = []byte(d)
			}
		}
		var ev struct{ Response responsesObject }
		if err := json.Unmarshal(last, &ev); err != nil || ev.Response.Usage == nil {
			t.Fatalf("no response.completed with usage in %s", body)
		}
		return *ev.Response.Usage
	}
	for _, c := range []struct {
		reply string
		want  int
	}{{thinkReply, 8}, {"The answer is 4.", 0}} {
		for _, stream := range []bool{false, true} {
			sc.set(c.reply)
			code, _, body := ts.post(t, "/v1/responses", fmt.Sprintf(`{"input":"2+2?","stream":%v}`, stream))
			if code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			u := usageOf(body, stream)
			if u.OutputTokensDetails.ReasoningTokens != c.want || u.InputTokensDetails.CachedTokens != 16 || u.OutputTokens != len(pieces(c.reply, 5)) {
				t.Errorf("reply %q stream %v: usage %+v, want %d reasoning tokens and 16 cached", c.reply, stream, u, c.want)
			}
		}
	}
}
