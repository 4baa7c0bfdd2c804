// Package engine turns a model into a text generator: it tokenizes the
// prompt, runs one decode loop over the model's paged KV cache, samples each
// next token under the request's declared policy, and streams the decoded
// text as tokens land.
//
// One loop serves every policy: the prompt is prefilled once (in chunks, one
// batched Forward per chunk), then each step feeds the one token just
// sampled at the next position. Greedy decoding is the same loop at
// temperature 0 (the sampler takes the argmax and never touches its RNG).
// Streaming and collected generation are the same code: Generate drains
// GenerateStream.
//
// A Session keeps a conversation's KV cache between requests: when the next
// prompt starts with the tokens already cached, only the new suffix is
// prefilled (chat turns do not re-read the history).
//
// Invariants the tests pin: cached decoding equals full recompute; the
// concatenated streamed text equals the final text; stop strings are never
// emitted; every result has a finish reason (stop, length, cancelled,
// error) and usage; a bad request ends with an error, never a panic.
package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
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

// ErrPromptTooLong is wrapped when a prompt does not fit the context.
var ErrPromptTooLong = errors.New("engine: prompt too long")

// Options configure an Engine.
type Options struct {
	CtxSize      int // KV positions per sequence (≤ 0: the model's context length)
	PrefillChunk int // prompt tokens per Forward call (≤ 0: 512)
}

// Engine runs generation requests on one model. Requests are served one at
// a time (Forward is serialised); each holds its own sequence in the cache.
type Engine struct {
	m     *model.Model
	tok   *tokenizer.Tokenizer
	cache *kvcache.Cache
	ctx   int
	chunk int

	mu   sync.Mutex     // one request at a time
	pos  []int          // batch scratch, reused so decode steps do not allocate
	seqs []*kvcache.Seq // batch scratch
}

// New prepares an engine with a KV cache of opts.CtxSize positions.
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
	cache, err := m.NewCache(ctx)
	if err != nil {
		return nil, err
	}
	chunk := opts.PrefillChunk
	if chunk <= 0 {
		chunk = 512
	}
	return &Engine{m: m, tok: m.Tokenizer, cache: cache, ctx: ctx, chunk: chunk}, nil
}

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
	CachedTokens     int `json:"cached_tokens"` // prompt tokens reused from the session's cache
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
	PromptIDs    []int
	IDs          []int // generated ids (an end-of-generation id that stopped it is not included)
	Text         string
	FinishReason string
	Err          error // why FinishReason is "error"
	Logprobs     []Token
	Seed         uint64 // the seed the sampler used
	Usage        Usage
	Timings      Timings
}

// Session is a conversation whose KV cache persists between requests. It
// must be used by one request at a time and released with Close.
type Session struct {
	e   *Engine
	seq kvcache.Seq
	ids []int // tokens whose K/V are in seq, in order
}

// NewSession starts an empty conversation.
func (e *Engine) NewSession() *Session { return &Session{e: e} }

// Close returns the session's cache blocks.
func (s *Session) Close() {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.e.cache.Release(&s.seq)
	s.ids = nil
}

// Reset forgets the conversation but keeps the session usable.
func (s *Session) Reset() { s.Close() }

// Tokens is the number of positions cached for the session.
func (s *Session) Tokens() int { return len(s.ids) }

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
// policy, prompt too long); failures mid-generation are reported in the
// Result with FinishReason "error".
func (e *Engine) Generate(ctx context.Context, req Request) (*Result, error) {
	var res *Result
	for _, err := range e.GenerateStream(ctx, req, &res) {
		if err != nil && res == nil {
			return nil, err
		}
	}
	return res, nil
}

// GenerateStream yields each token as it lands. When the iteration ends,
// *out (if out is non-nil) holds the Result. A request that cannot start
// yields a single error. Breaking out of the loop cancels the generation
// (finish reason "cancelled").
func (e *Engine) GenerateStream(ctx context.Context, req Request, out **Result) iter.Seq2[Token, error] {
	return func(yield func(Token, error) bool) {
		res, err := e.run(ctx, req, yield)
		if out != nil {
			*out = res
		}
		if err != nil {
			yield(Token{}, err)
		}
	}
}

