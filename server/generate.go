package server

// The generation endpoints: request → job (validated policy and prompt) →
// admission → engine stream → one JSON response or SSE events.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// job is one validated generation request.
type job struct {
	chat         bool
	model        string
	req          engine.Request
	stream       bool
	includeUsage bool
	logprobs     int // alternatives per token; -1: no logprobs
	start        time.Time
	tools        *toolSetup // chat with tools; nil: none
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var cr completionRequest
	if e := s.decodeJSON(w, r, &cr); e != nil {
		writeError(w, e)
		return
	}
	j, e := s.completionJob(&cr)
	if e != nil {
		writeError(w, e)
		return
	}
	j.start = start
	s.generate(w, r, j)
}

func (s *Server) completionJob(cr *completionRequest) (*job, *apiError) {
	model, e := s.resolveModel(cr.Model)
	if e != nil {
		return nil, e
	}
	switch {
	case cr.Echo != nil && *cr.Echo:
		return nil, badRequest("echo", "echo is not supported")
	case cr.Suffix != nil && *cr.Suffix != "":
		return nil, badRequest("suffix", "suffix is not supported")
	case cr.BestOf != nil && *cr.BestOf != 1:
		return nil, badRequest("best_of", "best_of must be 1, got %d", *cr.BestOf)
	}
	vocab := s.tok.Size()
	defMax := s.defaults.MaxTokens
	if defMax == 0 {
		defMax = 16 // the OpenAI completions default
	}
	pol, e := cr.policy(s.defaults, defMax, vocab)
	if e != nil {
		return nil, e
	}
	lp := -1
	if cr.Logprobs != nil {
		if *cr.Logprobs < 0 || *cr.Logprobs > sample.MaxLogprobs {
			return nil, badRequest("logprobs", "logprobs must be in [0, %d], got %d", sample.MaxLogprobs, *cr.Logprobs)
		}
		lp = *cr.Logprobs
		pol.Logprobs = &lp
	}
	if e := validatePolicy(&pol); e != nil {
		return nil, e
	}
	text, ids, e := completionPrompt(cr.Prompt, vocab)
	if e != nil {
		return nil, e
	}
	healing := cr.TokenHealing != nil && *cr.TokenHealing
	special := cr.ParseSpecial == nil || *cr.ParseSpecial
	return &job{model: model, req: engine.Request{Prompt: text, PromptIDs: ids, ParseSpecial: special, Policy: pol, TokenHealing: healing},
		stream: cr.Stream != nil && *cr.Stream, includeUsage: includeUsage(&cr.commonParams), logprobs: lp}, nil
}

func includeUsage(p *commonParams) bool {
	return p.StreamOptions != nil && p.StreamOptions.IncludeUsage != nil && *p.StreamOptions.IncludeUsage
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var cr chatRequest
	if e := s.decodeJSON(w, r, &cr); e != nil {
		writeError(w, e)
		return
	}
	j, e := s.chatJob(&cr)
	if e != nil {
		writeError(w, e)
		return
	}
	j.start = start
	s.generate(w, r, j)
}

func (s *Server) chatJob(cr *chatRequest) (*job, *apiError) {
	model, e := s.resolveModel(cr.Model)
	if e != nil {
		return nil, e
	}
	if s.tmpl == nil {
		return nil, badRequest("messages", "the model %q has no chat template, so /v1/chat/completions is unavailable "+
			"(start the server with --chat-template, or use /v1/completions)", model)
	}
	tools, e := s.chatTools(cr)
	if e != nil {
		return nil, e
	}
	if rf := cr.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return nil, badRequest("response_format", "response_format type %q is not supported (only \"text\")", rf.Type)
	}
	pol, e := cr.policy(s.defaults, s.defaults.MaxTokens, s.tok.Size())
	if e != nil {
		return nil, e
	}
	lp := -1
	if cr.Logprobs != nil && *cr.Logprobs {
		lp = 0
	}
	if cr.TopLogprobs != nil {
		switch {
		case lp < 0:
			return nil, badRequest("top_logprobs", "top_logprobs requires logprobs: true")
		case *cr.TopLogprobs < 0 || *cr.TopLogprobs > sample.MaxLogprobs:
			return nil, badRequest("top_logprobs", "top_logprobs must be in [0, %d], got %d", sample.MaxLogprobs, *cr.TopLogprobs)
		}
		lp = *cr.TopLogprobs
	}
	if lp >= 0 {
		pol.Logprobs = &lp
	}
	if e := validatePolicy(&pol); e != nil {
		return nil, e
	}
	msgs, e := chatMessages(cr.Messages, s.toolFormat)
	if e != nil {
		return nil, e
	}
	opts := s.tmplOpts
	opts.AddGenerationPrompt = true
	if tools != nil {
		opts.Tools = tools.tools
	}
	text, err := s.tmpl.Render(msgs, opts)
	if err != nil {
		var re *chat.RaiseError
		if errors.As(err, &re) {
			return nil, badRequest("messages", "the chat template rejected the messages: %s", re.Message)
		}
		return nil, badRequest("messages", "rendering the chat template failed: %v", err)
	}
	return &job{chat: true, model: model, req: engine.Request{Prompt: text, ParseSpecial: true,
		NoBOS: chat.StartsWithBOS(text, s.tmplOpts.BOS), Policy: pol},
		stream: cr.Stream != nil && *cr.Stream, includeUsage: includeUsage(&cr.commonParams), logprobs: lp, tools: tools}, nil
}

