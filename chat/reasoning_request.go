package chat

// A request's reasoning switches, as llama-server reads them: the template
// variables they set, and continuing a final assistant message.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ReasoningVars merges a request's reasoning switches into the variables a
// render sees, in llama-server's order:
//
//  1. base (the server's own Options.Extra; copied, never changed);
//  2. enable_thinking = true when the template reasons (llama-server always
//     passes it then; other templates leave it undefined);
//  3. kwargs, the request's chat_template_kwargs, each key as given
//     (enable_thinking there must be a boolean);
//  4. effort, the request's reasoning_effort: "none" turns thinking off
//     (enable_thinking false, reasoning_effort removed); any other
//     non-empty level is set as reasoning_effort and reasoning_strength
//     (the two names templates read it by). A reasoning_effort string in
//     kwargs is mirrored into reasoning_strength the same way.
//
// thinking is the resulting enable_thinking (true when unset).
func ReasoningVars(base map[string]any, syn ReasoningSyntax, kwargs map[string]any, effort string) (vars map[string]any, thinking bool, err error) {
	vars = make(map[string]any, len(base)+len(kwargs)+3)
	for k, v := range base {
		vars[k] = v
	}
	if syn.Reasons() {
		vars["enable_thinking"] = true
	}
	for k, v := range kwargs {
		vars[k] = v
	}
	thinking = true
	if v, ok := vars["enable_thinking"]; ok {
		b, ok := asBool(v)
		if !ok {
			return nil, false, fmt.Errorf("chat: invalid type for \"enable_thinking\" (expected boolean, got %s)", jsonType(v))
		}
		vars["enable_thinking"], thinking = b, b
	}
	if e, ok := vars["reasoning_effort"]; ok && effort == "" {
		if s, ok := asString(e); ok {
			effort = s
		}
	}
	switch effort {
	case "":
	case "none":
		vars["enable_thinking"], thinking = false, false
		delete(vars, "reasoning_effort")
	default:
		vars["reasoning_effort"] = effort
		vars["reasoning_strength"] = effort
	}
	return vars, thinking, nil
}

func asBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case json.RawMessage:
		var b bool
		err := json.Unmarshal(x, &b)
		return b, err == nil
	}
	return false, false
}

func asString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.RawMessage:
		var s string
		err := json.Unmarshal(x, &s)
		return s, err == nil
	}
	return "", false
}

func jsonType(v any) string {
	if r, ok := v.(json.RawMessage); ok {
		switch t := strings.TrimSpace(string(r)); {
		case t == "":
			return "nothing"
		case t[0] == '"':
			return "string"
		case t[0] == '{':
			return "object"
		case t[0] == '[':
			return "array"
		case t == "null":
			return "null"
		default:
			return "number"
		}
	}
	return fmt.Sprintf("%T", v)
}

// Continuation says which part of a final assistant message the model
// continues (the request's continue_final_message).
type Continuation string

const (
	ContinueNone      Continuation = ""                  // no continuation: a new assistant turn
	ContinueAuto      Continuation = "auto"              // reasoning if the message has only reasoning, else content
	ContinueContent   Continuation = "content"           // the answer
	ContinueReasoning Continuation = "reasoning_content" // the thinking
)

// ParseContinuation reads continue_final_message as llama-server does:
// true is auto, "content" and "reasoning_content" name the part, anything
// else (false, null, absent) is no continuation.
func ParseContinuation(raw json.RawMessage) Continuation {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		if b {
			return ContinueAuto
		}
		return ContinueNone
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch c := Continuation(s); c {
		case ContinueContent, ContinueReasoning:
			return c
		}
	}
	return ContinueNone
}

// ErrContinue is wrapped by PromptContinue's refusals.
var ErrContinue = errors.New("chat: cannot continue the final message")

// PromptContinue renders msgs so that the model continues the final
// assistant message instead of starting a new turn, as llama-server builds
// it: the conversation before that message, then the assistant turn's
// opener (the generation prompt up to its reasoning tag), then — for a
// template that reasons — the reasoning block holding the message's
// reasoning_content (closed when the content is continued), then the
// message's content. The resolved part is returned (auto becomes content,
// or reasoning when the message has reasoning and no content); pass it as
// ReplyConfig.Continue so the reply is read from the right state.
func (p *Prompter) PromptContinue(msgs []Message, mode Continuation) (text string, skipBOS bool, resolved Continuation, err error) {
	msgs = p.Template.Reasoning().history(msgs)
	if mode == ContinueNone {
		text, skipBOS, err = p.Prompt(msgs)
		return text, skipBOS, ContinueNone, err
	}
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
		return "", false, "", fmt.Errorf("%w: the last message is not an assistant message", ErrContinue)
	}
	last := msgs[len(msgs)-1]
	if len(last.ToolCalls) > 0 {
		return "", false, "", fmt.Errorf("%w: it contains tool calls", ErrContinue)
	}
	reasoning, _ := asString(last.Extra["reasoning_content"])
	if mode == ContinueAuto {
		mode = ContinueContent
		if reasoning != "" && last.Content == "" {
			mode = ContinueReasoning
		}
	}
	opts := p.Options
	opts.AddGenerationPrompt = false
	before, err := p.Template.Render(msgs[:len(msgs)-1], opts)
	if err != nil {
		return "", false, "", err
	}
	opts.AddGenerationPrompt = true
	withGen, err := p.Template.Render(msgs[:len(msgs)-1], opts)
	if err != nil {
		return "", false, "", err
	}
	i := 0
	for i < len(before) && i < len(withGen) && before[i] == withGen[i] {
		i++
	}
	gen := withGen[i:]
	syn := p.Template.Reasoning()
	var b strings.Builder
	b.WriteString(withGen[:i])
	switch {
	case syn.Harmony:
		b.WriteString(harmonyStart + "assistant" + syn.OpenText() + reasoning)
		if mode == ContinueContent {
			b.WriteString(syn.CloseText() + last.Content)
		}
	case syn.Reasons():
		if j := strings.Index(gen, syn.Start); syn.Start != "" && j >= 0 {
			gen = gen[:j]
		} else if k := strings.Index(gen, syn.End); k >= 0 {
			gen = gen[:k] // a prompt that writes only the closing tag (thinking off)
		}
		b.WriteString(gen + syn.Start + reasoning)
		if mode == ContinueContent {
			b.WriteString(syn.End + last.Content)
		}
	default:
		if mode == ContinueReasoning {
			return "", false, "", fmt.Errorf("%w: the template has no reasoning block to continue", ErrContinue)
		}
		b.WriteString(gen + last.Content)
	}
	text = b.String()
	return text, StartsWithBOS(text, p.Options.BOS), mode, nil
}

// history adapts a conversation's reasoning to the template: gpt-oss's
// reads an assistant turn's thinking from "thinking", not
// "reasoning_content", and refuses a turn with tool calls that has both
// content and thinking (the content is dropped there, as llama.cpp does).
// Other syntaxes take msgs as they are.
func (s ReasoningSyntax) history(msgs []Message) []Message {
	if !s.Harmony {
		return msgs
	}
	var out []Message
	for i, m := range msgs {
		r, ok := m.Extra["reasoning_content"]
		if _, has := m.Extra["thinking"]; !ok || has || m.Role != "assistant" {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		m.Extra = maps.Clone(m.Extra)
		m.Extra["thinking"] = r
		if len(m.ToolCalls) > 0 {
			m.Content = ""
		}
		out[i] = m
	}
	if out == nil {
		return msgs
	}
	return out
}
