package server

// The generation endpoints: request → job (validated policy and prompt) →
// admission → engine stream → one JSON response or SSE events.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"sync"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// job is one validated generation request: one engine request per prompt
// (completions may batch prompts), each with n choices; choice j of prompt
// i is index i·n + j.
type job struct {
	chat         bool
	model        string
	reqs         []engine.Request
	n            int
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
	cr.ctx = r.Context()
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
	case cr.BestOf != nil && *cr.BestOf != cr.choices():
		return nil, badRequest("best_of", "best_of must equal n (%d), got %d: ranking more samples than are returned is not supported", cr.choices(), *cr.BestOf)
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
	prompts, e := completionPrompts(cr.Prompt, vocab)
	if e != nil {
		return nil, e
	}
	if cr.Suffix != nil && *cr.Suffix != "" {
		// Fill in the middle: the prompt is the prefix (infill.go).
		if len(prompts) != 1 || prompts[0].ids != nil {
			return nil, badRequest("suffix", "suffix needs a single string prompt (the text before the gap)")
		}
		ids, e := s.fimPrompt(prompts[0].text, *cr.Suffix, pol.MaxTokens)
		if e != nil {
			return nil, e
		}
		prompts[0].ids = ids
	}
	fim := cr.Suffix != nil && *cr.Suffix != ""
	// The server's completion defaults (the built-in model: token healing,
	// no empty output) yield to an output constraint, which decides the
	// first token and where the output ends; an explicit token_healing
	// with a constraint is still refused (applyConstraints).
	healing, nonEmpty := s.heal, s.nonEmpty && !fim
	if cs, _ := cr.constraintParams.constraint(); cs != nil {
		healing, nonEmpty = false, false
	}
	if cr.TokenHealing != nil {
		healing = *cr.TokenHealing
	}
	special := cr.ParseSpecial == nil || *cr.ParseSpecial
	j := &job{model: model, n: cr.choices(), stream: cr.Stream != nil && *cr.Stream, includeUsage: includeUsage(&cr.commonParams), logprobs: lp}
	for _, p := range prompts {
		j.reqs = append(j.reqs, engine.Request{Prompt: p.text, PromptIDs: p.ids, ParseSpecial: special, Policy: pol, TokenHealing: healing, N: j.n,
			NoSpeculation: noSpeculation(&cr.commonParams), Special: showSpecial(&cr.commonParams), FIM: fim, NonEmpty: nonEmpty})
	}
	if e := s.applyConstraints(&cr.constraintParams, j); e != nil {
		return nil, e
	}
	return j, nil
}

// showSpecial reports whether the request asks for control tokens as text.
func showSpecial(p *commonParams) bool { return p.Special != nil && *p.Special }

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
	cr.ctx = r.Context()
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
	if s.chat == nil {
		return nil, badRequest("messages", "the model %q has no chat template, so /v1/chat/completions is unavailable "+
			"(start the server with --chat-template, or use /v1/completions)", model)
	}
	tools, e := s.chatTools(cr)
	if e != nil {
		return nil, e
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
	prompter := *s.chat
	if tools != nil {
		prompter.Options.Tools = tools.tools
	}
	text, skipBOS, err := prompter.Prompt(msgs)
	if err != nil {
		var re *chat.RaiseError
		if errors.As(err, &re) {
			return nil, badRequest("messages", "the chat template rejected the messages: %s", re.Message)
		}
		return nil, badRequest("messages", "rendering the chat template failed: %v", err)
	}
	j := &job{chat: true, model: model, n: cr.choices(), reqs: []engine.Request{{Prompt: text, ParseSpecial: true, NoBOS: skipBOS, Policy: pol, N: cr.choices(),
		NoSpeculation: noSpeculation(&cr.commonParams), Special: showSpecial(&cr.commonParams)}},
		stream: cr.Stream != nil && *cr.Stream, includeUsage: includeUsage(&cr.commonParams), logprobs: lp, tools: tools}
	if tools != nil {
		cr.constraintParams.toolCall = tools.forced
	}
	if e := s.applyConstraints(&cr.constraintParams, j); e != nil {
		return nil, e
	}
	return j, nil
}

// overloaded is the 429 a full server answers.
func overloaded(msg string) *apiError {
	return &apiError{status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: strp("server_overloaded"),
		Message: msg, retryAfter: 1}
}

