// Package engine turns a model into a text generator that serves many
// requests at once: it tokenizes each prompt, queues it, and a scheduler
// goroutine runs all admitted sequences together through one batched
// model.Forward per step (continuous batching), over a paged KV cache whose
// full blocks are shared between prompts with a common prefix (prefix
// caching). Each sequence samples the next token under its own policy and
// seeded sampler, and its tokens stream to the caller as they land.
//
// # One step of the scheduler
//
// A sequence holds tokens (prompt, then generated ids) and a block table
// whose Len says how many of them already have K/V in the cache. Prefill
// and decode are the same thing: each step feeds a sequence the tokens it
// has not computed yet — a chunk of its prompt, or the one token it just
// sampled — and asks for logits only when that chunk reaches its last
// token. A step
//
//  1. finishes sequences whose request context is cancelled (client gone)
//     and returns their blocks;
//  2. schedules the running sequences, oldest first: each gets
//     min(uncomputed tokens, PrefillChunk, budget − one token for each
//     later running sequence) tokens, so decodes are never starved by a
//     long prompt; the step's budget is MaxBatchTokens. When the cache has
//     no block for a sequence's next tokens, the newest running sequence is
//     preempted: its blocks are freed (full ones stay in the prefix cache)
//     and it goes back to the waiting queue with all its tokens, prompt and
//     generated, to be recomputed later (vLLM's recompute preemption; its
//     sampler state is kept, so no generated token is lost or redrawn);
//  3. admits waiting requests first come, first served while fewer than
//     MaxSeqs run, budget is left and the cache can hold their whole
//     remaining prompt (ceil(tokens/BlockSize) blocks, less those reused
//     from the prefix cache); the head of the queue is never overtaken;
//  4. runs one Forward over the batch, registers the newly filled blocks in
//     the prefix cache, and samples one token for every sequence whose
//     logits came back; stop ids, stop strings, max tokens and the context
//     limit end a sequence there.
//
// The arithmetic behind "one weight pass serves many tokens": decoding one
// token reads every weight once; a batch of n tokens reads them once too,
// so at small n the step costs little more than a single decode and
// aggregate throughput grows with the number of concurrent sequences.
//
// Batched logits may differ from a lone request's in the last float bits
// (the matmul kernel depends on the batch size), so a request's tokens are
// the same whatever runs beside it up to such rounding: on the test models
// greedy and seeded runs give identical ids alone and batched.
//
// A Session keeps a conversation's KV cache between requests: when the next
// prompt starts with the tokens already cached, only the new suffix is
// prefilled (chat turns do not re-read the history). Idle sessions' blocks
// are reclaimed when a request could not run otherwise.
//
// # Token healing
//
// BPE cuts text greedily, so a prompt that stops where the training text
// went on is tokenized at a boundary the model has rarely seen: Go source
// nearly always has " {\n" as one token, so after "func main() {" — whose
// last token is " {" — the model is asked what follows a " {" token that
// is not " {\n", and drifts off-distribution. With Request.TokenHealing
// the engine removes the prompt's last token (text t), prefills the rest,
// and samples the first token from the model's logits masked to the tokens
// whose text starts with t (t's own token included; every other logit is
// -Inf before the policy runs, so greedy and seeded sampling stay
// deterministic and draw exactly once). The output omits t: the first
// token contributes only the text after it, so prompt + Result.Text (and
// the streamed pieces) is the text the model wrote, and Result.Healed is
// t. A prompt is healed only when that can change something: it has at
// least two tokens, its last token is an ordinary token (never BOS or
// another control, byte, unknown or user-defined token) with valid UTF-8
// text, and some vocabulary entry is strictly longer and starts with t;
// otherwise the request runs exactly as without healing. Accounting:
// Usage.PromptTokens and Result.PromptIDs are the prompt as tokenized
// (removed token included), the healed first token is a completion token
// (it counts toward MaxTokens), and CachedTokens and the prefill timings
// count the tokens actually prefilled. Logprobs of the healed token are
// under the masked distribution (renormalised over the allowed tokens).
//
// Invariants the tests pin: cached decoding equals full recompute; batched,
// prefix-cached and preempted runs give the same tokens as lone runs; the
// concatenated streamed text equals the final text; stop strings are never
// emitted; every result has a finish reason (stop, length, cancelled,
// error) and usage; a bad request ends with an error, never a panic, and
// never disturbs other requests; a finished or cancelled request leaves no
// block used.
package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// Finish reasons.
const (
	FinishStop      = "stop"      // end-of-generation token or stop string/id
	FinishLength    = "length"    // max tokens or context limit
	FinishCancelled = "cancelled" // the context was cancelled
	FinishError     = "error"     // the model failed mid-generation
)

