// Package engine turns a model into a text generator that serves many
// requests at once: it tokenizes each prompt, queues it, and a scheduler
// goroutine runs all admitted sequences together through one batched
// model.Forward per step (continuous batching), over a paged KV cache whose
// full blocks are shared between prompts with a common prefix (prefix
// caching). Each sequence samples the next token under its own policy and
// seeded sampler, and its tokens stream to the caller as they land.
//
// # Shape
//
// Submit tokenizes and checks a request on the caller's goroutine (a
// prompt that cannot fit fails at once with a *PromptTooLongError) and
// queues it; the result is a Stream of tokens and, at the end, a Result
// per choice. One goroutine per Engine (driver.go) loops
//
//	plan := scheduler.plan()          which tokens of which sequences run now
//	logits := Forward(plan.batch)     one batched pass of the model
//	for each sequence with logits:    processors → sampler → processors.Accept
//	        output stage              → text to stream, finish reason
//	scheduler.commit(plan, sampled)   tokens appended, finished ones freed
//
// The scheduler (scheduler.go) is a state machine with no goroutine and no
// model; the per-sequence output stage (output.go) and the logits
// processors (processor.go) know nothing of the model either, so each is
// tested alone. The model is reached through the forwarder interface.
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
// # Logits processors
//
// Each sequence has an ordered chain of LogitsProcessors: token healing's
// first (when the request heals), then Request.Processors' in order. For
// every token the engine calls Process(logits) on each processor in
// order — each sees the logits as the previous ones left them, a
// forbidden token is -Inf — then the sampler draws (penalties, temperature
// and filters apply after the chain, so a forbidden token stays
// forbidden), then Accept(token) on each processor in order. Processors
// run on the scheduler goroutine, must not block, and own their state (a
// fresh chain per sequence: n choices have n chains). Logprobs are those of
// the processed distribution. A processor error ends that sequence with
// FinishError. DraftProcessor is the optional extension for speculative
// decoding: masking k proposed tokens' rows at once without advancing.
//
// # Control tokens
//
// Control tokens are never text unless Request.Special asks for them (as
// llama.cpp prints them only with --special): the output stage decodes
// with them skipped, so an end-of-generation id kept by IgnoreEOS or a
// chat marker adds nothing to Result.Text. A model with FIM tokens could
// still draw a FIM marker in a left-to-right request and end or derail the
// text with it, so the engine masks those it cannot mean (a processor
// after token healing's, as a forbidden token): left to right, all of
// them (prefix, suffix, middle, pad, repository, file separator); in a
// FIM request (Request.FIM) the prefix, suffix, middle and repository
// markers, leaving the tokens that end a middle (end of text, pad, file
// separator).
//
// # Speculative decoding
//
// With Options.Spec a Proposer guesses how a decoding sequence goes on:
// prompt lookup (Ngram: the tokens that followed the latest earlier
// occurrence of the sequence's last 2–4 tokens, in its prompt or output)
// or a draft model (Draft: a smaller model of the same vocabulary decoding
// greedily). The step then feeds the sequence's last token and its k
// proposals d_1..d_k at the next positions, every one with logits, beside
// the other sequences' prefill and decode tokens: one batched Forward
// returns k+1 rows. The driver draws from row j (after the tokens and
// d_1..d_j) exactly as plain decoding draws — processors' Process, the
// sampler, processors' Accept, the output stage — and goes on to row j+1
// only while the drawn token equals d_{j+1}; the first token that differs
// is kept (it is the target's own draw), and so is the draw after all k
// proposals. Each emitted token costs one draw from its own row, in order,
// so logits processors see the proposals in order with their state after
// the tokens before, stop strings and max tokens end the output on the
// exact token they would without speculation, and the output is the same
// token for token: greedy ids are identical, and seeded sampling gives the
// ids plain decoding gives with the same seed. That is the rejection rule
// of Leviathan et al. and Chen et al. for a proposal that is a point mass
// (prompt lookup, and a greedy draft): accept d with probability p(d),
// else draw from p without d renormalised — here realised by drawing
// x ~ p and keeping d iff x = d, so the target distribution holds
// exactly. (Identity needs batch-invariant logits: a verification row must
// equal the decode row it replaces bit for bit, which holds for the float
// kernels; see the batching note under "One step of the scheduler".)
//
// The cache: positions of rejected proposals are rolled back
// (kvcache.Truncate to the accepted length; blocks past it go back to
// the pool) and only blocks full of accepted tokens are registered in the
// prefix cache. Proposals are bounded by the step budget (one token stays
// reserved for each later running sequence), the context and the free
// blocks: a proposal that does not fit is dropped, never a reason to
// preempt.
//
// k adapts (unless SpecOptions.Fixed): verifying k proposals lengthens the
// step by k tokens, which pays when the model's step time is mostly
// fixed cost (reading the weights) and the proposals land. The engine
// fits step time = a + b·tokens over recent decode steps and each
// sequence tracks the rate α at which its proposals are accepted; it
// proposes the k ≤ K that maximises (α + … + α^k)·T − S·b·k (S decoding
// sequences, T = a + b·S), or nothing, then one probe proposal every 64
// decode steps. Request.NoSpeculation turns speculation off per request;
// Stats counts drafts (verifications), proposed and accepted tokens, and
// acceptance per position.
//
// # n > 1
//
// A request with N choices is prefilled once. When the prompt's logits
// come back, the sequence forks into N sequences that share the prompt's
// KV blocks (kvcache.Fork; each copies the shared last partial block before
// writing into it), and each choice draws its first token from the same
// logits with its own processors and sampler. Seed convention: choice i
// uses seed + i, where seed is Policy.Seed (or the random seed the first
// sampler picked), so choice i equals a lone request with seed + i. Tokens
// carry their choice's Index; Stream.Results holds one Result per choice.
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
	"nanoserve/grammar"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/sample"
	"nanoserve/tensor"
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

