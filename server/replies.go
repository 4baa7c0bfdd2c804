package server

// One chat reply, told as events: the shared run of the APIs that are a
// decoder onto chatJob plus an encoder of their own (the Responses API,
// responses.go; Anthropic's Messages API, anthropic.go).
//
// A replyEncoder is a pure state machine: it is told the reply's parts in
// order — reasoning text, content text, tool-call deltas (chat.ToolStream's, each call
// complete when it arrives), the end — and returns the SSE events each
// part makes; after the end, whole() is the non-streamed body, built from
// the same parts, so a streamed reply accumulates to exactly the
// non-streamed one. replySink, the pipeline's sink for these APIs, feeds
// it: streamed, token by token through the tool-call parser;
// non-streamed, the final text at once.

import (
	"net/http"
	"strings"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/tokenizer"
)

// sseEvent is one server-sent event: "event: NAME\ndata: JSON\n\n".
type sseEvent struct {
	name string
	data any
}

// replyEnd is how a reply ended, in the chat API's words.
type replyEnd struct {
	reason  string // "stop", "length" or "tool_calls"
	stopSeq string // the stop string that ended it ("" when none did)
	usage   usage
	cached  int // prompt tokens the cache held
	// reasoningTokens is what the model spent thinking (reasoningCount).
	reasoningTokens int
}

// replyEncoder turns one reply's parts into an API's events and body.
type replyEncoder interface {
	start(promptTokens int) []sseEvent
	reasoning(text string) []sseEvent
	content(text string) []sseEvent
	call(d chat.ToolCallDelta) []sseEvent
	end(e replyEnd) []sseEvent
	whole() any                    // the non-streamed body, after end
	failed(e *apiError) []sseEvent // a stream's last events when the generation failed mid-way
}

// replyParser reads a reply through the job's parser (j.newReply:
// reasoning, content and tool calls, reasoning.go) as it streams.
type replyParser struct {
	j  *job
	rs *chat.ReplyStream
	// reasoning: the thinking is its own part (false for deepseek-legacy,
	// whose content keeps the raw text, thinking included).
	reasoning bool
}

func newReplyParser(j *job) *replyParser {
	return &replyParser{j: j, rs: j.newReply(), reasoning: j.streamsReasoning()}
}

// feed gives the encoder a piece of text through the parser (last: the
// end of the reply, whatever the parser still holds), in the order the
// parts happened: reasoning, content, calls (those the job keeps).
func (p *replyParser) feed(enc replyEncoder, text string, last bool) []sseEvent {
	var d chat.ReplyDelta
	if last {
		d = p.rs.Finish()
	} else {
		d = p.rs.Push(text)
	}
	var evs []sseEvent
	if d.Reasoning != "" && p.reasoning {
		evs = append(evs, enc.reasoning(d.Reasoning)...)
	}
	if d.Content != "" {
		evs = append(evs, enc.content(d.Content)...)
	}
	for _, c := range d.Calls {
		if p.j.tools.keepCall(c.Index) {
			evs = append(evs, enc.call(c)...)
		}
	}
	return evs
}

// calls is the number of calls the reply made.
func (p *replyParser) calls() int { return p.rs.Calls() }

// reasoningCount counts a reply's reasoning tokens as they land: when the
// reply reasons, the tokens it generated before its answer (content or a
// call) began, markers and the whitespace around them included, or all
// of them when no answer came; 0 when it did not reason. It reads the
// tokens through a parser of its own, so a streamed reply and a whole
// one count the same.
type reasoningCount struct {
	rs       *chat.ReplyStream // nil: the job cannot reason
	fed      int               // tokens pushed so far
	reasoned bool
	answered bool
	n        int
}

func newReasoningCount(j *job) *reasoningCount {
	c := &reasoningCount{}
	if j.reply.parses() && j.reply.cfg.Syntax.Reasons() {
		c.rs = j.newReply()
	}
	return c
}

// push reads one landed piece of text and the tokens it completes.
func (c *reasoningCount) push(text string, tokens int) {
	if c.rs == nil || c.answered {
		return
	}
	c.see(c.rs.Push(text))
	if !c.answered {
		c.fed += tokens
	}
}

func (c *reasoningCount) see(d chat.ReplyDelta) {
	if d.Reasoning != "" {
		c.reasoned = true
	}
	if d.Content != "" || len(d.Calls) > 0 {
		c.answered = true
	}
}

// count is the reply's reasoning tokens, once every token has landed.
func (c *reasoningCount) count() int {
	if c.rs == nil {
		return 0
	}
	if !c.answered {
		c.see(c.rs.Finish())
	}
	if !c.reasoned {
		return 0
	}
	return c.fed
}

// matchedStop is the stop string that ended res, or "": the text its ids
// decode to holds the matched string right after the reply's text (the
// engine cuts the text at the earliest match), so the earliest of the
// request's strings found there is the one.
func matchedStop(tok *tokenizer.Tokenizer, res *engine.Result, stops []string) string {
	if res.FinishReason != engine.FinishStop || len(stops) == 0 || len(res.IDs) == 0 {
		return ""
	}
	full := tok.DecodeWith(res.IDs, tokenizer.DecodeOptions{Special: tokenizer.SpecialSkip})
	best, at := "", -1
	for _, s := range stops {
		if s == "" {
			continue
		}
		// The decoded text may lose or gain a leading space against the
		// streamed one: look from a little before the reply's end.
		from := max(len(res.Text)-1, 0)
		if from > len(full) {
			continue
		}
		if i := strings.Index(full[from:], s); i >= 0 && (at < 0 || i < at) {
			best, at = s, i
		}
	}
	return best
}