// admit takes one of the server's request slots and counts the request
// running; done gives both back. A full server answers 429 (ok false).
func (s *Server) admit(w http.ResponseWriter) (done func(), ok bool) {
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
		default:
			s.m.add(&s.m.rejected, 1)
			writeError(w, overloaded(fmt.Sprintf("the server is full (%d requests running or waiting); retry later", cap(s.slots))))
			return nil, false
		}
	}
	s.m.add(&s.m.running, 1)
	return func() {
		s.m.add(&s.m.running, -1)
		if s.slots != nil {
			<-s.slots
		}
	}, true
}

// generate admits and runs a job, answering with one JSON object or an
// SSE stream. The engine tokenizes and checks each prompt (SubmitAll); its
// typed errors become 400/429/503 answers before anything is written.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, j *job) {
	release, ok := s.admit(w)
	if !ok {
		return
	}
	defer release()

	if s.gen != nil {
		s.generateScripted(w, r, j)
		return
	}
	// The prompts are admitted together or not at all: a request the
	// engine refuses leaves nothing of it queued.
	streams, err := s.eng.SubmitAll(r.Context(), j.reqs)
	if err != nil {
		writeError(w, s.startError(r.Context(), err, j))
		return
	}

	out := s.newResponder(w, r, j)
	var last time.Time
	for it := range merge(streams, j.n) {
		now := time.Now()
		if last.IsZero() {
			s.m.observe(&s.m.ttft, now.Sub(j.start))
		} else if !it.tok.Stop {
			s.m.observe(&s.m.itl, now.Sub(last))
		}
		last = now
		if s.onToken != nil {
			s.onToken()
		}
		if r.Context().Err() != nil || j.stream && !out.token(it.index, it.tok) {
			break // the client is gone: leaving the streams cancels the generation
		}
	}
	var results []*engine.Result
	prompt, completion := 0, 0
	for _, st := range streams {
		rs := st.Results()
		prompt += rs[0].Usage.PromptTokens
		for _, res := range rs {
			completion += res.Usage.CompletionTokens
			if res.FinishReason == engine.FinishError {
				s.logger(r.Context()).Error("server: generation failed", "error", res.Err, "tokens", len(res.IDs))
			}
		}
		results = append(results, rs...)
	}
	s.m.generation(results[0].FinishReason, prompt, completion, time.Since(j.start))
	if s.onDone != nil {
		s.onDone()
	}
	u := usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	if j.stream {
		out.end(results, u)
	} else {
		out.whole(results, u)
	}
}

func (s *Server) newResponder(w http.ResponseWriter, r *http.Request, j *job) *responder {
	out := &responder{s: s, w: w, ctx: r.Context(), j: j, id: newID("cmpl-"), created: time.Now().Unix(),
		pending: map[int][]engine.Token{}, offset: map[int]int{}}
	if j.chat {
		out.id = newID("chatcmpl-")
	}
	if j.tools.parse() {
		out.calls = map[int]*chat.ToolStream{}
	}
	return out
}

// generateScripted answers a one-choice job from the s.gen test hook
// instead of the engine.
func (s *Server) generateScripted(w http.ResponseWriter, r *http.Request, j *job) {
	toks, result := s.gen(r.Context(), j.reqs[0])
	out := s.newResponder(w, r, j)
	for t := range toks {
		if j.stream && !out.token(0, t) {
			break
		}
	}
	res := result()
	u := usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens,
		TotalTokens: res.Usage.PromptTokens + res.Usage.CompletionTokens}
	if j.stream {
		out.end([]*engine.Result{res}, u)
	} else {
		out.whole([]*engine.Result{res}, u)
	}
}

// indexed is one token of a merged stream with its choice's response
// index.
type indexed struct {
	index int
	tok   engine.Token
}

