package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"nanoserve/grammar"
	"nanoserve/tokenizer"
)

// Structured output. A grammar.Constraint (a JSON Schema, GBNF grammar,
// regex or choice list compiled against the engine's vocabulary) becomes a
// per-sequence LogitsProcessor: before each draw every token the grammar
// does not allow next gets -Inf, and the drawn token advances the
// automaton. End-of-generation (and the request's stop ids) are allowed
// only where the output is complete, and with max_tokens the mask keeps
// a complete output within the budget (see package grammar), so a
// constrained sequence ends with output that parses.

// GrammarVocab is the engine's vocabulary as package grammar sees it: the
// bytes each id spells (control, unknown and unused tokens, and ids past
// the tokenizer, spell nothing) and the end-of-generation ids. Built once.
func (e *Engine) GrammarVocab() (*grammar.Vocab, error) {
	e.gvOnce.Do(func() { e.gv, e.gvErr = buildGrammarVocab(e.tok, e.vocab, e.eog) })
	return e.gv, e.gvErr
}

func buildGrammarVocab(tok *tokenizer.Tokenizer, vocab int, eog []int) (*grammar.Vocab, error) {
	toks := make([][]byte, vocab)
	special := make([]bool, vocab)
	for id := range vocab {
		if id >= tok.Size() {
			special[id] = true
			continue
		}
		switch tok.TokenType(id) {
		case tokenizer.TypeControl, tokenizer.TypeUnknown, tokenizer.TypeUnused:
			special[id] = true
		}
		toks[id] = []byte(tok.Piece(id))
	}
	var ends []int
	for _, id := range append(slices.Clone(eog), tok.EOG()...) {
		if id >= 0 && id < vocab && !slices.Contains(ends, id) {
			ends = append(ends, id)
		}
	}
	return grammar.NewVocab(toks, special, ends)
}

// GrammarProcessor constrains one sequence to c. maxTokens > 0 makes the
// mask budget-aware (an error wrapping grammar.ErrBudget when even the
// shortest output does not fit); stopIDs are allowed only where the output
// is complete, like end-of-generation.
func GrammarProcessor(c *grammar.Constraint, maxTokens int, stopIDs []int) (LogitsProcessor, error) {
	m, err := c.NewMatcher(maxTokens)
	if err != nil {
		return nil, err
	}
	return &grammarProcessor{m: m, stop: stopIDs}, nil
}

type grammarProcessor struct {
	m    *grammar.Matcher
	stop []int
	mask []uint64
}

func (g *grammarProcessor) Process(logits []float32) error {
	if need := (len(logits) + 63) / 64; len(g.mask) != need {
		g.mask = make([]uint64, need)
	}
	n, err := g.m.Mask(g.mask)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	accepting := g.m.Accepting()
	for i := range logits {
		if g.mask[i>>6]>>(i&63)&1 == 0 && !(accepting && slices.Contains(g.stop, i)) {
			logits[i] = negInf
		}
	}
	if n == 0 && !accepting {
		return fmt.Errorf("engine: the grammar allows no token here")
	}
	return nil
}

func (g *grammarProcessor) Accept(token int) error {
	if g.m.Accepting() && slices.Contains(g.stop, token) {
		return nil
	}
	return g.m.Accept(token)
}

// MinTokensProcessor forbids the end-of-generation ids and stopIDs until n
// tokens have been generated (vLLM's min_tokens).
func (e *Engine) MinTokensProcessor(n int, stopIDs []int) LogitsProcessor {
	ids := slices.Clone(stopIDs)
	for _, id := range append(slices.Clone(e.eog), e.tok.EOG()...) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return &minTokens{left: n, ids: ids}
}

type minTokens struct {
	left int
	ids  []int
}

func (m *minTokens) Process(logits []float32) error {
	if m.left <= 0 {
		return nil
	}
	for _, id := range m.ids {
		if id >= 0 && id < len(logits) {
			logits[id] = negInf
		}
	}
	return nil
}

func (m *minTokens) Accept(int) error { m.left--; return nil }

// GrammarOptions bound structured output: what one compile may take and
// what the compiled constraints kept for reuse may hold. Zero values pick
// the defaults.
type GrammarOptions struct {
	// Limits bound one compile (and each mask computation after it); see
	// grammar.Limits. Zero fields: grammar.DefaultLimits.
	Limits grammar.Limits
	// CacheBytes bounds the compiled constraints kept by content hash,
	// their mask caches included (≤ 0: 256 MiB).
	CacheBytes int64
	// Compiles is how many compiles run at once (≤ 0: half the CPUs, at
	// least 1); more wait for a turn (or their context).
	Compiles int
}

const defaultGrammarCacheBytes = 256 << 20

// compileStarted, when set (tests), is called by Constraint once a compile
// holds its slot.
var compileStarted func(ctx context.Context)

// grammarCache holds compiled constraints by content hash, least recently
// used first out once their bytes pass the bound, and the compile slots.
type grammarCache struct {
	once sync.Once
	sem  chan struct{} // compile slots

	mu    sync.Mutex // protects m and clock
	m     map[[32]byte]*cachedGrammar
	clock uint64
}

