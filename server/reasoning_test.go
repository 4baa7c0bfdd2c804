package server

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"nanoserve/chat"
)

// The reasoning tests serve the tiny Qwen2 model (Qwen3 vocabulary) with
// a reasoning template from llama.cpp's collection; the replies are
// scripted (script) except where the engine's own processors are under
// test (the reasoning gate in front of a grammar).

// reasoningServer serves qwenEng with the named llama.cpp template.
func reasoningServer(t *testing.T, template string, mod func(*Options)) *testServer {
	t.Helper()
	b, err := os.ReadFile("../chat/testdata/templates/llamacpp/" + template + ".jinja")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := chat.Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return qwenToolServer(t, func(o *Options) {
		o.Template, o.TemplateOptions = tp, chat.Options{}
		if mod != nil {
			mod(o)
		}
	})
}

type reasoningReply struct {
	Choices []struct {
		Message struct {
			Content          *string         `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// whole is a non-streamed reply's reasoning, content and finish reason.
func wholeReasoning(t *testing.T, body []byte) (reasoning, content, finish string) {
	t.Helper()
	r := decode[reasoningReply](t, body)
	if len(r.Choices) != 1 {
		t.Fatalf("reply %s", body)
	}
	m := r.Choices[0].Message
	if m.ReasoningContent != nil {
		reasoning = *m.ReasoningContent
		if reasoning == "" {
			t.Errorf("reasoning_content is \"\" (it is left out when empty): %s", body)
		}
	}
	if m.Content != nil {
		content = *m.Content
	}
	return reasoning, content, r.Choices[0].FinishReason
}

// streamedReasoning gathers a chat SSE body's reasoning and content deltas.
func streamedReasoning(t *testing.T, body []byte) (reasoning, content string, chunks int) {
	t.Helper()
	for _, ev := range sseEvents(t, body) {
		if ev == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content          *string `json:"content"`
					ReasoningContent *string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &ch); err != nil {
			t.Fatalf("chunk %s: %v", ev, err)
		}
		for _, c := range ch.Choices {
			if c.Delta.ReasoningContent != nil {
				reasoning += *c.Delta.ReasoningContent
				chunks++
			}
			if c.Delta.Content != nil {
				content += *c.Delta.Content
			}
		}
	}
	return reasoning, content, chunks
}

const thinkReply = "<think>\nTwo plus two is four.\n</think>\n\nThe answer is 4."

// TestReasoningContent: a Qwen3 reply's thinking comes back as
// reasoning_content (message and streamed deltas, equal), and
// reasoning_format (server flag or per request) switches it as
// llama-server does: none leaves it in content, deepseek-legacy fills both
// (streamed: content only).
func TestReasoningContent(t *testing.T) {
	sc := &script{replies: []string{thinkReply}}
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	ts.gen = scripted(sc.gen)
	req := `{"messages":[{"role":"user","content":"2+2?"}]`
	cases := []struct {
		extra                   string
		reasoning, content      string
		streamReason, streamCon string
	}{
		{"", "Two plus two is four.", "The answer is 4.", "Two plus two is four.", "The answer is 4."},
		{`,"reasoning_format":"deepseek"`, "Two plus two is four.", "The answer is 4.", "Two plus two is four.", "The answer is 4."},
		{`,"reasoning_format":"none"`, "", thinkReply, "", thinkReply},
		{`,"reasoning_format":"deepseek-legacy"`, "Two plus two is four.", thinkReply, "", thinkReply},
	}
	for _, c := range cases {
		status, _, body := ts.post(t, "/v1/chat/completions", req+c.extra+`}`)
		if status != 200 {
			t.Fatalf("%s: status %d: %s", c.extra, status, body)
		}
		r, content, finish := wholeReasoning(t, body)
		if r != c.reasoning || content != c.content || finish != "stop" {
			t.Errorf("%s: reasoning %q content %q finish %q", c.extra, r, content, finish)
		}
		_, _, body = ts.post(t, "/v1/chat/completions", req+c.extra+`,"stream":true}`)
		sr, scon, chunks := streamedReasoning(t, body)
		if sr != c.streamReason || scon != c.streamCon {
			t.Errorf("%s streamed: reasoning %q content %q", c.extra, sr, scon)
		}
		if c.streamReason != "" && chunks < 2 {
			t.Errorf("%s: reasoning came in %d chunks, want it streamed", c.extra, chunks)
		}
	}
	if status, _, body := ts.post(t, "/v1/chat/completions", req+`,"reasoning_format":"bogus"}`); status != 400 || !strings.Contains(string(body), "reasoning_format") {
		t.Errorf("bad reasoning_format: %d %s", status, body)
	}

	// The server's default (--reasoning-format none).
	none := reasoningServer(t, "Qwen-Qwen3-0.6B", func(o *Options) { o.ReasoningFormat = chat.ReasoningNone })
	none.gen = scripted(sc.gen)
	_, _, body := none.post(t, "/v1/chat/completions", req+`}`)
	if r, content, _ := wholeReasoning(t, body); r != "" || content != thinkReply {
		t.Errorf("--reasoning-format none: reasoning %q content %q", r, content)
	}
	_, _, body = none.post(t, "/v1/chat/completions", req+`,"reasoning_format":"auto"}`)
	if r, content, _ := wholeReasoning(t, body); r != "Two plus two is four." || content != "The answer is 4." {
		t.Errorf("per-request auto over --reasoning-format none: reasoning %q content %q", r, content)
	}
}

// TestReasoningTemplateSwitches: chat_template_kwargs and reasoning_effort
// reach the template; enable_thinking false and reasoning_effort "none"
// close Qwen3's thinking in the prompt; a prompt that opens the block
// (Qwen3.5) is read from inside it; bad values are 400s.
func TestReasoningTemplateSwitches(t *testing.T) {
	sc := &script{replies: []string{"4"}}
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	ts.gen = scripted(sc.gen)
	req := `{"messages":[{"role":"user","content":"2+2?"}]`
	for _, extra := range []string{`,"chat_template_kwargs":{"enable_thinking":false}`, `,"reasoning_effort":"none"`} {
		sc.set("4")
		status, _, body := ts.post(t, "/v1/chat/completions", req+extra+`}`)
		if status != 200 {
			t.Fatalf("%s: %d %s", extra, status, body)
		}
		if p := sc.prompt(len(sc.prompts) - 1); !strings.HasSuffix(p, "<|im_start|>assistant\n<think>\n\n</think>\n\n") {
			t.Errorf("%s: prompt ends %q", extra, tail(p, 40))
		}
		if r, content, _ := wholeReasoning(t, body); r != "" || content != "4" {
			t.Errorf("%s: reasoning %q content %q", extra, r, content)
		}
	}
	status, _, body := ts.post(t, "/v1/chat/completions", req+`,"chat_template_kwargs":{"enable_thinking":"no"}}`)
	if status != 400 || !strings.Contains(string(body), "enable_thinking") {
		t.Errorf("a string enable_thinking: %d %s", status, body)
	}

	oss := reasoningServer(t, "openai-gpt-oss-120b", nil)
	sc2 := &script{replies: []string{"<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>4"}}
	oss.gen = scripted(sc2.gen)
	status, _, body = oss.post(t, "/v1/chat/completions", req+`,"reasoning_effort":"high"}`)
	if status != 200 || !strings.Contains(sc2.prompt(0), "Reasoning: high") {
		t.Fatalf("reasoning_effort high: %d %s; prompt %q", status, body, sc2.prompt(0))
	}
	if r, content, _ := wholeReasoning(t, body); r != "Easy." || content != "4" {
		t.Errorf("gpt-oss: reasoning %q content %q", r, content)
	}
	_, _, body = oss.post(t, "/v1/chat/completions", req+`,"stream":true}`)
	if r, content, _ := streamedReasoning(t, body); r != "Easy." || content != "4" {
		t.Errorf("gpt-oss streamed: reasoning %q content %q", r, content)
	}

	q35 := reasoningServer(t, "Qwen3.5-4B", nil)
	sc3 := &script{replies: []string{"Sum.\n</think>\n\n4"}}
	q35.gen = scripted(sc3.gen)
	_, _, body = q35.post(t, "/v1/chat/completions", req+`}`)
	if r, content, _ := wholeReasoning(t, body); r != "Sum." || content != "4" || !strings.HasSuffix(sc3.prompt(0), "<think>\n") {
		t.Errorf("qwen3.5: reasoning %q content %q, prompt ends %q", r, content, tail(sc3.prompt(0), 20))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestContinueFinalMessage: continue_final_message continues the last
// assistant message's content or reasoning (the prompt ends inside it) and
// the reply holds what the model added; an impossible continuation is a
// 400.
func TestContinueFinalMessage(t *testing.T) {
	sc := &script{replies: []string{" 4."}}
	ts := reasoningServer(t, "Qwen3.5-4B", nil)
	ts.gen = scripted(sc.gen)
	status, _, body := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"The answer is"}],"continue_final_message":true,"add_generation_prompt":false}`)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if p := sc.prompt(0); !strings.HasSuffix(p, "<|im_start|>assistant\n<think></think>The answer is") {
		t.Errorf("prompt ends %q", tail(p, 50))
	}
	if r, content, _ := wholeReasoning(t, body); r != "" || content != " 4." {
		t.Errorf("content continuation: reasoning %q content %q", r, content)
	}
	sc.set(" more.</think>\n\n4")
	_, _, body = ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"","reasoning_content":"Let me think"}],"continue_final_message":"reasoning_content","add_generation_prompt":false,"stream":true}`)
	if r, content, _ := streamedReasoning(t, body); r != " more." || content != "4" {
		t.Errorf("reasoning continuation: reasoning %q content %q", r, content)
	}
	if !strings.HasSuffix(sc.prompt(1), "<think>Let me think") {
		t.Errorf("prompt ends %q", tail(sc.prompt(1), 30))
	}
	for _, bad := range []struct{ body, field string }{
		{`{"messages":[{"role":"user","content":"2+2?"}],"continue_final_message":true,"add_generation_prompt":false}`, "continue_final_message"},
		{`{"messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"x"}],"continue_final_message":true}`, "add_generation_prompt"},
		{`{"messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"x"},{"role":"assistant","content":"y"}]}`, "2 or more assistant messages"},
		// a trailing assistant message with calls cannot be prefilled either
		{`{"messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "contains tool calls"},
	} {
		status, _, body = ts.post(t, "/v1/chat/completions", bad.body)
		if status != 400 || !strings.Contains(string(body), bad.field) {
			t.Errorf("%s: %d %s", bad.body, status, body)
		}
	}

	// llama-server's prefill heuristic: a trailing assistant message is
	// continued without being asked (Options.NoPrefillAssistant: a new turn).
	llama := reasoningServer(t, "meta-llama-Llama-3.1-8B-Instruct", nil)
	sc2 := &script{replies: []string{"ow"}}
	llama.gen = scripted(sc2.gen)
	_, _, body = llama.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Best book?"},{"role":"assistant","content":"Whill"}]}`)
	if p := sc2.prompt(0); !strings.HasSuffix(p, "Best book?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nWhill") {
		t.Errorf("prefill: prompt ends %q", tail(p, 60))
	}
	if _, content, _ := wholeReasoning(t, body); content != "ow" {
		t.Errorf("prefill: content %q", content)
	}
	llama.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":false}`)
	if p := sc2.prompt(1); !strings.HasSuffix(p, "Hi<|eot_id|>") {
		t.Errorf("add_generation_prompt false: prompt ends %q", tail(p, 40))
	}
	off := reasoningServer(t, "meta-llama-Llama-3.1-8B-Instruct", func(o *Options) { o.NoPrefillAssistant = true })
	sc3 := &script{replies: []string{"ok"}}
	off.gen = scripted(sc3.gen)
	off.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Best book?"},{"role":"assistant","content":"Whill"}]}`)
	if p := sc3.prompt(0); !strings.HasSuffix(p, "Whill<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n") {
		t.Errorf("NoPrefillAssistant: prompt ends %q", tail(p, 60))
	}
}