// merge yields the tokens of every stream as they land, stream i's choice
// j under index i·n + j, and returns when all streams have ended. Breaking
// out of the loop leaves every stream, which cancels it (its results then
// hold exactly the tokens yielded).
func merge(streams []*engine.Stream, n int) iter.Seq[indexed] {
	return func(yield func(indexed) bool) {
		if len(streams) == 1 {
			for t := range streams[0].Tokens() {
				if !yield(indexed{t.Index, t}) {
					return
				}
			}
			return
		}
		ch := make(chan indexed)
		quit := make(chan struct{})
		var wg sync.WaitGroup
		for i, st := range streams {
			wg.Go(func() {
				for t := range st.Tokens() {
					select {
					case ch <- indexed{i*n + t.Index, t}:
					case <-quit:
						return
					}
				}
			})
		}
		go func() { wg.Wait(); close(ch) }()
		for it := range ch {
			if !yield(it) {
				close(quit)
				for range ch { // let the forwarders leave their streams
				}
				return
			}
		}
	}
}

// startError maps an error from a request that could not start.
func (s *Server) startError(ctx context.Context, err error, j *job) *apiError {
	if e := cutError(ctx); e != nil {
		return e
	}
	var (
		fe  *sample.FieldError
		tl  *engine.PromptTooLongError
		re  *engine.RequestError
		par = "prompt"
	)
	if j.chat {
		par = "messages"
	}
	switch {
	case isOverloaded(err):
		s.m.add(&s.m.rejected, 1)
		return overloaded("the engine's queue is full; retry later")
	case errors.Is(err, engine.ErrClosed):
		return &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Code: strp("shutting_down"),
			Message: "the engine is shut down", retryAfter: 1}
	case errors.As(err, &tl):
		what := "the prompt has"
		if j.chat {
			what = "the messages (as the chat template renders them) have"
		}
		e := badRequest(par, "this model's maximum context length is %d tokens, but %s %d tokens; shorten it by %d tokens", tl.Limit, what, tl.Tokens, tl.Tokens-tl.Limit)
		if tl.Cache {
			e = badRequest(par, "%s %d tokens, more than the %d positions of the server's KV cache; shorten it by %d tokens", what, tl.Tokens, tl.Limit, tl.Tokens-tl.Limit)
		}
		e.Code = strp("context_length_exceeded")
		return e
	case errors.As(err, &re):
		if re.Field == "prompt" {
			re.Field = par
		}
		return badRequest(re.Field, "%s", re.Msg)
	case errors.As(err, &fe):
		return badRequest(fe.Field, "%s %s", fe.Field, fe.Msg)
	case errors.Is(err, engine.ErrSessionBusy):
		return &apiError{status: http.StatusConflict, Type: "invalid_request_error", Message: err.Error()}
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
	started bool                     // SSE headers written
	failed  bool                     // a write failed (client gone)
	pending map[int][]engine.Token   // by choice index: tokens whose text has not shown yet (for logprobs)
	offset  map[int]int              // by choice index: completions text_offset of the next token
	calls   map[int]*chat.ToolStream // by choice index: reads tool calls out of a streamed chat reply (nil: no tools)
}

// choices is the number of choices in the response.
func (o *responder) choices() int { return len(o.j.reqs) * o.j.n }

// startStream writes the SSE headers (and the chat role chunks) once.
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
		for i := range o.choices() {
			if !o.send(o.chatChunk(i, &chatMessage{Role: "assistant", Content: &empty}, nil, nil)) {
				return false
			}
		}
		return true
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

// token streams one engine token of choice i; false when the client is
// gone.
func (o *responder) token(i int, t engine.Token) bool {
	if !o.startStream() {
		return false
	}
	if o.j.logprobs >= 0 && !t.Stop {
		o.pending[i] = append(o.pending[i], t)
	}
	if t.Text == "" {
		return true // held back (partial UTF-8 or a possible stop string)
	}
	lps := o.pending[i]
	delete(o.pending, i)
	if o.calls != nil {
		o.pending[i] = lps // sent with the choice's next chunk, whatever it carries
		content, deltas := o.toolStream(i).Push(t.Text)
		return o.sendTools(i, content, deltas)
	}
	if o.j.chat {
		text := t.Text
		return o.send(o.chatChunk(i, &chatMessage{Content: &text}, o.chatLogprobs(lps), nil))
	}
	return o.send(o.completionChunk(i, t.Text, o.completionLogprobs(i, lps), nil))
}

// failure is the first failed result's error message, or "".
func failure(results []*engine.Result) string {
	for _, res := range results {
		if res.FinishReason == engine.FinishError {
			msg := "generation failed"
			if res.Err != nil {
				msg += ": " + res.Err.Error()
			}
			return msg
		}
	}
	return ""
}