// overloaded is the 429 a full server answers.
func overloaded(msg string) *apiError {
	return &apiError{status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: strp("server_overloaded"),
		Message: msg, retryAfter: 1}
}

// generate admits, tokenizes and runs a job, answering with one JSON
// object or an SSE stream.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, j *job) {
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		default:
			s.m.add(&s.m.rejected, 1)
			writeError(w, overloaded(fmt.Sprintf("the server is full (%d requests running or waiting); retry later", cap(s.slots))))
			return
		}
	}
	s.m.add(&s.m.running, 1)
	defer s.m.add(&s.m.running, -1)

	// Tokenize here so a prompt that cannot fit gets its counts in a 400
	// and the engine does not tokenize again.
	ids, err := s.eng.Encode(&j.req)
	if err != nil {
		writeError(w, badRequest("prompt", "%s", strings.TrimPrefix(err.Error(), "engine: ")))
		return
	}
	if n, ctx := len(ids), s.eng.CtxSize(); n > ctx {
		param, what := "prompt", "the prompt has"
		if j.chat {
			param, what = "messages", "the messages (as the chat template renders them) have"
		}
		e := badRequest(param, "this model's maximum context length is %d tokens, but %s %d tokens; shorten it by %d tokens", ctx, what, n, n-ctx)
		e.Code = strp("context_length_exceeded")
		writeError(w, e)
		return
	}
	j.req.PromptIDs = ids

	out := &responder{s: s, w: w, ctx: r.Context(), j: j, id: newID("cmpl-"), created: time.Now().Unix()}
	if j.chat {
		out.id = newID("chatcmpl-")
	}
	if j.tools.parse() {
		out.calls = chat.NewToolStream(j.tools.format, nil)
	}
	var res *engine.Result
	var last time.Time
	gen := s.eng.GenerateStream
	if s.gen != nil {
		gen = s.gen
	}
	for tok, err := range gen(r.Context(), j.req, &res) {
		if err != nil {
			if res == nil { // the request could not start
				writeError(w, s.startError(r.Context(), err))
				return
			}
			continue
		}
		now := time.Now()
		if last.IsZero() {
			s.m.observe(&s.m.ttft, now.Sub(j.start))
		} else if !tok.Stop {
			s.m.observe(&s.m.itl, now.Sub(last))
		}
		last = now
		if s.onToken != nil {
			s.onToken()
		}
		if r.Context().Err() != nil || j.stream && !out.token(tok) {
			break // the client is gone: breaking cancels the generation
		}
	}
	if res == nil {
		writeError(w, &apiError{status: http.StatusInternalServerError, Type: "server_error", Message: "the engine returned no result"})
		return
	}
	s.m.generation(res.FinishReason, res.Usage.PromptTokens, res.Usage.CompletionTokens, time.Since(j.start))
	if res.FinishReason == engine.FinishError {
		s.logger(r.Context()).Error("server: generation failed", "error", res.Err, "tokens", len(res.IDs))
	}
	if j.stream {
		out.end(res)
	} else {
		out.whole(res)
	}
}

// startError maps an error from a request that could not start.
func (s *Server) startError(ctx context.Context, err error) *apiError {
	if e := cutError(ctx); e != nil {
		return e
	}
	var fe *sample.FieldError
	switch {
	case isOverloaded(err):
		s.m.add(&s.m.rejected, 1)
		return overloaded("the engine's queue is full; retry later")
	case errors.Is(err, engine.ErrClosed):
		return &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Code: strp("shutting_down"),
			Message: "the engine is shut down", retryAfter: 1}
	case errors.Is(err, engine.ErrPromptTooLong):
		e := badRequest("prompt", "%s", strings.TrimPrefix(err.Error(), "engine: "))
		e.Code = strp("context_length_exceeded")
		return e
	case errors.As(err, &fe):
		return badRequest(fe.Field, "%s %s", fe.Field, fe.Msg)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Message: "the request was cancelled before it started"}
	}
	return badRequest("", "%s", err.Error())
}

