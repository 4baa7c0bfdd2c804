package server

// Reasoning output on chat (/v1/chat/completions, Ollama's /api/chat).
//
// A reasoning model's reply is split into its thinking and its answer
// (chat.ReplyStream: the template's ReasoningSyntax, the rendered prompt
// that may have opened the block, the tool-call format), as llama-server
// does:
//
//   - message.reasoning_content beside message.content (streamed: chunks
//     with delta.reasoning_content), Ollama's message.thinking;
//   - --reasoning-format none|auto|deepseek|deepseek-legacy, overridden by
//     a request's reasoning_format: none leaves the thinking, tags
//     included, in content; deepseek-legacy fills reasoning_content and
//     keeps the raw text in content (streamed: content only);
//   - the template sees enable_thinking (true for a reasoning template),
//     the request's chat_template_kwargs, and reasoning_effort ("none":
//     thinking off; else the level, as reasoning_effort and
//     reasoning_strength); Ollama's think maps onto them (false: off;
//     "low"/"medium"/"high": the effort);
//   - continue_final_message (true, "content", "reasoning_content")
//     continues the last assistant message (chat.Prompter.PromptContinue);
//     the reply holds only what the model added;
//   - structured output and forced tool calls constrain the answer, not
//     the thinking: the grammar starts after the reasoning block
//     (engine.ReasoningGate), whose length is bounded by
//     reasoning_budget_tokens / thinking_budget_tokens or --reasoning-budget
//     and by what the answer needs of max_tokens; a constrained reply whose
//     prompt leaves the block to the model (Qwen3) gets it opened, so the
//     model thinks first.
//
// Sinks read replies through the job (the events a new API maps into its
// own shape: Responses' reasoning items, Anthropic's thinking blocks):
//
//   - j.newReply() is a choice's streaming parser: Push(d.Text) for each
//     delta, Finish() at End; each chat.ReplyDelta carries Reasoning,
//     Content and Calls (chat.ToolCallDelta: the first of a call has ID and
//     Name, the next its Arguments), in the order they happened; drop calls
//     with !j.tools.keepCall(index) (parallel_tool_calls false);
//   - j.parseReply(text) is a whole reply (chat.Reply: Reasoning, Content,
//     Calls already filtered), equal to the accumulated stream;
//   - j.finishReason(reason, calls) is "tool_calls" when the reply ended on
//     its own with calls; j.streamsReasoning() is false for deepseek-legacy
//     (the thinking is then streamed inside the content, as llama-server).
//
// With no reasoning and no tools all text is content.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/grammar"
	"nanoserve/tokenizer"
)

// reasoningParams are chat's reasoning fields, as llama-server names them.
type reasoningParams struct {
	ReasoningFormat       *string                    `json:"reasoning_format"`
	ChatTemplateKwargs    map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort       *string                    `json:"reasoning_effort"`
	ContinueFinalMessage  json.RawMessage            `json:"continue_final_message"`
	ReasoningBudgetTokens *int                       `json:"reasoning_budget_tokens"`
	ThinkingBudgetTokens  *int                       `json:"thinking_budget_tokens"`
	AddGenerationPrompt   *bool                      `json:"add_generation_prompt"`
}

// replySetup is how a chat job's replies are read.
type replySetup struct {
	cfg      chat.ReplyConfig // NewID nil: fresh random ids
	thinking bool             // the template was asked to think
	budget   int              // reasoning tokens allowed (< 0: no cap of its own)
	special  bool             // the markers are control tokens: render them
	cont     chat.Continuation
	addGen   bool // add_generation_prompt (default true)
	prefill  bool // a trailing assistant message is continued (Options.NoPrefillAssistant off)
}

// parses reports whether replies need parsing at all.
func (r *replySetup) parses() bool {
	return r != nil && (r.cfg.Syntax.Reasons() || (r.cfg.Tools != "" && r.cfg.Tools != chat.ToolFormatNone))
}