// cancelled reports whether any choice was cancelled.
func cancelled(results []*engine.Result) bool {
	for _, res := range results {
		if res.FinishReason == engine.FinishCancelled {
			return true
		}
	}
	return false
}

// end closes a stream: each choice's finish chunk, the usage chunk,
// [DONE].
func (o *responder) end(results []*engine.Result, u usage) {
	if cancelled(results) {
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
	if msg := failure(results); msg != "" {
		o.send(errorBody(&apiError{status: 500, Type: "server_error", Message: msg}))
		o.sendDone()
		return
	}
	for i, res := range results {
		reason := finishReason(res)
		if o.calls != nil {
			ts := o.toolStream(i)
			content, deltas := ts.Finish()
			o.sendTools(i, content, deltas)
			reason = o.j.tools.finishReason(reason, ts.Calls())
		}
		lps := o.pending[i] // logprobs of tokens whose text never showed
		delete(o.pending, i)
		if o.j.chat {
			var clp *chatLogprobs
			if len(lps) > 0 {
				clp = o.chatLogprobs(lps)
			}
			o.send(o.chatChunk(i, &chatMessage{}, clp, &reason))
		} else {
			var tlp *completionLogprobs
			if len(lps) > 0 {
				tlp = o.completionLogprobs(i, lps)
			}
			o.send(o.completionChunk(i, "", tlp, &reason))
		}
	}
	if o.j.includeUsage {
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
func (o *responder) whole(results []*engine.Result, u usage) {
	if e := cutError(o.ctx); cancelled(results) && e != nil {
		writeError(o.w, e)
		return
	}
	if msg := failure(results); msg != "" {
		writeError(o.w, &apiError{status: http.StatusInternalServerError, Type: "server_error", Message: msg})
		return
	}
	var cc []chatChoice
	var tc []completionChoice
	for i, res := range results {
		reason := finishReason(res)
		var lps []engine.Token
		for _, t := range res.Logprobs {
			if !t.Stop {
				lps = append(lps, t)
			}
		}
		text := res.Text
		if o.j.chat {
			msg := &replyMessage{Role: "assistant", Content: &text}
			if o.j.tools.parse() {
				reason = o.j.tools.reply(msg, res.Text, reason)
			}
			cc = append(cc, chatChoice{Index: i, Message: msg, Logprobs: o.chatLogprobs(lps), FinishReason: &reason})
		} else {
			tc = append(tc, completionChoice{Index: i, Text: text, Logprobs: o.completionLogprobs(i, lps), FinishReason: &reason})
		}
	}
	if o.j.chat {
		writeJSON(o.w, http.StatusOK, chatResponse{ID: o.id, Object: "chat.completion", Created: o.created, Model: o.j.model, Choices: cc, Usage: &u})
		return
	}
	writeJSON(o.w, http.StatusOK, completionResponse{ID: o.id, Object: "text_completion", Created: o.created, Model: o.j.model, Choices: tc, Usage: &u})
}

// finishReason maps the engine's reason to OpenAI's: stop or length (a
// generation the server cut answers with an error instead, see cutError).
func finishReason(res *engine.Result) string {
	if res.FinishReason == engine.FinishLength {
		return "length"
	}
	return "stop"
}

func (o *responder) chatChunk(i int, delta *chatMessage, lp *chatLogprobs, finish *string) chatResponse {
	return chatResponse{ID: o.id, Object: "chat.completion.chunk", Created: o.created, Model: o.j.model,
		Choices: []chatChoice{{Index: i, Delta: delta, Logprobs: lp, FinishReason: finish}}}
}

func (o *responder) completionChunk(i int, text string, lp *completionLogprobs, finish *string) completionResponse {
	return completionResponse{ID: o.id, Object: "text_completion", Created: o.created, Model: o.j.model,
		Choices: []completionChoice{{Index: i, Text: text, Logprobs: lp, FinishReason: finish}}}
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

func (o *responder) completionLogprobs(i int, toks []engine.Token) *completionLogprobs {
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
		out.TextOffset = append(out.TextOffset, o.offset[i])
		o.offset[i] += len(text)
	}
	return out
}

// noSpeculation reports whether the request turned speculative decoding
// off ("speculative": false).
func noSpeculation(c *commonParams) bool { return c.Speculative != nil && !*c.Speculative }