// responder writes one job's response.
type responder struct {
	s       *Server
	w       http.ResponseWriter
	ctx     context.Context // the request's: cutError tells a server cut from a client gone
	j       *job
	id      string
	created int64
	started bool // SSE headers written
	failed  bool // a write failed (client gone)
	pending []engine.Token
	offset  int              // completions text_offset of the next token
	calls   *chat.ToolStream // reads tool calls out of a streamed chat reply (nil: no tools)
}

// startStream writes the SSE headers (and the chat role chunk) once.
func (o *responder) startStream() bool {
	if o.started {
		return !o.failed
	}
	o.started = true
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	o.w.WriteHeader(http.StatusOK)
	if o.j.chat {
		empty := ""
		return o.send(o.chatChunk(&chatMessage{Role: "assistant", Content: &empty}, nil, nil))
	}
	return o.flush()
}

func (o *responder) flush() bool {
	if err := http.NewResponseController(o.w).Flush(); err != nil {
		o.failed = true
	}
	return !o.failed
}

// send writes one SSE event "data: JSON\n\n" and flushes it.
func (o *responder) send(v any) bool {
	if o.failed {
		return false
	}
	b := append([]byte("data: "), marshal(v)...)
	b = append(b, "\n\n"...)
	if _, err := o.w.Write(b); err != nil {
		o.failed = true
		return false
	}
	return o.flush()
}

// token streams one engine token; false when the client is gone.
func (o *responder) token(t engine.Token) bool {
	if !o.startStream() {
		return false
	}
	if o.j.logprobs >= 0 && !t.Stop {
		o.pending = append(o.pending, t)
	}
	if t.Text == "" {
		return true // held back (partial UTF-8 or a possible stop string)
	}
	lps := o.pending
	o.pending = nil
	if o.calls != nil {
		o.pending = lps // sent with the next chunk, whatever it carries
		return o.sendTools(o.calls.Push(t.Text))
	}
	if o.j.chat {
		text := t.Text
		return o.send(o.chatChunk(&chatMessage{Content: &text}, o.chatLogprobs(lps), nil))
	}
	return o.send(o.completionChunk(t.Text, o.completionLogprobs(lps), nil))
}

// end closes a stream: the finish chunk, the usage chunk, [DONE].
func (o *responder) end(res *engine.Result) {
	if res.FinishReason == engine.FinishCancelled {
		// The server cut it (drain timeout, per-request deadline): say so
		// and end the stream properly. Else the client went away.
		if e := cutError(o.ctx); e != nil {
			if !o.started {
				writeError(o.w, e)
				return
			}
			o.send(errorBody(e))
			o.sendDone()
		}
		return
	}
	if !o.startStream() {
		return
	}
	if res.FinishReason == engine.FinishError {
		msg := "generation failed"
		if res.Err != nil {
			msg += ": " + res.Err.Error()
		}
		o.send(errorBody(&apiError{status: 500, Type: "server_error", Message: msg}))
		o.sendDone()
		return
	}
	reason := finishReason(res)
	if o.calls != nil {
		o.sendTools(o.calls.Finish())
		reason = o.j.tools.finishReason(reason, o.calls.Calls())
	}
	var clp *chatLogprobs
	var tlp *completionLogprobs
	if len(o.pending) > 0 { // logprobs of tokens whose text never showed
		clp, tlp = o.chatLogprobs(o.pending), o.completionLogprobs(o.pending)
		o.pending = nil
	}
	if o.j.chat {
		o.send(o.chatChunk(&chatMessage{}, clp, &reason))
	} else {
		o.send(o.completionChunk("", tlp, &reason))
	}
	if o.j.includeUsage {
		u := usageOf(res)
		if o.j.chat {
			o.send(chatResponse{ID: o.id, Object: "chat.completion.chunk", Created: o.created, Model: o.j.model, Choices: []chatChoice{}, Usage: &u})
		} else {
			o.send(completionResponse{ID: o.id, Object: "text_completion", Created: o.created, Model: o.j.model, Choices: []completionChoice{}, Usage: &u})
		}
	}
	o.sendDone()
}

func (o *responder) sendDone() {
	if !o.failed {
		if _, err := io.WriteString(o.w, "data: [DONE]\n\n"); err == nil {
			o.flush()
		}
	}
}