// replySink is the pipeline's sink (pipeline.go) for an API that is an
// encoder over a one-choice chat job: streamed, each landed piece of text
// goes through the tool-call parser into the encoder and its events out
// as SSE; whole, the final text does at the end, and the body is
// enc.whole(). promptTokens is what start() reports when streaming (the
// engine counts the prompt only at the end; 0: unknown).
type replySink struct {
	s            *Server
	w            http.ResponseWriter
	j            *job
	stream       bool
	enc          replyEncoder
	parser       *replyParser
	promptTokens int
	thought      *reasoningCount
	sse          sseWriter
	started      bool
	rename       func(*apiError) *apiError // the API's names for chat's fields in errors (nil: as they are)
}

func newReplySink(s *Server, w http.ResponseWriter, j *job, stream bool, enc replyEncoder) *replySink {
	return &replySink{s: s, w: w, j: j, stream: stream, enc: enc, parser: newReplyParser(j), thought: newReasoningCount(j), sse: sseWriter{w: w}}
}

func (o *replySink) Fail(e *apiError) {
	if o.rename != nil {
		e = o.rename(e)
	}
	writeError(o.w, e)
}

// begin sends the stream's opening events once.
func (o *replySink) begin() bool {
	if o.started {
		return !o.sse.failed
	}
	o.started = true
	return o.sse.send(o.enc.start(o.promptTokens))
}

func (o *replySink) Delta(i int, d delta) bool {
	if d.Text != "" {
		o.thought.push(d.Text, len(d.Tokens))
	}
	if !o.stream {
		return true
	}
	if !o.begin() {
		return false
	}
	if d.Text == "" {
		return true
	}
	return o.sse.send(o.withTimings(o.parser.feed(o.enc, d.Text, false), o.j.timingsNow(i)))
}

// withTimings puts tm (nil: nothing) on the last of evs, as llama-server
// puts its timings on the last event of a step (event data that is an
// object of fields only).
func (o *replySink) withTimings(evs []sseEvent, tm *nativeTimings) []sseEvent {
	if tm == nil || len(evs) == 0 {
		return evs
	}
	if m, ok := evs[len(evs)-1].data.(map[string]any); ok {
		m["timings"] = tm
	}
	return evs
}

// progressEncoder is an encoder with a prompt-progress event
// (return_progress): the Responses API's response.in_progress.
type progressEncoder interface {
	progress(p *promptProgress) sseEvent
}

// Progress streams a prompt-progress event when the API has one.
func (o *replySink) Progress(p engine.PromptProgress) bool {
	pe, ok := o.enc.(progressEncoder)
	if !o.stream || !ok {
		return true
	}
	if !o.begin() {
		return false
	}
	return o.sse.send(o.withTimings([]sseEvent{pe.progress(progressOf(p))}, o.j.progressTimings(p)))
}

func (o *replySink) End(out *outcome) {
	res := out.Results[0]
	if e, ended := out.single(); ended {
		if e == nil {
			return // the client went away
		}
		if o.stream && o.begin() {
			o.sse.send(o.enc.failed(e))
		} else if !o.stream {
			writeError(o.w, e)
		}
		return
	}
	if o.stream {
		if !o.begin() {
			return
		}
	} else {
		// The whole reply at once: the same parts a stream gives.
		o.enc.start(res.Usage.PromptTokens)
		o.parser.feed(o.enc, res.Text, false)
	}
	evs := o.parser.feed(o.enc, "", true)
	reason := o.j.finishReason(finishReason(res), o.parser.calls())
	end := replyEnd{reason: reason, stopSeq: matchedStop(o.s.tok, res, o.j.reqs[0].Policy.Stop),
		usage:  usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens, TotalTokens: res.Usage.PromptTokens + res.Usage.CompletionTokens},
		cached: res.Usage.CachedTokens, reasoningTokens: min(o.thought.count(), res.Usage.CompletionTokens)}
	evs = append(evs, o.enc.end(end)...)
	if o.stream {
		if _, ok := o.enc.(progressEncoder); ok {
			// llama-server's Responses stream ends with the final timings.
			evs = o.withTimings(evs, outcomeTimings(out))
		}
		o.sse.send(evs)
		return
	}
	writeJSON(o.w, http.StatusOK, o.enc.whole())
}

// sseWriter writes named SSE events, the headers before the first.
type sseWriter struct {
	w       http.ResponseWriter
	started bool
	failed  bool
}

func (o *sseWriter) send(evs []sseEvent) bool {
	if o.failed {
		return false
	}
	if !o.started {
		o.started = true
		h := o.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		h.Set("X-Accel-Buffering", "no")
		o.w.WriteHeader(http.StatusOK)
	}
	if len(evs) == 0 {
		return true
	}
	var b []byte
	for _, ev := range evs {
		b = append(b, "event: "...)
		b = append(b, ev.name...)
		b = append(b, "\ndata: "...)
		b = append(b, marshal(ev.data)...)
		b = append(b, "\n\n"...)
	}
	if _, err := o.w.Write(b); err != nil {
		o.failed = true
		return false
	}
	if err := http.NewResponseController(o.w).Flush(); err != nil {
		o.failed = true
	}
	return !o.failed
}