// newReply is a choice's streaming reply parser, never nil (a job with
// nothing to parse gets one that passes the text through as content).
func (j *job) newReply() *chat.ReplyStream {
	if !j.reply.parses() {
		return chat.NewReplyStream(chat.ReplyConfig{})
	}
	return chat.NewReplyStream(j.reply.cfg)
}

// parseReply splits a whole reply; calls beyond the first are dropped when
// parallel calls are off.
func (j *job) parseReply(text string) chat.Reply {
	if !j.reply.parses() {
		return chat.Reply{Content: text}
	}
	r := chat.ParseReply(j.reply.cfg, text)
	n := 0
	for n < len(r.Calls) && j.tools.keepCall(n) {
		n++
	}
	r.Calls = r.Calls[:n]
	return r
}

// streamsReasoning reports whether streamed reasoning goes out as
// reasoning deltas (deepseek-legacy streams it inline in the content).
func (j *job) streamsReasoning() bool {
	return j.reply == nil || j.reply.cfg.Format != chat.ReasoningDeepSeekLegacy
}

// keepCall is keep for a job that may have no tools (a harmony reply may
// call functions anyway: they are answered as they come).
func (t *toolSetup) keepCall(index int) bool { return t == nil || t.keep(index) }

// reasoningSetup reads a chat request's reasoning fields and sets the
// template variables they imply on p (a per-request copy).
func (s *Server) reasoningSetup(rp *reasoningParams, p *chat.Prompter, tools *toolSetup) (*replySetup, *apiError) {
	syn := p.Template.Reasoning()
	format := s.reasoningFormat
	if rp.ReasoningFormat != nil {
		f, err := chat.ParseReasoningFormat(*rp.ReasoningFormat)
		if err != nil {
			return nil, badRequest("reasoning_format", "%s", strings.TrimPrefix(err.Error(), "chat: "))
		}
		format = f
	}
	kwargs := make(map[string]any, len(rp.ChatTemplateKwargs)+1)
	if s.thinking != nil {
		kwargs["enable_thinking"] = *s.thinking // the server's default, under the request's
	}
	for k, v := range rp.ChatTemplateKwargs {
		kwargs[k] = v
	}
	effort := ""
	if rp.ReasoningEffort != nil {
		effort = *rp.ReasoningEffort
	}
	vars, thinking, err := chat.ReasoningVars(p.Options.Extra, syn, kwargs, effort)
	if err != nil {
		return nil, badRequest("chat_template_kwargs", "%s", strings.TrimPrefix(err.Error(), "chat: "))
	}
	p.Options.Extra = vars
	r := &replySetup{thinking: thinking, budget: -1, cont: chat.ParseContinuation(rp.ContinueFinalMessage),
		addGen: rp.AddGenerationPrompt == nil || *rp.AddGenerationPrompt, prefill: !s.noPrefill}
	if r.cont != chat.ContinueNone && r.addGen {
		return nil, badRequest("add_generation_prompt", "cannot set both add_generation_prompt and continue_final_message to true (set add_generation_prompt to false)")
	}
	if s.reasoningBudget != nil {
		r.budget = *s.reasoningBudget
	}
	for _, b := range []*int{rp.ThinkingBudgetTokens, rp.ReasoningBudgetTokens} {
		if b != nil {
			if *b < -1 {
				return nil, badRequest("reasoning_budget_tokens", "reasoning_budget_tokens must be -1 (no cap) or ≥ 0, got %d", *b)
			}
			r.budget = *b
		}
	}
	r.cfg = chat.ReplyConfig{Syntax: syn, Format: format, Tools: chat.ToolFormatNone}
	if tools.parse() {
		r.cfg.Tools = tools.format
	}
	r.special = syn.Harmony || controlText(s.tok, syn.Start) || controlText(s.tok, syn.End)
	return r, nil
}

// controlText reports whether text is (or holds) a control token, which
// the engine shows only when asked to.
func controlText(tok *tokenizer.Tokenizer, text string) bool {
	if text == "" {
		return false
	}
	for _, id := range tok.Encode(text, true) {
		if tok.TokenType(id) == tokenizer.TypeControl {
			return true
		}
	}
	return false
}

