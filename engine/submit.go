package engine

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"time"

	"nanoserve/sample"
)

// Generate runs a request to completion and returns the collected result
// (choice 0; Submit and Stream.Results give all choices). The error is
// non-nil only for a request that could not start (see Submit); failures
// mid-generation are reported in the Result with FinishReason "error".
func (e *Engine) Generate(ctx context.Context, req Request) (*Result, error) {
	st, err := e.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	return st.Result(), nil
}

// GenerateStream is Submit and Stream.Tokens as one iterator: it yields
// each token as it lands, and when the iteration ends *out (if out is
// non-nil) holds choice 0's Result. A request that cannot start yields a
// single error. Breaking out of the loop cancels the generation.
func (e *Engine) GenerateStream(ctx context.Context, req Request, out **Result) iter.Seq2[Token, error] {
	return func(yield func(Token, error) bool) {
		if out != nil {
			*out = nil
		}
		st, err := e.Submit(ctx, req)
		if err != nil {
			yield(Token{}, err)
			return
		}
		for t := range st.Tokens() {
			if !yield(t, nil) {
				break
			}
		}
		if out != nil {
			*out = st.Result()
		}
	}
}

// Submit validates, tokenizes and queues a request and returns its
// Stream. Errors: *sample.FieldError (bad policy), *RequestError (bad ids,
// empty prompt, bad N, a session of another engine), *PromptTooLongError
// (with the counts), ErrSessionBusy, ErrOverloaded (queue full), ErrClosed.
// The request runs until it ends or ctx is cancelled.
func (e *Engine) Submit(ctx context.Context, req Request) (*Stream, error) {
	sts, err := e.SubmitAll(ctx, []Request{req})
	if err != nil {
		return nil, err
	}
	return sts[0], nil
}

// SubmitAll submits several requests as one (the prompts of one API
// request): all are queued, or none is and nothing of them remains. Each
// is validated and tokenized first; then they are queued together if the
// queue has room for all of them, else the answer is ErrOverloaded. More
// requests than Options.MaxQueue can never be queued: a *RequestError
// (field "prompt"). The errors are Submit's.
func (e *Engine) SubmitAll(ctx context.Context, reqs []Request) ([]*Stream, error) {
	ps := make([]*submission, 0, len(reqs))
	abort := func() {
		for _, p := range ps {
			p.abort()
		}
	}
	for _, req := range reqs {
		p, err := e.prepare(ctx, req)
		if err != nil {
			abort()
			return nil, err
		}
		ps = append(ps, p)
	}
	e.mu.Lock()
	var qerr error
	switch waiting := e.nWaiting + len(e.inbox); {
	case e.closed:
		qerr = ErrClosed
	case len(ps) > e.opts.MaxQueue:
		qerr = &RequestError{"prompt", fmt.Sprintf("%d prompts in one request exceed the engine's queue of %d", len(ps), e.opts.MaxQueue)}
	case waiting+len(ps) > e.opts.MaxQueue:
		e.stats.Rejected++
		qerr = fmt.Errorf("%w (%d waiting, %d more asked)", ErrOverloaded, waiting, len(ps))
	default:
		for _, p := range ps {
			p.s.id = e.nextID
			e.nextID++
			e.inbox = append(e.inbox, p.s)
			e.stats.Requests++
			e.stats.PromptTokens += int64(p.prompt)
		}
	}
	e.mu.Unlock()
	if qerr != nil {
		abort()
		return nil, qerr
	}
	e.poke()
	sts := make([]*Stream, len(ps))
	for i, p := range ps {
		sts[i] = p.st
	}
	return sts, nil
}

// submission is a request prepared for the queue.
type submission struct {
	s      *seq
	st     *Stream
	prompt int // prompt tokens
	sess   *Session
}

// abort releases what prepare took (the session, the context) for a
// request that is not queued.
func (p *submission) abort() {
	if p.sess != nil {
		p.sess.busy.Store(false)
	}
	p.st.cancel()
}