// TestReasoningToolCalls: a tool call after (or inside) the thinking
// parses as tool_calls beside reasoning_content, streamed as whole.
func TestReasoningToolCalls(t *testing.T) {
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	req := `{"messages":[{"role":"user","content":"Weather in Zürich?"}],"tools":[` + weatherTool + `]`
	for _, reply := range []string{
		"<think>\nI need the weather.\n</think>\n\n" + callReply,
		"<think>\nI need the weather.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>",
	} {
		sc := &script{replies: []string{reply}}
		ts.gen = scripted(sc.gen)
		_, _, body := ts.post(t, "/v1/chat/completions", req+`}`)
		r := decode[reasoningReply](t, body)
		m := r.Choices[0].Message
		if m.ReasoningContent == nil || *m.ReasoningContent != "I need the weather." || r.Choices[0].FinishReason != "tool_calls" ||
			!strings.Contains(string(m.ToolCalls), `"arguments":"{\"city\": \"Zürich\"}"`) {
			t.Errorf("reply %q: %s", reply, body)
		}
		_, _, body = ts.post(t, "/v1/chat/completions", req+`,"stream":true}`)
		reasoning, _, _ := streamedReasoning(t, body)
		_, deltas, _, finish := streamed(t, body)
		if reasoning != "I need the weather." || finish != "tool_calls" || len(deltas) != 2 {
			t.Errorf("streamed %q: reasoning %q finish %q deltas %v", reply, reasoning, finish, deltas)
		}
	}
}