// promptTail is as much of a prompt as decides how the reply starts.
const promptTail = 1 << 10

// renderChat renders the prompt (continuing the final message when asked)
// and completes the reply setup with it.
//
// As llama-server, a conversation that ends with an assistant message
// continues it (the prefill heuristic; Options.NoPrefillAssistant turns it
// off), and add_generation_prompt false without a continuation renders no
// assistant opener at all.
func (r *replySetup) render(p *chat.Prompter, msgs []chat.Message) (text string, skipBOS bool, e *apiError) {
	if n := len(msgs); r.cont == chat.ContinueNone && r.prefill && n > 0 && msgs[n-1].Role == "assistant" {
		if n > 1 && msgs[n-2].Role == "assistant" {
			return "", false, badRequest("messages", "cannot have 2 or more assistant messages at the end of the list")
		}
		r.cont, r.addGen = chat.ContinueAuto, false
	}
	var cont chat.Continuation
	var err error
	if r.cont == chat.ContinueNone && !r.addGen {
		opts := p.Options
		text, err = p.Template.Render(msgs, opts)
		skipBOS = chat.StartsWithBOS(text, opts.BOS)
	} else {
		text, skipBOS, cont, err = p.PromptContinue(msgs, r.cont)
	}
	if err != nil {
		var re *chat.RaiseError
		switch {
		case errors.Is(err, chat.ErrContinue):
			return "", false, badRequest("continue_final_message", "%s", strings.TrimPrefix(err.Error(), "chat: "))
		case errors.As(err, &re):
			return "", false, badRequest("messages", "the chat template rejected the messages: %s", re.Message)
		}
		return "", false, badRequest("messages", "rendering the chat template failed: %v", err)
	}
	r.cont, r.cfg.Continue = cont, cont
	r.cfg.Prompt = text[max(0, len(text)-promptTail):]
	return text, skipBOS, nil
}

// gated reports whether the job's answers go through a reasoning gate:
// the template reasons, thinking is on (and not already closed by the
// prompt), and a constraint or a budget applies.
func (j *job) gated(constrained bool) bool {
	r := j.reply
	return r != nil && r.cfg.Syntax.Reasons() && r.thinking && r.cont != chat.ContinueContent && !promptCloses(r.cfg) &&
		(constrained || r.budget >= 0)
}

// openReasoning makes a constrained reply start inside its reasoning block
// when the prompt leaves the block to the model (Qwen3 thinking, gpt-oss):
// the grammar then starts once the thinking is over, instead of at a first
// token that might open the block. (A budget alone opens nothing: the gate
// counts from whatever the model starts with.)
func (j *job) openReasoning() {
	r := j.reply
	if promptOpens(r.cfg) {
		return
	}
	open := r.cfg.Syntax.OpenText()
	if r.cfg.Syntax.Harmony {
		r.cfg.Continue = chat.ContinueReasoning // the reply starts in the analysis body
	}
	for i := range j.reqs {
		j.reqs[i].Prompt += open
	}
	r.cfg.Prompt += open
}

// promptOpens reports whether the reply starts inside the reasoning block.
func promptOpens(cfg chat.ReplyConfig) bool {
	syn := cfg.Syntax
	switch {
	case cfg.Continue == chat.ContinueReasoning:
		return true
	case syn.Harmony:
		return false
	case syn.Start == "":
		return true
	}
	i := strings.LastIndex(cfg.Prompt, syn.Start)
	return i >= 0 && strings.TrimSpace(cfg.Prompt[i+len(syn.Start):]) == ""
}

// promptCloses reports whether the prompt ends right after a closed
// reasoning block (a template with thinking off writes an empty one):
// the reply is the answer.
func promptCloses(cfg chat.ReplyConfig) bool {
	syn := cfg.Syntax
	if syn.Harmony || syn.End == "" {
		return false
	}
	i := strings.LastIndex(cfg.Prompt, syn.End)
	return i >= 0 && i > strings.LastIndex(cfg.Prompt, syn.Start) && strings.TrimSpace(cfg.Prompt[i+len(syn.End):]) == ""
}