// MaxN is the most choices one request may ask for.
const MaxN = 16

var (
	// ErrPromptTooLong is wrapped by every *PromptTooLongError.
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

// PromptTooLongError is returned by Submit when a prompt cannot fit: it
// has Tokens tokens and at most Limit fit (the context length, or the
// whole KV cache when that is smaller). errors.Is(err, ErrPromptTooLong).
type PromptTooLongError struct {
	Tokens, Limit int
	Cache         bool // Limit is the KV cache's capacity, not the context length
}

func (e *PromptTooLongError) Error() string {
	if e.Cache {
		return fmt.Sprintf("engine: prompt too long: prompt of %d tokens exceeds the KV cache's %d positions", e.Tokens, e.Limit)
	}
	return fmt.Sprintf("engine: prompt too long: prompt of %d tokens exceeds context length %d", e.Tokens, e.Limit)
}

func (e *PromptTooLongError) Unwrap() error { return ErrPromptTooLong }

// RequestError is returned by Submit for a request that is invalid in
// itself (bad token ids, an empty prompt, a bad N); Field names the part.
type RequestError struct {
	Field, Msg string
}

func (e *RequestError) Error() string { return "engine: " + e.Msg }

// Options configure an Engine. Zero values pick the defaults.
type Options struct {
	CtxSize        int  // KV positions per sequence (≤ 0: the model's context length)
	PrefillChunk   int  // most prompt tokens one sequence feeds per step (≤ 0: MaxBatchTokens)
	CacheTokens    int  // KV positions shared by all sequences (< CtxSize: CtxSize)
	MaxBatchTokens int  // tokens per Forward step (≤ 0: 512; raised to MaxSeqs)
	MaxSeqs        int  // sequences running at once (≤ 0: 16)
	MaxQueue       int  // requests waiting for admission before ErrOverloaded (≤ 0: 256)
	NoPrefixCache  bool // never reuse other requests' cached blocks
	Spec           SpecOptions
	// StateSnapshotEvery (hybrid models with the prefix cache): a prompt's
	// recurrent state is saved at every multiple of this many positions
	// (rounded up to whole blocks) and at its last block boundary, for
	// later requests that share the prefix to resume from (≤ 0: 256).
	StateSnapshotEvery int

	// KVType is the KV cache's element type: tensor.F32 (the zero value,
	// exact), F16 (the CLI's default, as llama.cpp's) or Q8_0.
	KVType tensor.DType

	Grammar GrammarOptions // structured output's limits (constrain.go)
}

// forwarder is what the engine needs of a model: one batched forward pass
// (see model.Model.Forward). Tests substitute a fake.
type forwarder interface {
	Forward(b model.Batch, c *kvcache.Cache) ([]float32, error)
}

// Engine runs generation requests on one model. It is safe for concurrent
// use; Close stops its scheduler.
type Engine struct {
	m        *model.Model // nil with a fake forwarder
	fw       forwarder
	tok      *tokenizer.Tokenizer
	vocab    int
	eog      []int
	cache    *kvcache.Cache
	ctx      int
	opts     Options // resolved
	defaults sample.Policy
	spec     SpecOptions // resolved
	proposer Proposer    // nil: no speculation
	cost     stepCost    // step time fit for adaptive k (scheduler goroutine)

	gvOnce sync.Once // builds gv (GrammarVocab)
	gv     *grammar.Vocab
	gvErr  error
	grams  grammarCache

	mu       sync.Mutex // protects the following fields
	inbox    []*seq     // submitted, not yet handed to the scheduler
	nWaiting int        // sequences the scheduler had waiting after its last step
	nextID   uint64
	closed   bool
	stats    Stats

	beat      atomic.Int64  // unix ns of the scheduler loop's latest iteration; 0: not running
	wake      chan struct{} // (cap 1) something changed: new request, cancellation
	idle      chan func()   // run on the scheduler goroutine when it is idle (whenIdle)
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// cmu is held by the scheduler goroutine for a whole step and by
	// Session methods; it protects the following fields (and sessions'
	// block tables).
	cmu     sync.Mutex
	sch     *scheduler
	scratch []float32 // (vocab) a fork's copy of the logits it shares
	ending  []*choice // choices that ended during this step, delivered after it
	landed  []*Stream // streams that got tokens during this step, woken after it
	specAll specState // every verification's record: where new sequences' acceptance starts
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
	o := resolve(opts, ctx)
	if _, err := resolveSpec(&o.Spec); err != nil {
		return nil, err
	}
	// Hybrid models: recurrent-state slots for the running sequences and
	// as many again for snapshots (speculation, saved prefix states).
	cache, err := m.NewCacheSeqs(o.CacheTokens, o.KVType, StateSlots(o.MaxSeqs))
	if err != nil {
		return nil, err
	}
	defaults := sample.Defaults()
	if len(m.Gen.Sampling) > 0 {
		if p, _, err := sample.FromGenerationConfig(m.Gen.Sampling); err == nil && p.Validate() == nil {
			defaults = p
		}
	}
	e := start(m, m.Tokenizer, m.Vocab, m.Gen.EOG, cache, o, defaults)
	e.m = m
	return e, nil
}

// StateSlots is the number of recurrent-state slots a hybrid model's
// engine allocates for maxSeqs running sequences (each StateBytes, inside
// the KV cache's memory): one per sequence and one per sequence for its
// snapshot (speculation) or for saved prefix states.
func StateSlots(maxSeqs int) int { return 2 * maxSeqs }

// resolve fills in opts' defaults for a context of ctx positions.
func resolve(o Options, ctx int) Options {
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
	if o.StateSnapshotEvery <= 0 {
		o.StateSnapshotEvery = 256
	}
	// Any one sequence fits the pool alone, so a request that passes the
	// context check can always run to its end.
	o.CacheTokens = max(o.CacheTokens, ctx)
	return o
}

// start makes an engine over any forwarder and starts its goroutine.
func start(fw forwarder, tok *tokenizer.Tokenizer, vocab int, eog []int, cache *kvcache.Cache, o Options, defaults sample.Policy) *Engine {
	e := &Engine{fw: fw, tok: tok, vocab: vocab, eog: eog, cache: cache, ctx: o.CtxSize, opts: o, defaults: defaults,
		wake: make(chan struct{}, 1), idle: make(chan func()), quit: make(chan struct{}), done: make(chan struct{}),
		sch: newScheduler(cache, o)}
	e.spec = o.Spec
	e.proposer, _ = resolveSpec(&e.spec) // checked by New (tests pass valid options)
	if e.proposer != nil {
		e.sch.propose = e.propose
		e.stats.SpecAcceptedPerPos = make([]int64, e.spec.K)
	}
	e.stats.KVBlocksTotal, e.stats.KVBlockSize = cache.NumBlocks, cache.BlockSize
	e.stats.StateSlotsTotal, e.stats.StateBytes = cache.StateSlots(), 4*int64(cache.StateFloats())
	e.beat.Store(time.Now().UnixNano())
	go e.loop()
	return e
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

// Tokenizer is the model's tokenizer (for logprob token texts and the
// like; Submit tokenizes prompts itself).
func (e *Engine) Tokenizer() *tokenizer.Tokenizer { return e.tok }

// Defaults is the model's default sampling policy: its
// generation_config.json over sample.Defaults, parsed once by New.
func (e *Engine) Defaults() sample.Policy { return e.defaults }

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
	// N is the number of choices (≤ 1: one; at most MaxN; not with a
	// Session): the prompt is prefilled once and forked (see "n > 1").
	N int
	// Processors, if set, is called once per sequence (once per choice)
	// and returns that sequence's logits processors, which run in order
	// after the engine's own (token healing). See "Logits processors".
	Processors func() []LogitsProcessor
	// Budget, if set, is told by Submit, once the prompt is tokenized and
	// before anything is queued, how many tokens the output may take:
	// Policy.MaxTokens capped by the context left after the prompt. An
	// error refuses the request (a grammar whose shortest output cannot
	// fit; return a *RequestError to name the field).
	Budget func(tokens int) error
	// NoSpeculation turns speculative decoding off for this request (the
	// output is the same either way; this only changes how it is computed).
	NoSpeculation bool
	// Special renders control tokens (end-of-generation ids kept by
	// IgnoreEOS, FIM markers, ...) as their text in the output, as
	// llama.cpp's --special; off, they are never text. See "Control tokens".
	Special bool
	// NonEmpty masks the end-of-generation tokens until the output has
	// visible (non-space) text, so a completion is never empty (token
	// healing's re-drawn prompt text does not count). A completion model's
	// CLI and server set it: an end right after the prompt shows nothing.
	NonEmpty bool
	// FIM says the prompt is a fill-in-the-middle layout (prefix, suffix,
	// middle markers): the model may end the middle with the FIM pad or
	// file separator. Off (left to right), every FIM marker is masked from
	// sampling. See "Control tokens".
	FIM bool
}

// Token is one generated token as it lands.
type Token struct {
	Index int // the choice it belongs to (0 unless Request.N > 1)
	ID    int
	Text  string // decoded text safe to show now (complete UTF-8, stop strings held back); may be ""
	// Logprob of ID under the processed distribution and the top
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

// Result is a finished generation (one choice).
type Result struct {
	Index     int   // the choice
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
	// Hybrid models: recurrent-state slots (one per sequence holding a
	// state, StateBytes each, inside the KV cache's memory); 0 otherwise.
	StateSlotsUsed  int   `json:"state_slots_used,omitempty"`
	StateSlotsTotal int   `json:"state_slots_total,omitempty"`
	StateBytes      int64 `json:"state_bytes,omitempty"` // of one slot

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

	// Speculative decoding (zero when off): verification steps of one
	// sequence with at least one proposal, proposed tokens, accepted
	// proposals, and accepted proposals by position in the draft (len K).
	SpecDrafts         int64   `json:"spec_drafts"`
	SpecDraftTokens    int64   `json:"spec_draft_tokens"`
	SpecAcceptedTokens int64   `json:"spec_accepted_tokens"`
	SpecAcceptedPerPos []int64 `json:"spec_accepted_per_pos,omitempty"`
}

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Waiting = e.nWaiting + len(e.inbox)
	s.SpecAcceptedPerPos = slices.Clone(s.SpecAcceptedPerPos)
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
	e.sch.dropSession(s)
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

// StartOfDocument is the token an empty prompt becomes: BOS if the
// vocabulary has one (whether or not the model adds it to prompts), else
// the end-of-text token that separates documents.
func (e *Engine) StartOfDocument() (int, bool) {
	if id, ok := e.tok.BOS(); ok && id < e.vocab {
		return id, true
	}
	if id, ok := e.tok.EOS(); ok && id < e.vocab {
		return id, true
	}
	return 0, false
}

// Encode tokenizes a request's prompt as the engine will.
func (e *Engine) Encode(req *Request) ([]int, error) {
	if req.PromptIDs != nil {
		for _, id := range req.PromptIDs {
			if id < 0 || id >= e.tok.Size() || id >= e.vocab {
				return nil, &RequestError{"prompt", fmt.Sprintf("prompt token id %d outside the vocabulary (%d)", id, min(e.tok.Size(), e.vocab))}
			}
		}
		if len(req.PromptIDs) == 0 {
			return nil, &RequestError{"prompt", "empty prompt"}
		}
		return req.PromptIDs, nil
	}
	// Refuse, before tokenizing, a prompt too long in bytes for any
	// tokenization of it to fit the context (tokenizing one 4 MB word costs
	// seconds and hundreds of MB).
	if err := e.tok.CheckPromptBytes(req.Prompt, e.ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPromptTooLong, err)
	}
	var ids []int
	if bos, ok := e.tok.BOS(); ok && e.tok.AddBOS() && !req.NoBOS {
		ids = append(ids, bos)
	}
	ids = append(ids, e.tok.Encode(req.Prompt, req.ParseSpecial)...)
	if len(ids) == 0 {
		// An empty prompt starts a document: BOS where the model has one,
		// else its end-of-text token, which separates training documents
		// (GPT-2 style; the built-in model's BOS is its <|endoftext|>).
		if id, ok := e.StartOfDocument(); ok {
			return []int{id}, nil
		}
		return nil, &RequestError{"prompt", "empty prompt and the model has neither a BOS nor an end-of-text token to start a document with"}
	}
	return ids, nil
}

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
		sess: req.Session, c: choices[0], forks: choices[1:]}
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