// TestReasoningStructuredOutput runs the real engine: with a Qwen3
// template and a JSON Schema, the prompt is opened at <think>, the model
// thinks unconstrained for the budget, the gate forces </think>, and the
// answer — only the answer — follows the schema.
func TestReasoningStructuredOutput(t *testing.T) {
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	schema := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`
	req := `{"messages":[{"role":"user","content":"Give n."}],"max_tokens":60,"temperature":0,"reasoning_budget_tokens":8,` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":` + schema + `}}`
	for _, stream := range []bool{false, true} {
		body := req + `}`
		if stream {
			body = req + `,"stream":true}`
		}
		status, _, out := ts.post(t, "/v1/chat/completions", body)
		if status != 200 {
			t.Fatalf("status %d: %s", status, out)
		}
		var reasoning, content string
		if stream {
			reasoning, content, _ = streamedReasoning(t, out)
		} else {
			reasoning, content, _ = wholeReasoning(t, out)
		}
		var v struct {
			N *int `json:"n"`
		}
		dec := json.NewDecoder(strings.NewReader(content))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || v.N == nil {
			t.Errorf("stream %v: content %q is not the schema's JSON (%v); reasoning %q", stream, content, err, reasoning)
		}
		if reasoning == "" || strings.Contains(reasoning, "</think>") {
			t.Errorf("stream %v: reasoning %q (the model thinks for the budget, then the block closes)", stream, reasoning)
		}
	}
}

// TestOllamaThink: /api/chat answers a reasoning model's thinking as
// message.thinking (whole, and in streamed lines that add up to it);
// think false closes the thinking in the prompt; a level is the
// reasoning_effort; a bad think is a 400.
func TestOllamaThink(t *testing.T) {
	sc := &script{replies: []string{thinkReply}}
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	ts.gen = scripted(sc.gen)
	req := `{"model":"` + qwenModel + `","messages":[{"role":"user","content":"2+2?"}]`
	type line struct {
		Message struct{ Content, Thinking string }
		Done    bool
	}
	status, _, body := ts.post(t, "/api/chat", req+`,"think":true,"stream":false}`)
	l := decode[line](t, body)
	if status != 200 || l.Message.Thinking != "Two plus two is four." || l.Message.Content != "The answer is 4." || !l.Done {
		t.Errorf("think true: %d %s", status, body)
	}
	_, _, body = ts.post(t, "/api/chat", req+`}`) // streamed, think unset
	var thinking, content string
	lines := 0
	for _, s := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("line %q: %v", s, err)
		}
		thinking += l.Message.Thinking
		content += l.Message.Content
		lines++
	}
	if thinking != "Two plus two is four." || content != "The answer is 4." || lines < 4 {
		t.Errorf("streamed: thinking %q content %q in %d lines", thinking, content, lines)
	}
	sc.set("4")
	_, _, body = ts.post(t, "/api/chat", req+`,"think":false,"stream":false}`)
	if l := decode[line](t, body); l.Message.Content != "4" || l.Message.Thinking != "" || !strings.HasSuffix(sc.prompt(len(sc.prompts)-1), "<think>\n\n</think>\n\n") {
		t.Errorf("think false: %s; prompt ends %q", body, tail(sc.prompt(len(sc.prompts)-1), 30))
	}
	if status, _, body := ts.post(t, "/api/chat", req+`,"think":"max"}`); status != 400 || !strings.Contains(string(body), "think") {
		t.Errorf("think max: %d %s", status, body)
	}
}

