package server

// The generation pipeline: every API that generates (OpenAI completions
// and chat, Ollama generate and chat, llama-server's /infill) is a decoder
// and a sink:
//
//	decoder   request body → *job (validated policy, one engine.Request per
//	          prompt, n choices, tool setup); its errors are answered
//	          before anything runs
//	run       admit (the server's MaxPending slots) → SubmitAll (the engine
//	          tokenizes and checks every prompt; all are queued or none) →
//	          merge the streams (choice j of prompt i is index i·n + j) →
//	          metrics (time to first token, inter-token latency, finish
//	          reason, token counts) → the sink
//	sink      writes the answer in its API's shape (SSE, NDJSON, one JSON)
//
// A sink sees, in this order and from one goroutine:
//
//   - Fail(e), once, if the job could not start (a full server: 429; the
//     engine refused a prompt: 400, 429, 503). Nothing was written yet, and
//     nothing else is called.
//   - Delta(i, d) for every token choice i yields, as it lands. d.Text is the
//     piece of the choice's text that became final: whole UTF-8 characters,
//     stop strings removed, control tokens shown or hidden as the request
//     asked (engine.Request.Special) — "" while the engine holds text back.
//     d.Tokens are the tokens that text completes (ids, logprobs and their
//     alternatives), never the token that ended the choice. Return false to
//     end the generation: the client is gone, or the API's own stop rule
//     fired (llama-server's n_indent, t_max_predict_ms); leaving cancels
//     every stream of the job.
//   - End(o), once, after every choice ended: o.Results (by choice index:
//     text, ids, finish reason, usage, timings), o.Usage (each prompt
//     counted once), o.Held (tokens whose text never showed, for logprobs),
//     o.First/o.Last (first and last token time), o.Load (the time the
//     front spent loading the model), and the two ways a job ends badly:
//     o.Cut, the error to answer when the server cut it (drain timeout,
//     per-request deadline: 503, 504; nil when the client went away) and
//     o.Failure, the message of a choice the engine failed (already logged).
//
// Chat output parsing is the job's: j.tools (nil without tools) says
// whether replies are parsed for calls (parse), in which format, and which
// calls a reply keeps (keep); chat.ToolStream reads calls from streamed
// text, toolSetup.calls from a whole reply. A new API (Responses,
// Anthropic Messages, llama-server's /completion) builds a job with the
// existing decoders (completionJob, chatJob) or its own, and writes a sink:
// nothing else. The front (front.go) has already resolved the model,
// checked the key and read the body.

import (
	"context"
	"iter"
	"net/http"
	"sync"
	"time"

	"nanoserve/engine"
)

// sink writes one API's answer to a job (see the file comment).
type sink interface {
	Fail(e *apiError)
	Delta(i int, d delta) bool
	End(o *outcome)
}

// delta is one token's worth of a choice's output.
type delta struct {
	Text   string         // the text that became final ("" while held back)
	Tokens []engine.Token // the tokens Text completes (not the stop token)
	Stop   bool           // the token that ended the choice
}

// outcome is how a job ended.
type outcome struct {
	Results     []*engine.Result       // by choice index
	Usage       usage                  // prompts counted once, completions summed
	Held        map[int][]engine.Token // by choice: tokens whose text never showed
	Start       time.Time              // the job's arrival
	First, Last time.Time              // first and last token (zero: none came)
	Load        time.Duration          // spent loading the model before Start
	Cut         *apiError              // the server cut the job (nil: it did not)
	Failure     string                 // a choice failed ("": none did)
}

// single reports whether a one-choice job ended without its answer —
// cancelled or failed — and the error to answer with: the server's cut,
// else a 500 naming the failure; nil when the client went away.
func (o *outcome) single() (e *apiError, ended bool) {
	res := o.Results[0]
	if res.FinishReason != engine.FinishCancelled && res.FinishReason != engine.FinishError {
		return nil, false
	}
	if o.Cut != nil || res.FinishReason == engine.FinishCancelled {
		return o.Cut, true
	}
	return &apiError{status: http.StatusInternalServerError, Type: "server_error", Message: o.Failure}, true
}

// cancelled reports whether any choice was cancelled (the client left, the
// sink stopped, or the server cut the job).
func (o *outcome) cancelled() bool { return cancelled(o.Results) }

// generator is what the pipeline submits jobs to: the model's engine
// (engineGen), or a test's fake.
type generator interface {
	SubmitAll(ctx context.Context, reqs []engine.Request) ([]tokenStream, error)
}