// Stream is a submitted request: its tokens as they land and its results.
// Tokens and Result are meant for one goroutine.
type Stream struct {
	e      *Engine
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // protects the following fields
	toks   []Token    // landed, not yet taken by Tokens
	res    []*Result  // per choice, set when it ends
	left   int        // choices still running
	notify chan struct{}
	dirty  bool // (under the engine's cmu) in the engine's landed list

	yielded   []int // per choice: tokens Tokens yielded (Logprobs entries)
	delivered []int // per choice: of those, generated ids (not Stop)
	text      [][]byte
	broke     bool
}

// N is the number of choices.
func (st *Stream) N() int { return len(st.res) }

// Cancel stops the request (its results end "cancelled").
func (st *Stream) Cancel() { st.cancel(); st.e.poke() }

// Tokens yields every choice's tokens as they land (Token.Index tells the
// choice) and returns when all choices have ended. Breaking out of the
// loop cancels the request: the results then hold exactly the tokens
// yielded, with finish reason "cancelled".
func (st *Stream) Tokens() iter.Seq[Token] {
	return func(yield func(Token) bool) {
		n := len(st.res)
		st.yielded, st.delivered, st.text = make([]int, n), make([]int, n), make([][]byte, n)
		for {
			toks, end := st.take()
			for _, t := range toks {
				st.yielded[t.Index]++
				if !t.Stop {
					st.delivered[t.Index]++
				}
				st.text[t.Index] = append(st.text[t.Index], t.Text...)
				if !yield(t) {
					st.broke = true
					st.Cancel()
					st.wait()
					return
				}
			}
			if end {
				return
			}
			st.await()
		}
	}
}

