package engine

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
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
	n := g.m.Mask(g.mask)
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

// grammarCache holds compiled constraints by content hash.
type grammarCache struct {
	mu sync.Mutex // protects m
	m  map[[32]byte]*grammar.Constraint
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

const maxCachedGrammars = 16 // each holds at most the grammar mask-cache bound (32 MiB)

// Constraint compiles (or finds in the cache, keyed by the SHA-256 of kind
// and spec) a constraint over the engine's vocabulary. Errors come from
// package grammar and name what cannot be enforced.
func (e *Engine) Constraint(kind, spec string) (*grammar.Constraint, error) {
	key := sha256.Sum256([]byte(kind + "\x00" + spec))
	e.grams.mu.Lock()
	c, ok := e.grams.m[key]
	e.grams.mu.Unlock()
	if ok {
		return c, nil
	}
	v, err := e.GrammarVocab()
	if err != nil {
		return nil, err
	}
	var g *grammar.Grammar
	switch kind {
	case ConstraintJSONSchema:
		g, err = grammar.FromJSONSchema([]byte(spec))
	case ConstraintJSONObject:
		g = grammar.JSONObject()
	case ConstraintGBNF:
		g, err = grammar.ParseGBNF(spec)
	case ConstraintRegex:
		g, err = grammar.FromRegex(spec)
	case ConstraintChoice:
		var choices []string
		if err = json.Unmarshal([]byte(spec), &choices); err == nil {
			g, err = grammar.FromChoices(choices)
		}
	case ConstraintWrapped:
		var ws WrappedSpec
		if err = json.Unmarshal([]byte(spec), &ws); err != nil {
			err = fmt.Errorf("engine: wrapped constraint spec: %v", err)
		} else if g, err = grammar.FromJSONSchema(ws.Schema); err == nil {
			g, err = grammar.Wrap(g, ws.Wrapper)
		}
	default:
		err = fmt.Errorf("engine: unknown constraint kind %q", kind)
	}
	if err != nil {
		return nil, err
	}
	if c, err = grammar.Compile(g, v); err != nil {
		return nil, err
	}
	e.grams.mu.Lock()
	if e.grams.m == nil || len(e.grams.m) >= maxCachedGrammars {
		e.grams.m = map[[32]byte]*grammar.Constraint{}
	}
	e.grams.m[key] = c
	e.grams.mu.Unlock()
	return c, nil
}