// DefaultMaxSeqs is Options.MaxSeqs when unset: sequences batched at once.
const DefaultMaxSeqs = 16

var (
	// ErrPromptTooLong is wrapped when a prompt does not fit the context
	// (or the whole KV cache).
	ErrPromptTooLong = errors.New("engine: prompt too long")
	// ErrOverloaded is returned at once when Options.MaxQueue requests are
	// already waiting (an HTTP server answers 429 or 503).
	ErrOverloaded = errors.New("engine: overloaded, too many waiting requests")
	// ErrClosed is returned for requests after Close, and is the Result.Err
	// of requests Close interrupted.
	ErrClosed = errors.New("engine: closed")
	// ErrSessionBusy is returned when a Session is used by two requests at
	// once.
	ErrSessionBusy = errors.New("engine: session is in use by another request")
)

// Options configure an Engine. Zero values pick the defaults.
type Options struct {
	CtxSize        int  // KV positions per sequence (≤ 0: the model's context length)
	PrefillChunk   int  // most prompt tokens one sequence feeds per step (≤ 0: MaxBatchTokens)
	CacheTokens    int  // KV positions shared by all sequences (< CtxSize: CtxSize)
	MaxBatchTokens int  // tokens per Forward step (≤ 0: 512; raised to MaxSeqs)
	MaxSeqs        int  // sequences running at once (≤ 0: 16)
	MaxQueue       int  // requests waiting for admission before ErrOverloaded (≤ 0: 256)
	NoPrefixCache  bool // never reuse other requests' cached blocks
}

// Engine runs generation requests on one model. It is safe for concurrent
// use; Close stops its scheduler.
type Engine struct {
	m     *model.Model
	tok   *tokenizer.Tokenizer
	cache *kvcache.Cache
	ctx   int
	opts  Options // resolved

	mu      sync.Mutex  // guards waiting, nextID, closed, stats
	waiting []*seqState // FCFS by arrival id; preempted sequences re-enter by id
	nextID  uint64
	closed  bool
	stats   Stats

	beat      atomic.Int64  // unix ns of the scheduler loop's latest iteration; 0: not running
	wake      chan struct{} // (cap 1) something changed: new request, cancellation
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// cmu guards the cache and sessions' block tables; the scheduler holds
	// it for a whole step.
	cmu      sync.Mutex
	running  []*seqState           // scheduler-owned, by arrival id
	idleSess map[*Session]struct{} // sessions holding blocks between requests
	batch    model.Batch           // scratch
	healBuf  []float32             // (vocab) scratch: masked logits of a healed first token
	changed  bool                  // a request finished during this step
}

// New prepares an engine with a KV cache of opts.CacheTokens positions and
// starts its scheduler.
func New(m *model.Model, opts Options) (*Engine, error) {
	if m.Tokenizer == nil {
		return nil, errors.New("engine: the model has no tokenizer (pass one with --tokenizer)")
	}
	ctx := opts.CtxSize
	switch {
	case ctx <= 0:
		ctx = m.ContextLen
	case ctx > m.ContextLen && m.Arch == model.ArchGPT2:
		return nil, fmt.Errorf("engine: context size %d exceeds GPT-2's %d learned positions", ctx, m.ContextLen)
	}
	o := opts
	o.CtxSize = ctx
	if o.MaxSeqs <= 0 {
		o.MaxSeqs = DefaultMaxSeqs
	}
	if o.MaxBatchTokens <= 0 {
		o.MaxBatchTokens = 512
	}
	o.MaxBatchTokens = max(o.MaxBatchTokens, o.MaxSeqs)
	if o.PrefillChunk <= 0 {
		o.PrefillChunk = o.MaxBatchTokens
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 256
	}
	// Any one sequence fits the pool alone, so a request that passes the
	// context check can always run to its end.
	o.CacheTokens = max(o.CacheTokens, ctx)
	cache, err := m.NewCache(o.CacheTokens)
	if err != nil {
		return nil, err
	}
	e := &Engine{m: m, tok: m.Tokenizer, cache: cache, ctx: ctx, opts: o,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		idleSess: map[*Session]struct{}{}}
	e.stats.KVBlocksTotal, e.stats.KVBlockSize = cache.NumBlocks, cache.BlockSize
	e.beat.Store(time.Now().UnixNano())
	go e.loop()
	return e, nil
}