// prepare validates and tokenizes req and builds its sequence and Stream,
// not yet queued.
func (e *Engine) prepare(ctx context.Context, req Request) (*submission, error) {
	pol := req.Policy
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	n := max(req.N, 1)
	switch {
	case n > MaxN:
		return nil, &RequestError{"n", fmt.Sprintf("n must be at most %d, got %d", MaxN, n)}
	case n > 1 && req.Session != nil:
		return nil, &RequestError{"n", "n > 1 cannot extend a session"}
	case req.Session != nil && req.Session.e != e:
		return nil, &RequestError{"session", "session belongs to another engine"}
	}
	prompt, err := e.Encode(&req)
	if err != nil {
		return nil, err
	}
	if len(prompt) > e.ctx {
		return nil, &PromptTooLongError{Tokens: len(prompt), Limit: e.ctx}
	}
	if need := e.cache.BlocksFor(len(prompt)); need > e.cache.NumBlocks {
		return nil, &PromptTooLongError{Tokens: len(prompt), Limit: e.cache.NumBlocks * e.cache.BlockSize, Cache: true}
	}
	if req.Budget != nil {
		left := e.ctx - len(prompt)
		if pol.MaxTokens > 0 {
			left = min(left, pol.MaxTokens)
		}
		if err := req.Budget(left); err != nil {
			return nil, err
		}
	}
	var heal *healProcessor
	if req.TokenHealing {
		heal = planHealing(e.tok, e.vocab, prompt)
	}
	prefill := prompt // the tokens the sequence starts with
	if heal != nil {
		prefill = prompt[:len(prompt)-1]
	}
	ctx, cancel := context.WithCancel(ctx)
	st := &Stream{e: e, ctx: ctx, cancel: cancel, res: make([]*Result, n), left: n, notify: make(chan struct{}, 1)}
	now := time.Now()
	choices := make([]*choice, n)
	var seed uint64
	for i := range choices {
		p := pol
		if i > 0 {
			s := seed + uint64(i) // choice i uses seed + i
			p.Seed = &s
		}
		sampler, err := sample.New(p, e.vocab)
		if err != nil {
			cancel()
			return nil, err
		}
		if i == 0 {
			seed = sampler.Seed()
		}
		c := &choice{st: st, index: i, pol: p, sampler: sampler, start: now, noSpec: req.NoSpeculation,
			res: &Result{Index: i, PromptIDs: slices.Clone(prompt), Seed: sampler.Seed()}}
		c.res.Usage.PromptTokens = len(prompt)
		healed := ""
		if heal != nil {
			h := heal
			if i > 0 {
				h = heal.clone()
			}
			c.procs = append(c.procs, h)
			healed = h.text
			c.res.Healed = healed
		}
		if m := fimMask(e.tok, e.vocab, req.FIM); m != nil {
			c.procs = append(c.procs, m)
		}
		if req.NonEmpty && !p.IgnoreEOS {
			c.procs = append(c.procs, &nonEmptyProcessor{tok: e.tok, eog: e.eog, vocab: e.vocab, healed: healed})
		}
		if req.Processors != nil {
			c.procs = append(c.procs, req.Processors()...)
		}
		c.out = newOutput(e.tok, &p, e.eog, prompt, healed, e.ctx, req.Special)
		choices[i] = c
	}
	s := &seq{ctx: ctx, tokens: append(make([]int, 0, len(prefill)+64), prefill...), nPrompt: len(prefill),
		sess: req.Session, c: choices[0], forks: choices[1:], progress: req.Progress}
	s.kv = &s.own
	if sess := req.Session; sess != nil {
		if !sess.busy.CompareAndSwap(false, true) {
			cancel()
			return nil, ErrSessionBusy
		}
		s.kv = &sess.seq
	}
	return &submission{s: s, st: st, prompt: len(prompt), sess: req.Session}, nil
}
