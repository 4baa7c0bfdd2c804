package chat

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

func loadLlamacppTemplate(t *testing.T, name string) *Template {
	t.Helper()
	b, err := os.ReadFile("testdata/templates/llamacpp/" + name + ".jinja")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestReasoningVars(t *testing.T) {
	qwen := loadLlamacppTemplate(t, "Qwen-Qwen3-0.6B")
	oss := loadLlamacppTemplate(t, "openai-gpt-oss-120b")
	user := []Message{{Role: "user", Content: "Hi"}}
	render := func(tp *Template, vars map[string]any) string {
		out, err := tp.Render(user, Options{AddGenerationPrompt: true, Extra: vars})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name     string
		tp       *Template
		kwargs   map[string]any
		effort   string
		thinking bool
		suffix   string // the render ends with it
		contains string
	}{
		{name: "qwen3 default thinks", tp: qwen, thinking: true, suffix: "<|im_start|>assistant\n"},
		{name: "qwen3 kwargs enable_thinking false", tp: qwen, kwargs: map[string]any{"enable_thinking": json.RawMessage("false")}, suffix: "<think>\n\n</think>\n\n"},
		{name: "qwen3 effort none", tp: qwen, effort: "none", suffix: "<think>\n\n</think>\n\n"},
		{name: "gpt-oss effort high", tp: oss, effort: "high", thinking: true, contains: "Reasoning: high"},
		{name: "gpt-oss kwargs effort low", tp: oss, kwargs: map[string]any{"reasoning_effort": "low"}, thinking: true, contains: "Reasoning: low"},
		{name: "gpt-oss default medium", tp: oss, thinking: true, contains: "Reasoning: medium"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vars, thinking, err := ReasoningVars(map[string]any{"pad_token": "<pad>"}, c.tp.Reasoning(), c.kwargs, c.effort)
			if err != nil {
				t.Fatal(err)
			}
			if thinking != c.thinking {
				t.Errorf("thinking = %v, want %v", thinking, c.thinking)
			}
			if vars["pad_token"] != "<pad>" {
				t.Errorf("base variable lost: %v", vars)
			}
			out := render(c.tp, vars)
			if !strings.HasSuffix(out, c.suffix) || !strings.Contains(out, c.contains) {
				t.Errorf("render ends %q; want suffix %q and %q inside", tail(out, 60), c.suffix, c.contains)
			}
		})
	}
	if _, _, err := ReasoningVars(nil, qwen.Reasoning(), map[string]any{"enable_thinking": json.RawMessage(`"false"`)}, ""); err == nil || !strings.Contains(err.Error(), "expected boolean, got string") {
		t.Errorf("a string enable_thinking: err = %v", err)
	}
}