// run is the decode loop.
func (e *Engine) run(ctx context.Context, req Request, yield func(Token, error) bool) (*Result, error) {
	start := time.Now()
	pol := req.Policy
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	prompt, err := e.Encode(&req)
	if err != nil {
		return nil, err
	}
	if len(prompt) > e.ctx {
		return nil, fmt.Errorf("%w: prompt of %d tokens exceeds context length %d", ErrPromptTooLong, len(prompt), e.ctx)
	}
	sampler, err := sample.New(pol, e.m.Vocab)
	if err != nil {
		return nil, err
	}

	e.mu.Lock()
	defer e.mu.Unlock()

	sess := req.Session
	if sess == nil {
		sess = &Session{e: e}
		defer e.cache.Release(&sess.seq)
	} else if sess.e != e {
		return nil, errors.New("engine: session belongs to another engine")
	}
	res := &Result{PromptIDs: prompt, Seed: sampler.Seed()}
	res.Usage.PromptTokens = len(prompt)

	// Reuse the cached prefix; at least the last prompt token is recomputed
	// so its logits exist.
	keep := commonPrefix(sess.ids, prompt)
	keep = min(keep, len(prompt)-1)
	sess.ids = sess.ids[:keep]
	sess.seq.Len = keep
	res.Usage.CachedTokens = keep

	finish := func(reason string, err error) (*Result, error) {
		res.FinishReason, res.Err = reason, err
		return res, nil
	}

	// Prefill: the uncached prompt suffix in chunks, one batched Forward each.
	tPrefill := time.Now()
	var logits []float32
	for lo := keep; lo < len(prompt); lo += e.chunk {
		if err := ctx.Err(); err != nil {
			return finish(FinishCancelled, nil)
		}
		hi := min(lo+e.chunk, len(prompt))
		logits, err = e.forward(sess, prompt[lo:hi], lo)
		if err != nil {
			return finish(FinishError, err)
		}
	}
	prefill := time.Since(tPrefill)
	res.Timings.PrefillMs = ms(prefill)
	if n := len(prompt) - keep; prefill > 0 {
		res.Timings.PrefillTokS = float64(n) / prefill.Seconds()
	}

	stopIDs := map[int]bool{}
	for _, id := range pol.StopTokenIDs {
		stopIDs[id] = true
	}
	if !pol.IgnoreEOS {
		for _, id := range e.m.Gen.EOG {
			stopIDs[id] = true
		}
	}
	// Generated text continues the prompt's: keep the first piece's space.
	dec := e.tok.NewDecoderWith(tokenizer.DecodeOptions{Continuation: e.tok.Decode(prompt) != ""})
	stop := sample.NewStopMatcher(pol.Stop)
	history := append([]int(nil), prompt...)
	var tDecode time.Time
	var text []byte
	emit := func(t Token) bool {
		text = append(text, t.Text...)
		if pol.Logprobs != nil {
			t.Top = slices.Clone(t.Top) // the sampler reuses its buffer
			res.Logprobs = append(res.Logprobs, t)
		}
		return yield(t, nil)
	}
	// flush releases the text the decoder and the stop matcher hold back.
	flush := func() string {
		t, matched := stop.Push(dec.Flush())
		if matched {
			return t
		}
		return t + stop.Flush()
	}
	maxTokens := pol.MaxTokens
	var one [1]int
	for {
		if err := ctx.Err(); err != nil {
			res.Text = string(text)
			e.finishTimings(res, tDecode)
			return finish(FinishCancelled, nil)
		}
		ch, err := sampler.Sample(logits, history, len(prompt))
		if err != nil {
			res.Text = string(text)
			return finish(FinishError, err)
		}
		if len(res.IDs) == 0 {
			res.Timings.TTFTMs = ms(time.Since(start))
			tDecode = time.Now()
		}
		if stopIDs[ch.ID] {
			// The stop id itself is not part of the output; release any
			// text still held back (an incomplete stop-string prefix).
			if tail := flush(); tail != "" {
				emit(Token{ID: ch.ID, Text: tail, Logprob: ch.Logprob, Stop: true})
			}
			res.Text = string(text)
			e.finishTimings(res, tDecode)
			return finish(FinishStop, nil)
		}
		res.IDs = append(res.IDs, ch.ID)
		history = append(history, ch.ID)
		res.Usage.CompletionTokens = len(res.IDs)
		pos := len(prompt) + len(res.IDs) - 1 // position of the token just sampled
		last := (maxTokens > 0 && len(res.IDs) >= maxTokens) || pos >= e.ctx
		piece, matched := stop.Push(dec.Next(ch.ID))
		if last && !matched {
			piece += flush()
		}
		if !emit(Token{ID: ch.ID, Text: piece, Logprob: ch.Logprob, Top: ch.TopLogprobs}) {
			res.Text = string(text)
			e.finishTimings(res, tDecode)
			return finish(FinishCancelled, nil)
		}
		if matched || last {
			res.Text = string(text)
			e.finishTimings(res, tDecode)
			if matched {
				return finish(FinishStop, nil)
			}
			return finish(FinishLength, nil)
		}
		one[0] = ch.ID
		logits, err = e.forward(sess, one[:], pos)
		if err != nil {
			res.Text = string(text)
			return finish(FinishError, err)
		}
	}
}

func (e *Engine) finishTimings(res *Result, tDecode time.Time) {
	if tDecode.IsZero() {
		return
	}
	d := time.Since(tDecode)
	res.Timings.DecodeMs = ms(d)
	if n := len(res.IDs) - 1; n > 0 && d > 0 {
		res.Timings.DecodeTokS = float64(n) / d.Seconds()
	}
}

// forward runs tokens at positions pos0.. of the session's sequence and
// returns the last token's logits.
func (e *Engine) forward(s *Session, toks []int, pos0 int) ([]float32, error) {
	if err := e.cache.Reserve(&s.seq, pos0+len(toks)-s.seq.Len); err != nil {
		return nil, err
	}
	n := len(toks)
	e.pos, e.seqs = e.pos[:0], e.seqs[:0]
	for i := range n {
		e.pos = append(e.pos, pos0+i)
		e.seqs = append(e.seqs, &s.seq)
	}
	logits, err := e.m.Forward(model.Batch{Tokens: toks, Pos: e.pos, Seq: e.seqs}, e.cache)
	if err != nil {
		return nil, err
	}
	s.ids = append(s.ids[:pos0], toks...)
	return logits, nil
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
