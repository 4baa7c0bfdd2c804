package server

// The generation endpoints: request → job (validated policy and prompt) →
// admission → engine stream → one JSON response or SSE events.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/sample"
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
	tools        *toolSetup  // chat with tools; nil: none
	reply        *replySetup // chat: how replies are read (reasoning, tools); nil: completions
	verbose      bool        // a whole answer carries llama-server's __verbose (verboseObject)
	// telemetry: a stream's timings_per_token / return_progress state
	// (telemetry.go; nil: neither asked for); progress: stream
	// prompt_progress chunks.
	telemetry *telemetry
	progress  bool
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request, cr *completionRequest) {
	s.openAI(w, r, &cr.commonParams, func() (*job, *apiError) { return s.completionJob(cr) })
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request, cr *chatRequest) {
	s.openAI(w, r, &cr.commonParams, func() (*job, *apiError) { return s.chatJob(cr) })
}

// openAI answers an OpenAI generation: the job build makes of the request
// whose common fields are p, run with the OpenAI responder (SSE or JSON).
func (s *Server) openAI(w http.ResponseWriter, r *http.Request, p *commonParams, build func() (*job, *apiError)) {
	start := time.Now()
	p.ctx = r.Context()
	j, e := build()
	if e != nil {
		writeError(w, e)
		return
	}
	j.start = start
	j.verbose = s.native.verbose || p.Verbose != nil && *p.Verbose
	j.setTelemetry(p.telemetryFields, j.stream)
	s.run(r.Context(), j, s.blockStops(j, s.newResponder(w, r, j)))
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
		defMax = cmp.Or(s.native.nPredict, 16) // --n-predict, else the OpenAI completions default
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
		if tools.format == chat.ToolFormatGeneric && tools.parse() {
			msgs = genericSystem(msgs, chat.GenericToolPrompt(tools.fns, tools.choice != "auto", tools.parallel))
		}
	}
	reply, e := s.reasoningSetup(&cr.reasoningParams, &prompter, tools)
	if e != nil {
		return nil, e
	}
	text, skipBOS, e := reply.render(&prompter, msgs)
	if e != nil {
		return nil, e
	}
	j := &job{chat: true, model: model, n: cr.choices(), reqs: []engine.Request{{Prompt: text, ParseSpecial: true, NoBOS: skipBOS, Policy: pol, N: cr.choices(),
		NoSpeculation: noSpeculation(&cr.commonParams), Special: showSpecial(&cr.commonParams) || reply.special}},
		stream: cr.Stream != nil && *cr.Stream, includeUsage: includeUsage(&cr.commonParams), logprobs: lp, tools: tools, reply: reply}
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
// running; unadmit gives both back. A full server is a 429.
func (s *Server) admit() *apiError {
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
		default:
			s.m.add(&s.m.rejected, 1)
			return overloaded(fmt.Sprintf("the server is full (%d requests running or waiting); retry later", cap(s.slots)))
		}
	}
	s.m.add(&s.m.running, 1)
	return nil
}

func (s *Server) unadmit() {
	s.m.add(&s.m.running, -1)
	if s.slots != nil {
		<-s.slots
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
		e := badRequest(par, "this model's maximum context length is %d tokens, but %s %d tokens, too large: shorten it by %d tokens", tl.Limit, what, tl.Tokens, tl.Tokens-tl.Limit)
		if tl.Cache {
			e = badRequest(par, "%s %d tokens, more than the %d positions of the server's KV cache, too large: shorten it by %d tokens", what, tl.Tokens, tl.Limit, tl.Tokens-tl.Limit)
		}
		e.Code = strp("context_length_exceeded")
		exceedsContext(e, tl.Tokens, tl.Limit)
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
	if e := promptBytesError(err, par); e != nil {
		return e
	}
	return badRequest("", "%s", err.Error())
}

// noSpeculation reports whether the request turned speculative decoding
// off ("speculative": false).
func noSpeculation(c *commonParams) bool { return c.Speculative != nil && !*c.Speculative }

// genericSystem shows a template without tool syntax the tools: their
// description joins the leading system message, or is one.
func genericSystem(msgs []chat.Message, text string) []chat.Message {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		out := slices.Clone(msgs)
		if out[0].Content != "" {
			text = out[0].Content + "\n\n" + text
		}
		out[0].Content = text
		return out
	}
	return append([]chat.Message{{Role: "system", Content: text}}, msgs...)
}