// whole writes the non-streamed response.
func (o *responder) whole(res *engine.Result) {
	if e := cutError(o.ctx); res.FinishReason == engine.FinishCancelled && e != nil {
		writeError(o.w, e)
		return
	}
	if res.FinishReason == engine.FinishError {
		msg := "generation failed"
		if res.Err != nil {
			msg += ": " + res.Err.Error()
		}
		writeError(o.w, &apiError{status: http.StatusInternalServerError, Type: "server_error", Message: msg})
		return
	}
	reason := finishReason(res)
	u := usageOf(res)
	var lps []engine.Token
	for _, t := range res.Logprobs {
		if !t.Stop {
			lps = append(lps, t)
		}
	}
	if o.j.chat {
		text := res.Text
		msg := &replyMessage{Role: "assistant", Content: &text}
		if o.j.tools.parse() {
			content, calls := chat.ParseToolCalls(o.j.tools.format, res.Text, nil)
			msg.Content = &content
			if len(calls) > 0 {
				if content == "" {
					msg.Content = nil
				}
				out := toolCallsOut(calls, o.j.tools)
				if o.j.tools.legacy {
					msg.FunctionCall = &out[0].Function
				} else {
					msg.ToolCalls = out
				}
				reason = o.j.tools.finishReason(reason, len(calls))
			}
		}
		writeJSON(o.w, http.StatusOK, chatResponse{ID: o.id, Object: "chat.completion", Created: o.created, Model: o.j.model,
			Choices: []chatChoice{{Message: msg, Logprobs: o.chatLogprobs(lps), FinishReason: &reason}},
			Usage:   &u})
		return
	}
	writeJSON(o.w, http.StatusOK, completionResponse{ID: o.id, Object: "text_completion", Created: o.created, Model: o.j.model,
		Choices: []completionChoice{{Text: res.Text, Logprobs: o.completionLogprobs(lps), FinishReason: &reason}},
		Usage:   &u})
}

// finishReason maps the engine's reason to OpenAI's: stop or length (a
// generation the server cut answers with an error instead, see cutError).
func finishReason(res *engine.Result) string {
	if res.FinishReason == engine.FinishLength {
		return "length"
	}
	return "stop"
}

func usageOf(res *engine.Result) usage {
	return usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens,
		TotalTokens: res.Usage.PromptTokens + res.Usage.CompletionTokens}
}

func (o *responder) chatChunk(delta *chatMessage, lp *chatLogprobs, finish *string) chatResponse {
	return chatResponse{ID: o.id, Object: "chat.completion.chunk", Created: o.created, Model: o.j.model,
		Choices: []chatChoice{{Delta: delta, Logprobs: lp, FinishReason: finish}}}
}

func (o *responder) completionChunk(text string, lp *completionLogprobs, finish *string) completionResponse {
	return completionResponse{ID: o.id, Object: "text_completion", Created: o.created, Model: o.j.model,
		Choices: []completionChoice{{Text: text, Logprobs: lp, FinishReason: finish}}}
}

// tokenText is the text of one token as logprobs report it (the piece with
// its leading space).
func (o *responder) tokenText(id int) string {
	return o.s.tok.DecodeWith([]int{id}, tokenizer.DecodeOptions{Continuation: true, Special: tokenizer.SpecialRender})
}

// lp makes a logprob JSON-safe (a -Inf logprob becomes the float32 minimum).
func lp(v float32) float32 {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), -1) {
		return -math.MaxFloat32
	}
	return v
}

func byteInts(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

func (o *responder) chatLogprobs(toks []engine.Token) *chatLogprobs {
	if o.j.logprobs < 0 {
		return nil
	}
	out := &chatLogprobs{Content: make([]chatTokenLogprob, 0, len(toks))}
	for _, t := range toks {
		text := o.tokenText(t.ID)
		e := chatTokenLogprob{Token: text, Logprob: lp(t.Logprob), Bytes: byteInts(text), TopLogprobs: []chatTopLogprob{}}
		for _, a := range t.Top {
			at := o.tokenText(a.ID)
			e.TopLogprobs = append(e.TopLogprobs, chatTopLogprob{Token: at, Logprob: lp(a.Logprob), Bytes: byteInts(at)})
		}
		out.Content = append(out.Content, e)
	}
	return out
}

func (o *responder) completionLogprobs(toks []engine.Token) *completionLogprobs {
	if o.j.logprobs < 0 {
		return nil
	}
	out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	for _, t := range toks {
		text := o.tokenText(t.ID)
		out.Tokens = append(out.Tokens, text)
		out.TokenLogprobs = append(out.TokenLogprobs, lp(t.Logprob))
		top := make(map[string]float32, len(t.Top))
		for _, a := range t.Top {
			at := o.tokenText(a.ID)
			if _, dup := top[at]; !dup {
				top[at] = lp(a.Logprob)
			}
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, o.offset)
		o.offset += len(text)
	}
	return out
}