// Close stops the scheduler: running and waiting requests end with
// FinishError and ErrClosed, later ones fail with ErrClosed. It waits for
// the scheduler to exit and is safe to call more than once.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		close(e.quit)
	})
	<-e.done
	return nil
}

// heartbeatIdle is how often the idle scheduler loop still beats.
const heartbeatIdle = time.Second

// Heartbeat is when the scheduler loop last began an iteration (stepping,
// or idle: it beats every second while it waits for work); the zero time
// once it has stopped. A heartbeat much older than the longest step means
// the loop is hung.
func (e *Engine) Heartbeat() time.Time {
	ns := e.beat.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Options are the engine's resolved options.
func (e *Engine) Options() Options { return e.opts }

// Model is the engine's model.
func (e *Engine) Model() *model.Model { return e.m }

// CtxSize is the context length of each sequence.
func (e *Engine) CtxSize() int { return e.ctx }

// CacheBytes is the memory held by the KV cache.
func (e *Engine) CacheBytes() int64 { return e.cache.Bytes() }

// Request is one generation.
type Request struct {
	Prompt       string // text to complete
	PromptIDs    []int  // if non-nil, used instead of Prompt (no BOS added)
	ParseSpecial bool   // treat special-token text in Prompt as special tokens (chat-template output)
	NoBOS        bool   // do not add BOS even if the tokenizer asks for it (the template wrote it)
	Policy       sample.Policy
	Session      *Session // reuse and extend a conversation's KV cache; nil: a fresh sequence
	// TokenHealing: back up over the prompt's last token and let the first
	// generated token be any token whose text extends it (see "Token
	// healing" in the package comment). Off: the prompt is used as is.
	TokenHealing bool
}

// Token is one generated token as it lands.
type Token struct {
	ID   int
	Text string // decoded text safe to show now (complete UTF-8, stop strings held back); may be ""
	// Logprob of ID under the model's raw distribution and the top
	// alternatives (when the policy asks for logprobs).
	Logprob float32
	Top     []sample.Logprob
	// Stop marks the end-of-generation (or stop) id that ended generation:
	// it is not part of Result.IDs, and its Text is text held back until
	// the end. It is yielded only when that text is not empty.
	Stop bool
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens"` // prompt tokens reused from the session's or the prefix cache
}

// Timings are wall-clock measurements of one request.
type Timings struct {
	PrefillMs   float64 `json:"prefill_ms"`    // prompt forward passes
	TTFTMs      float64 `json:"ttft_ms"`       // request start to first token sampled
	DecodeMs    float64 `json:"decode_ms"`     // after the first token: decode steps
	PrefillTokS float64 `json:"prefill_tok_s"` // prefilled tokens / prefill time
	DecodeTokS  float64 `json:"decode_tok_s"`  // tokens after the first / decode time
}

// Result is a finished generation.
type Result struct {
	PromptIDs []int // the prompt as tokenized (token healing's removed token included)
	IDs       []int // generated ids (an end-of-generation id that stopped it is not included)
	Text      string
	// Healed is the text of the prompt token that token healing removed
	// ("" when it did not heal). The first generated token starts with it,
	// and Text omits it: prompt + Text is what the model wrote.
	Healed       string
	FinishReason string
	Err          error // why FinishReason is "error"
	Logprobs     []Token
	Seed         uint64 // the seed the sampler used
	Usage        Usage
	Timings      Timings
}

// Stats is a snapshot of the engine for metrics. Counters are cumulative
// since New.
type Stats struct {
	Running int `json:"running"` // sequences in the batch
	Waiting int `json:"waiting"` // queued requests (new or preempted)

	KVBlocksUsed   int `json:"kv_blocks_used"`   // held by sequences or sessions
	KVBlocksCached int `json:"kv_blocks_cached"` // unused but holding a reusable prefix (evictable)
	KVBlocksTotal  int `json:"kv_blocks_total"`
	KVBlockSize    int `json:"kv_block_size"` // positions per block

	Requests          int64 `json:"requests"`            // accepted requests
	Rejected          int64 `json:"rejected"`            // ErrOverloaded answers
	PromptTokens      int64 `json:"prompt_tokens"`       // of accepted requests
	GeneratedTokens   int64 `json:"generated_tokens"`    // sampled tokens (stop ids included)
	PrefixQueryTokens int64 `json:"prefix_query_tokens"` // prompt tokens of admitted requests
	PrefixHitTokens   int64 `json:"prefix_hit_tokens"`   // of those, found in the cache (prefix or session)
	Preemptions       int64 `json:"preemptions"`

	Steps      int64 `json:"steps"`       // Forward calls
	StepTokens int64 `json:"step_tokens"` // tokens over all steps (mean batch = StepTokens/Steps)
	StepSeqs   int64 `json:"step_seqs"`   // sequences over all steps
	LastTokens int   `json:"last_tokens"` // tokens in the latest step
	LastSeqs   int   `json:"last_seqs"`   // sequences in the latest step
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Waiting = len(e.waiting)
	return s
}

// Session is a conversation whose KV cache persists between requests. It
// must be used by one request at a time and released with Close.
type Session struct {
	e       *Engine
	busy    atomic.Bool // a request owns it (set at submit, cleared at finish)
	closing bool        // Close came while busy: release at finish (under cmu)
	seq     kvcache.Seq // (under cmu)
	ids     []int       // tokens whose K/V are in seq: len(ids) == seq.Len (under cmu)
}

// NewSession starts an empty conversation.
func (e *Engine) NewSession() *Session { return &Session{e: e} }

// Close returns the session's cache blocks (at the end of its request, if
// one is running).
func (s *Session) Close() {
	e := s.e
	e.cmu.Lock()
	defer e.cmu.Unlock()
	if s.busy.Load() {
		s.closing = true
		return
	}
	e.dropSession(s)
	e.snapshot()
}

// Reset forgets the conversation but keeps the session usable.
func (s *Session) Reset() { s.Close() }

// Tokens is the number of positions cached for the session.
func (s *Session) Tokens() int {
	s.e.cmu.Lock()
	defer s.e.cmu.Unlock()
	return len(s.ids)
}

// Encode tokenizes a request's prompt as the engine will.
func (e *Engine) Encode(req *Request) ([]int, error) {
	if req.PromptIDs != nil {
		for _, id := range req.PromptIDs {
			if id < 0 || id >= e.tok.Size() {
				return nil, fmt.Errorf("engine: prompt token id %d outside the vocabulary (%d)", id, e.tok.Size())
			}
		}
		return req.PromptIDs, nil
	}
	var ids []int
	if bos, ok := e.tok.BOS(); ok && e.tok.AddBOS() && !req.NoBOS {
		ids = append(ids, bos)
	}
	ids = append(ids, e.tok.Encode(req.Prompt, req.ParseSpecial)...)
	if len(ids) == 0 {
		return nil, errors.New("engine: empty prompt and the model adds no BOS token")
	}
	return ids, nil
}

// Generate runs a request to completion and returns the collected result.
// The error is non-nil only for a request that could not start (bad
// policy, prompt too long, ErrOverloaded); failures mid-generation are
// reported in the Result with FinishReason "error".
func (e *Engine) Generate(ctx context.Context, req Request) (*Result, error) {
	var res *Result
	for _, err := range e.GenerateStream(ctx, req, &res) {
		if err != nil && res == nil {
			return nil, err
		}
	}
	return res, nil
}

// GenerateStream queues the request and yields each token as it lands.
// When the iteration ends, *out (if out is non-nil) holds the Result. A
// request that cannot start yields a single error (ErrOverloaded when the
// queue is full). Breaking out of the loop cancels the generation (finish
// reason "cancelled"; the Result holds exactly the tokens yielded).
func (e *Engine) GenerateStream(ctx context.Context, req Request, out **Result) iter.Seq2[Token, error] {
	return func(yield func(Token, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s, err := e.submit(ctx, req)
		if err != nil {
			if out != nil {
				*out = nil
			}
			yield(Token{}, err)
			return
		}
		st := s.out
		var (
			broke     bool
			yielded   int // tokens yielded (Logprobs entries)
			delivered int // of those, generated ids (not Stop)
			text      []byte
			done      = ctx.Done()
		)
		for {
			st.mu.Lock()
			toks, res := st.toks, st.res
			st.toks = nil
			st.mu.Unlock()
			for _, t := range toks {
				if broke {
					break
				}
				yielded++
				if !t.Stop {
					delivered++
				}
				text = append(text, t.Text...)
				if !yield(t, nil) {
					broke = true
					cancel()
					e.poke()
				}
			}
			if res != nil {
				if broke {
					// The scheduler may have run ahead: keep what the
					// caller saw.
					res.IDs = res.IDs[:min(delivered, len(res.IDs))]
					res.Logprobs = res.Logprobs[:min(yielded, len(res.Logprobs))]
					res.Text = string(text)
					res.Usage.CompletionTokens = len(res.IDs)
					res.FinishReason, res.Err = FinishCancelled, nil
				}
				if out != nil {
					*out = res
				}
				return
			}
			select {
			case <-st.notify:
			case <-done:
				e.poke() // the scheduler may be idle; it reaps the request
				done = nil
			}
		}
	}
}

// stream carries one request's tokens from the scheduler to the request's
// goroutine. It is unbounded so a slow reader never stalls the scheduler.
type stream struct {
	mu     sync.Mutex
	toks   []Token
	res    *Result       // set once, after the last token
	notify chan struct{} // (cap 1)
}

func (st *stream) push(t Token) {
	st.mu.Lock()
	st.toks = append(st.toks, t)
	st.mu.Unlock()
	st.signal()
}

func (st *stream) finish(res *Result) {
	st.mu.Lock()
	st.res = res
	st.mu.Unlock()
	st.signal()
}

func (st *stream) signal() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// poke wakes the scheduler.
func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// submit validates and tokenizes a request and queues it.
func (e *Engine) submit(ctx context.Context, req Request) (*seqState, error) {
	pol := req.Policy
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	prompt, err := e.Encode(&req)
	if err != nil {
		return nil, err
	}
	var heal *healing
	if req.TokenHealing {
		heal = planHealing(e.tok, e.m.Vocab, prompt)
	}
	prefill := prompt // the tokens the sequence starts with
	if heal != nil {
		prefill = prompt[:len(prompt)-1]
	}
	if len(prompt) > e.ctx {
		return nil, fmt.Errorf("%w: prompt of %d tokens exceeds context length %d", ErrPromptTooLong, len(prompt), e.ctx)
	}
	if need := e.cache.BlocksFor(len(prompt)); need > e.cache.NumBlocks {
		return nil, fmt.Errorf("%w: prompt of %d tokens needs %d KV blocks, the cache has %d", ErrPromptTooLong, len(prompt), need, e.cache.NumBlocks)
	}
	sampler, err := sample.New(pol, e.m.Vocab)
	if err != nil {
		return nil, err
	}
	sess := req.Session
	if sess != nil && sess.e != e {
		return nil, errors.New("engine: session belongs to another engine")
	}
	s := &seqState{
		ctx: ctx, pol: pol, sampler: sampler, stopIDs: map[int]bool{},
		// Generated text continues the prompt's: keep the first piece's space.
		dec:     e.tok.NewDecoderWith(tokenizer.DecodeOptions{Continuation: e.tok.Decode(prompt) != ""}),
		stop:    sample.NewStopMatcher(pol.Stop),
		tokens:  append(make([]int, 0, len(prompt)+64), prefill...),
		nPrompt: len(prefill),
		heal:    heal,
		sess:    sess,
		out:     &stream{notify: make(chan struct{}, 1)},
		start:   time.Now(),
	}
	s.kv = &s.own
	for _, id := range pol.StopTokenIDs {
		s.stopIDs[id] = true
	}
	if !pol.IgnoreEOS {
		for _, id := range e.m.Gen.EOG {
			s.stopIDs[id] = true
		}
	}
	s.res = &Result{PromptIDs: slices.Clone(prompt), Seed: sampler.Seed()}
	s.res.Usage.PromptTokens = len(prompt)
	if heal != nil {
		s.res.Healed = heal.text
	}
	if sess != nil {
		if !sess.busy.CompareAndSwap(false, true) {
			return nil, ErrSessionBusy
		}
		s.kv = &sess.seq
	}

	e.mu.Lock()
	var qerr error
	switch {
	case e.closed:
		qerr = ErrClosed
	case len(e.waiting) >= e.opts.MaxQueue:
		e.stats.Rejected++
		qerr = fmt.Errorf("%w (%d waiting)", ErrOverloaded, len(e.waiting))
	default:
		s.id = e.nextID
		e.nextID++
		e.waiting = append(e.waiting, s)
		e.stats.Requests++
		e.stats.PromptTokens += int64(len(prompt))
	}
	e.mu.Unlock()
	if qerr != nil {
		if sess != nil {
			sess.busy.Store(false)
		}
		return nil, qerr
	}
	e.poke()
	return s, nil
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