// tokenStream is one submitted request's tokens and results
// (*engine.Stream).
type tokenStream interface {
	Tokens() iter.Seq[engine.Token]
	Results() []*engine.Result
}

// engineGen submits to an engine.
type engineGen struct{ eng *engine.Engine }

func (g engineGen) SubmitAll(ctx context.Context, reqs []engine.Request) ([]tokenStream, error) {
	sts, err := g.eng.SubmitAll(ctx, reqs)
	out := make([]tokenStream, len(sts))
	for i, st := range sts {
		out[i] = st
	}
	return out, err
}

// run admits and runs a job, handing what it yields to out.
func (s *Server) run(ctx context.Context, j *job, out sink) {
	if e := s.admit(); e != nil {
		out.Fail(e)
		return
	}
	defer s.unadmit()
	s.native.budget(j.reqs) // --n-predict
	// The prompts are admitted together or not at all: a request the
	// engine refuses leaves nothing of it queued.
	streams, err := s.gen.SubmitAll(ctx, j.reqs)
	if err != nil {
		out.Fail(s.startError(ctx, err, j))
		return
	}
	o := &outcome{Start: j.start, Held: map[int][]engine.Token{}, Load: loadDuration(ctx)}
	for it := range s.withProgress(ctx, j, out, merge(streams, j.n)) {
		now := time.Now()
		if o.First.IsZero() {
			o.First = now
			s.m.observe(&s.m.ttft, now.Sub(j.start))
		} else if !it.tok.Stop {
			s.m.observe(&s.m.itl, now.Sub(o.Last))
		}
		o.Last = now
		d := delta{Text: it.tok.Text, Stop: it.tok.Stop}
		if !it.tok.Stop {
			o.Held[it.index] = append(o.Held[it.index], it.tok)
		}
		if d.Text != "" {
			d.Tokens = o.Held[it.index]
			delete(o.Held, it.index)
		}
		if j.telemetry != nil {
			j.telemetry.count(it.index, d)
		}
		if ctx.Err() != nil || !out.Delta(it.index, d) {
			break // leaving the streams cancels the generation
		}
	}
	prompt, completion, cached := 0, 0, 0
	for _, st := range streams {
		rs := st.Results()
		prompt += rs[0].Usage.PromptTokens
		cached += rs[0].Usage.CachedTokens
		for _, res := range rs {
			completion += res.Usage.CompletionTokens
			if res.FinishReason == engine.FinishError {
				s.logger(ctx).Error("server: generation failed", "error", res.Err, "tokens", len(res.IDs))
			}
		}
		o.Results = append(o.Results, rs...)
	}
	s.m.generation(o.Results[0].FinishReason, prompt, completion, time.Since(j.start))
	for _, res := range o.Results {
		s.lc.count(res) // llamacpp:* (native_metrics.go)
	}
	o.Usage = usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion,
		PromptTokensDetails: promptTokensDetails{CachedTokens: cached}}
	if o.cancelled() {
		o.Cut = cutError(ctx)
	}
	o.Failure = failure(o.Results)
	out.End(o)
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
func merge(streams []tokenStream, n int) iter.Seq[indexed] {
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

// withProgress hands a return_progress job's prefill reports to its sink
// (progressSink) as they come, from this goroutine, between the tokens of
// toks; other jobs get toks as they are. A sink that answers false ends
// the job as a failed Delta does.
func (s *Server) withProgress(ctx context.Context, j *job, out sink, toks iter.Seq[indexed]) iter.Seq[indexed] {
	ps, ok := out.(progressSink)
	if !ok || !j.progress || j.telemetry == nil {
		return toks
	}
	log := j.telemetry.log
	return func(yield func(indexed) bool) {
		ch := make(chan indexed)
		quit := make(chan struct{})
		go func() {
			defer close(ch)
			for it := range toks {
				select {
				case ch <- it:
				case <-quit:
					return
				}
			}
		}()
		defer func() {
			close(quit)
			for range ch { // let the forwarder leave the streams
			}
		}()
		send := func() bool {
			for _, p := range log.take() {
				if !ps.Progress(p) {
					return false
				}
			}
			return true
		}
		for {
			select {
			case <-log.notify:
				if !send() {
					return
				}
			case it, more := <-ch:
				// The prefill's last report precedes its first token.
				if !send() || !more || !yield(it) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}
}
