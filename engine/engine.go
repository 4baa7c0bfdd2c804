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
//     from the prefix cache); the head of the queue is never overtaken.
//     In 2 and 3, prompt work stops joining the step once a prompt
//     completes in it and it holds at least 64 prompt tokens: prompts that
//     arrive together get their first tokens one after another instead of
//     all at the end of one long step (decodes ride in every step);
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
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"nanoserve/grammar"
	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/sample"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
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
	slotView []Slot // the slot view as of the latest step (slots.go)

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
	slots   slotTable // which running sequence holds which slot of the view (slots.go)
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
		sch: newScheduler(cache, o), slots: newSlotTable(o.MaxSeqs)}
	e.slotView = slices.Clone(e.slots.view)
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

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Waiting = e.nWaiting + len(e.inbox)
	s.SpecAcceptedPerPos = slices.Clone(s.SpecAcceptedPerPos)
	return s
}

// poke wakes the scheduler.
func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