// TestReasoningForcedToolCall runs the real engine: tool_choice "required"
// on a thinking Qwen3 reply forces the call after the thinking (the
// budget closes it), and the call parses with the schema's arguments.
func TestReasoningForcedToolCall(t *testing.T) {
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	req := `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[` + weatherTool + `],"tool_choice":"required",` +
		`"max_tokens":80,"temperature":0,"reasoning_budget_tokens":6}`
	status, _, body := ts.post(t, "/v1/chat/completions", req)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	r := decode[reasoningReply](t, body)
	m := r.Choices[0].Message
	var calls []struct {
		Function struct{ Name, Arguments string }
	}
	json.Unmarshal(m.ToolCalls, &calls)
	var args struct {
		City *string `json:"city"`
	}
	if m.ReasoningContent == nil || len(calls) == 0 || calls[0].Function.Name != "get_weather" ||
		json.Unmarshal([]byte(calls[0].Function.Arguments), &args) != nil || args.City == nil || r.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("reply %s", body)
	}
}

// TestReasoningBudgetOnly runs the real engine with a reasoning budget and
// no constraint: the prompt is left as the template wrote it, and when the
// reply opens a block the gate closes it after the budget.
func TestReasoningBudgetOnly(t *testing.T) {
	ts := reasoningServer(t, "Qwen3.5-4B", func(o *Options) { b := 5; o.ReasoningBudget = &b })
	status, _, body := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":20,"temperature":0}`)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	r, content, _ := wholeReasoning(t, body)
	// The budget counts the block's tokens: five, then the forced </think>.
	if n := len(ts.tok.Encode(r, false)); r == "" || n > 5 || content == "" {
		t.Errorf("reasoning %q (%d tokens), content %q", r, n, content)
	}
	ts2 := reasoningServer(t, "Qwen-Qwen3-0.6B", func(o *Options) { b := 5; o.ReasoningBudget = &b })
	sc := &script{replies: []string{"4"}}
	ts2.gen = scripted(sc.gen)
	ts2.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`)
	if p := sc.prompt(0); !strings.HasSuffix(p, "<|im_start|>assistant\n") {
		t.Errorf("a budget alone changed the prompt: ends %q", tail(p, 30))
	}
}

// TestReasoningOff: Options.Thinking false (serve --reasoning off) renders
// Qwen3 with thinking off unless the request's kwargs turn it back on.
func TestReasoningOff(t *testing.T) {
	off := false
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", func(o *Options) { o.Thinking = &off })
	sc := &script{replies: []string{"4"}}
	ts.gen = scripted(sc.gen)
	ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"2+2?"}]}`)
	ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"2+2?"}],"chat_template_kwargs":{"enable_thinking":true}}`)
	if p := sc.prompt(0); !strings.HasSuffix(p, "<think>\n\n</think>\n\n") {
		t.Errorf("--reasoning off: prompt ends %q", tail(p, 30))
	}
	if p := sc.prompt(1); !strings.HasSuffix(p, "<|im_start|>assistant\n") {
		t.Errorf("the request's enable_thinking true: prompt ends %q", tail(p, 30))
	}
}