// take returns the landed tokens and whether every choice has ended (then
// they are the last: a choice ends after its last token landed).
func (st *Stream) take() ([]Token, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.toks
	st.toks = nil
	return t, st.left == 0
}

// await blocks until something lands; when the request's context ends it
// wakes the scheduler once, which reaps the request.
func (st *Stream) await() {
	select {
	case <-st.notify:
	case <-st.ctx.Done():
		st.e.poke()
		<-st.notify
	}
}

// wait blocks until every choice has ended.
func (st *Stream) wait() {
	for {
		st.mu.Lock()
		left := st.left
		st.mu.Unlock()
		if left == 0 {
			return
		}
		st.await()
	}
}

// Result waits for the request to end and returns choice 0's Result.
func (st *Stream) Result() *Result { return st.Results()[0] }

// Results waits for the request to end and returns every choice's Result,
// by index.
func (st *Stream) Results() []*Result {
	st.wait()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.broke {
		// The scheduler may have run ahead of the caller: keep what the
		// caller saw.
		for i, res := range st.res {
			res.IDs = res.IDs[:min(st.delivered[i], len(res.IDs))]
			res.Logprobs = res.Logprobs[:min(st.yielded[i], len(res.Logprobs))]
			res.Text = string(st.text[i])
			res.Usage.CompletionTokens = len(res.IDs)
			res.FinishReason, res.Err = FinishCancelled, nil
		}
		st.broke = false
	}
	return st.res
}

// push lands t; the reader is woken once per step, after it (deliver), not
// per token: a speculative step lands several tokens, and each wake of a
// parked reader costs the scheduler a futex call.
func (st *Stream) push(t Token) {
	st.mu.Lock()
	st.toks = append(st.toks, t)
	st.mu.Unlock()
}

func (st *Stream) finish(res *Result) {
	st.mu.Lock()
	st.res[res.Index] = res
	st.left--
	if st.left == 0 {
		st.cancel() // release the context's resources
	}
	st.mu.Unlock()
	st.signal()
}

func (st *Stream) signal() {
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

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