type cachedGrammar struct {
	c    *grammar.Constraint
	used uint64 // clock at last use
}

func (g *grammarCache) get(key [32]byte) *grammar.Constraint {
	g.mu.Lock()
	defer g.mu.Unlock()
	x, ok := g.m[key]
	if !ok {
		return nil
	}
	g.clock++
	x.used = g.clock
	return x.c
}

// put adds c, then drops the least recently used entries until the
// entries' current bytes fit limit (c itself stays: it is about to be
// used, and it fits by its own Limits.Bytes).
func (g *grammarCache) put(key [32]byte, c *grammar.Constraint, limit int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[[32]byte]*cachedGrammar{}
	}
	g.clock++
	g.m[key] = &cachedGrammar{c: c, used: g.clock}
	for {
		total := int64(0)
		var oldest [32]byte
		var oldestUse uint64 = math.MaxUint64
		for k, x := range g.m {
			total += x.c.Bytes()
			if k != key && x.used < oldestUse {
				oldest, oldestUse = k, x.used
			}
		}
		if total <= limit || oldestUse == math.MaxUint64 {
			return
		}
		delete(g.m, oldest)
	}
}

// CachedGrammarBytes is the memory the cached compiled constraints hold
// now (at most GrammarOptions.CacheBytes after each compile).
func (e *Engine) CachedGrammarBytes() int64 {
	e.grams.mu.Lock()
	defer e.grams.mu.Unlock()
	total := int64(0)
	for _, x := range e.grams.m {
		total += x.c.Bytes()
	}
	return total
}

// Constraint kinds for Engine.Constraint.
const (
	ConstraintJSONSchema = "json_schema" // spec: the schema (JSON text)
	ConstraintJSONObject = "json_object" // spec ignored: any JSON object
	ConstraintGBNF       = "grammar"     // spec: GBNF text (root rule "root")
	ConstraintRegex      = "regex"       // spec: a regular expression (package grammar's subset)
	ConstraintChoice     = "choice"      // spec: a JSON array of strings
	ConstraintWrapped    = "wrapped"     // spec: WrappedSpec as JSON (a JSON Schema inside literal text)
)

// WrappedSpec is the spec of ConstraintWrapped: a value valid for Schema
// inside the wrapper's text (a forced tool call in the Hermes or Mistral
// format; see grammar.Wrap).
type WrappedSpec struct {
	grammar.Wrapper
	Schema json.RawMessage
}

// Constraint compiles (or finds in the cache, keyed by the SHA-256 of kind
// and spec) a constraint over the engine's vocabulary. Errors come from
// package grammar and name what cannot be enforced; a compile past its
// limits is a *grammar.LimitError naming the limit. The compile runs on
// the caller's goroutine (never the scheduler's), in one of
// GrammarOptions.Compiles slots, and stops when ctx is done (waiting for a
// slot, too): the error then wraps ctx's cause.
func (e *Engine) Constraint(ctx context.Context, kind, spec string) (*grammar.Constraint, error) {
	key := sha256.Sum256([]byte(kind + "\x00" + spec))
	if c := e.grams.get(key); c != nil {
		return c, nil
	}
	v, err := e.GrammarVocab()
	if err != nil {
		return nil, err
	}
	opts := e.opts.Grammar
	e.grams.once.Do(func() {
		n := opts.Compiles
		if n <= 0 {
			n = max(1, runtime.GOMAXPROCS(0)/2)
		}
		e.grams.sem = make(chan struct{}, n)
	})
	select {
	case e.grams.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("engine: waiting to compile the constraint: %w", context.Cause(ctx))
	}
	defer func() { <-e.grams.sem }()
	if compileStarted != nil {
		compileStarted(ctx)
	}
	b := grammar.NewBudget(ctx, opts.Limits)
	var g *grammar.Grammar
	switch kind {
	case ConstraintJSONSchema:
		g, err = b.FromJSONSchema([]byte(spec))
	case ConstraintJSONObject:
		g = grammar.JSONObject()
	case ConstraintGBNF:
		g, err = b.ParseGBNF(spec)
	case ConstraintRegex:
		g, err = b.FromRegex(spec)
	case ConstraintChoice:
		var choices []string
		if err = json.Unmarshal([]byte(spec), &choices); err == nil {
			g, err = b.FromChoices(choices)
		}
	case ConstraintWrapped:
		var ws WrappedSpec
		if err = json.Unmarshal([]byte(spec), &ws); err != nil {
			err = fmt.Errorf("engine: wrapped constraint spec: %v", err)
		} else if g, err = b.FromJSONSchema(ws.Schema); err == nil {
			g, err = grammar.Wrap(g, ws.Wrapper)
		}
	default:
		err = fmt.Errorf("engine: unknown constraint kind %q", kind)
	}
	if err != nil {
		return nil, err
	}
	c, err := b.Compile(g, v)
	if err != nil {
		return nil, err
	}
	limit := opts.CacheBytes
	if limit <= 0 {
		limit = defaultGrammarCacheBytes
	}
	e.grams.put(key, c, limit)
	return c, nil
}