// answerProcessor is one sequence's processor for the answer: the
// constraint c (nil: none) behind a reasoning gate when the job is gated,
// else c's grammar processor.
func (j *job) answerProcessor(eng *engine.Engine, c *grammar.Constraint, budget int, stop []int) engine.LogitsProcessor {
	grammarFor := func(left int) (engine.LogitsProcessor, error) {
		return engine.GrammarProcessor(c, left, stop)
	}
	if !j.gated(c != nil) {
		p, err := grammarFor(budget)
		if err != nil {
			return failing{err}
		}
		return p
	}
	o := engine.ReasoningGateOptions{MaxTokens: budget, Budget: j.reply.budget, Close: j.reply.cfg.Syntax.CloseText(), StopIDs: stop}
	if c != nil {
		o.Answer, o.MinAnswer = grammarFor, c.MinTokens()
	}
	// The gate watches for the end of the thinking only: a tool-call marker
	// inside it stays thinking here, so a forced call's grammar (which
	// writes the marker itself) starts at the closing tag.
	wcfg := j.reply.cfg
	wcfg.Tools = chat.ToolFormatNone
	watch := chat.NewReplyStream(wcfg)
	o.Answering = func(piece string) bool {
		watch.Push(piece)
		return watch.Answering()
	}
	g, err := eng.ReasoningGate(o)
	if err != nil {
		return failing{fmt.Errorf("server: %w", err)}
	}
	return g
}

// isLegacy reports whether calls are answered in the legacy function_call
// shape (nil-safe: a job without tools is not legacy).
func (t *toolSetup) isLegacy() bool { return t != nil && t.legacy }

// finishReason is the choice's finish reason given the calls its reply
// held ("tool_calls", or "function_call" for a legacy request).
func (j *job) finishReason(reason string, calls int) string {
	if calls == 0 || reason != "stop" {
		return reason
	}
	if j.tools.isLegacy() {
		return "function_call"
	}
	return "tool_calls"
}

// replyMessage fills a non-streamed chat message from the reply text:
// reasoning_content, content (null when the reply is only calls),
// tool_calls (or the legacy function_call); it returns the finish reason.
func (j *job) replyMessage(msg *replyMessage, text, reason string) string {
	if !j.reply.parses() {
		return reason
	}
	r := j.parseReply(text)
	msg.Content = &r.Content
	if r.Reasoning != "" {
		msg.ReasoningContent = &r.Reasoning
	}
	if len(r.Calls) == 0 {
		return reason
	}
	if r.Content == "" {
		msg.Content = nil
	}
	out := toolCallsOut(r.Calls, j.tools)
	if j.tools.isLegacy() {
		msg.FunctionCall = &out[0].Function
	} else {
		msg.ToolCalls = out
	}
	return j.finishReason(reason, len(r.Calls))
}

// replyStream is choice i's streaming reply parser.
func (o *responder) replyStream(i int) *chat.ReplyStream {
	rs := o.replies[i]
	if rs == nil {
		rs = o.j.newReply()
		o.replies[i] = rs
	}
	return rs
}

// sendReply streams what choice i's reply parser released: reasoning
// (delta.reasoning_content), then content and calls (sendTools).
func (o *responder) sendReply(i int, d chat.ReplyDelta) bool {
	if d.Reasoning != "" && o.j.streamsReasoning() {
		var clp *chatLogprobs
		if lps := o.pending[i]; len(lps) > 0 {
			delete(o.pending, i)
			clp = o.chatLogprobs(lps)
		}
		r := d.Reasoning
		if !o.send(o.chatChunk(i, &chatMessage{ReasoningContent: &r}, clp, nil)) {
			return false
		}
	}
	return o.sendTools(i, d.Content, d.Calls)
}