func TestParseContinuation(t *testing.T) {
	for in, want := range map[string]Continuation{
		"true": ContinueAuto, "false": ContinueNone, "null": ContinueNone, `"content"`: ContinueContent,
		`"reasoning_content"`: ContinueReasoning, `"other"`: ContinueNone, "1": ContinueNone,
	} {
		if got := ParseContinuation(json.RawMessage(in)); got != want {
			t.Errorf("ParseContinuation(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestPromptContinue(t *testing.T) {
	cases := []struct {
		name      string
		template  string
		last      Message
		mode      Continuation
		resolved  Continuation
		suffix    string // the prompt ends with it
		output    string // the model's continuation
		wantReply Reply
	}{
		{name: "qwen3.5 content", template: "Qwen3.5-4B", last: Message{Role: "assistant", Content: "The answer is"}, mode: ContinueAuto,
			resolved: ContinueContent, suffix: "<|im_start|>assistant\n<think></think>The answer is",
			output: " 4.", wantReply: Reply{Content: " 4."}},
		{name: "qwen3.5 reasoning", template: "Qwen3.5-4B", last: Message{Role: "assistant", Extra: map[string]any{"reasoning_content": "Let me"}}, mode: ContinueAuto,
			resolved: ContinueReasoning, suffix: "<|im_start|>assistant\n<think>Let me",
			output: " think.</think>\n\n4", wantReply: Reply{Reasoning: " think.", Content: "4"}},
		{name: "qwen3 content with reasoning", template: "Qwen-Qwen3-0.6B", last: Message{Role: "assistant", Content: "It is", Extra: map[string]any{"reasoning_content": "Easy."}}, mode: ContinueContent,
			resolved: ContinueContent, suffix: "<|im_start|>assistant\n<think>Easy.</think>It is",
			output: " 4", wantReply: Reply{Content: " 4"}},
		{name: "gpt-oss content", template: "openai-gpt-oss-120b", last: Message{Role: "assistant", Content: "Fo", Extra: map[string]any{"reasoning_content": "Sum."}}, mode: ContinueAuto,
			resolved: ContinueContent, suffix: "<|start|>assistant<|channel|>analysis<|message|>Sum.<|end|><|start|>assistant<|channel|>final<|message|>Fo",
			output: "ur<|return|>", wantReply: Reply{Content: "ur"}},
		{name: "gpt-oss reasoning", template: "openai-gpt-oss-120b", last: Message{Role: "assistant", Extra: map[string]any{"reasoning_content": "Sum"}}, mode: ContinueReasoning,
			resolved: ContinueReasoning, suffix: "<|start|>assistant<|channel|>analysis<|message|>Sum",
			output: "s.<|end|><|start|>assistant<|channel|>final<|message|>4", wantReply: Reply{Reasoning: "s.", Content: "4"}},
		{name: "muse-glimmer content", template: "muse-glimmer", last: Message{Role: "assistant", Content: "Fo", Extra: map[string]any{"reasoning_content": "Sum."}}, mode: ContinueAuto,
			resolved: ContinueContent, suffix: "<|start|>assistant to=self<|message|>Sum.<|eom|><|start|>assistant to=user<|message|>Fo",
			output: "ur<|eot|>", wantReply: Reply{Content: "ur"}},
		{name: "llama 3.1 content", template: "meta-llama-Llama-3.1-8B-Instruct", last: Message{Role: "assistant", Content: "Hello"}, mode: ContinueAuto,
			resolved: ContinueContent, suffix: "<|start_header_id|>assistant<|end_header_id|>\n\nHello",
			output: ", world", wantReply: Reply{Content: ", world"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := loadLlamacppTemplate(t, c.template)
			p := &Prompter{Template: tp}
			text, _, resolved, err := p.PromptContinue([]Message{{Role: "user", Content: "2+2?"}, c.last}, c.mode)
			if err != nil {
				t.Fatal(err)
			}
			if resolved != c.resolved || !strings.HasSuffix(text, c.suffix) {
				t.Fatalf("resolved %q, prompt ends %q; want %q, %q", resolved, tail(text, 80), c.resolved, c.suffix)
			}
			got := ParseReply(ReplyConfig{Syntax: tp.Reasoning(), Prompt: text, Continue: resolved}, c.output)
			if got.Reasoning != c.wantReply.Reasoning || got.Content != c.wantReply.Content {
				t.Fatalf("reply %+v, want %+v", got, c.wantReply)
			}
		})
	}
	p := &Prompter{Template: loadLlamacppTemplate(t, "meta-llama-Llama-3.1-8B-Instruct")}
	for _, bad := range [][]Message{
		{{Role: "user", Content: "Hi"}},
		{{Role: "user", Content: "Hi"}, {Role: "assistant", ToolCalls: []any{map[string]any{"id": "x"}}}},
	} {
		if _, _, _, err := p.PromptContinue(bad, ContinueAuto); !errors.Is(err, ErrContinue) {
			t.Errorf("%v: err = %v, want ErrContinue", bad, err)
		}
	}
	if _, _, _, err := p.PromptContinue([]Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "x"}}, ContinueReasoning); !errors.Is(err, ErrContinue) {
		t.Errorf("reasoning continuation without a reasoning template: err = %v", err)
	}
}

// An assistant turn's reasoning_content reaches gpt-oss's template as the
// "thinking" it reads (its analysis message), even beside tool calls.
func TestHarmonyHistory(t *testing.T) {
	p := &Prompter{Template: loadLlamacppTemplate(t, "openai-gpt-oss-120b")}
	call := json.RawMessage(`{"id":"c1","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}}`)
	msgs := []Message{
		{Role: "user", Content: "Weather?"},
		{Role: "assistant", Content: "Checking.", ToolCalls: []any{call}, Extra: map[string]any{"reasoning_content": "Need the weather."}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "c1"},
	}
	text, _, _, err := p.PromptContinue(msgs, ContinueNone)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "<|channel|>analysis<|message|>Need the weather.<|end|>") {
		t.Errorf("the reasoning is not in the prompt:\n%s", text)
	}
	if _, ok := msgs[1].Extra["thinking"]; ok || msgs[1].Content != "Checking." {
		t.Error("the caller's messages were changed")
	}
}
