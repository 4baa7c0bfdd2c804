package grammar

import (
	"context"
	"fmt"
)

// The budget. Every stage of the pipeline — a front end building
// expressions, lowering them to byte-level rules, the shortest-completion
// fixed point, the automaton's stacks and the token-trie walks behind a
// mask — counts what it creates and does where it does it, against three
// limits:
//
//   - Nodes: grammar nodes created (expressions, lowered rules and
//     positions, hash-consed automaton stacks);
//   - Bytes: the bytes those take (estimated per allocation: the size of
//     the record or slice allocated);
//   - Steps: units of work (an expression or schema visited, a fixed-point
//     update, a stack advanced over a byte, a trie edge followed), the
//     CPU-time proxy, never a clock reading, so the same input ends at the
//     same point on any machine. A mask computation (the first masks of a
//     compile, each later Mask or Accept) may take maskStepsFactor times
//     Steps: its step (one stack over one byte) is that much cheaper than
//     a compile's, and a real schema's first walk over a 151k vocabulary
//     takes up to ~12M of them.
//
// Exceeding one is a *LimitError naming it, checked where the count grows,
// so no input runs past its budget by more than one step. Compilation (front
// end to a Constraint with its first masks computed) draws on one Budget,
// which also carries the request's context: cancelling it stops the
// compile at its next check. After compilation each Mask or Accept call
// gets maskStepsFactor × Steps for itself, and the Constraint's caches
// stay within Bytes (they restart past it).

// Limits bound one compilation; a zero field takes DefaultLimits' value.
type Limits struct {
	Nodes int64 // grammar nodes created
	Bytes int64 // bytes allocated for them
	Steps int64 // work steps per compile (a mask computation: maskStepsFactor × Steps)
}

// DefaultLimits fits every real schema and grammar with a wide margin (the
// 200 generated property-test schemas use at most 100k steps, 33k nodes
// and 2 MiB, the most in a multipleOf intersected with bounds; 100k choices, enum values or GBNF alternatives and 10k required
// properties fit) while keeping one compile to about 2 s of CPU (a step
// costs ~100-250 ns, allocation and collection included) and its
// counted memory to 256 MiB.
func DefaultLimits() Limits {
	return Limits{Nodes: 4 << 20, Bytes: 256 << 20, Steps: 10_000_000}
}

func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.Nodes <= 0 {
		l.Nodes = d.Nodes
	}
	if l.Bytes <= 0 {
		l.Bytes = d.Bytes
	}
	if l.Steps <= 0 {
		l.Steps = d.Steps
	}
	return l
}

// LimitError is a grammar that needs more than a limit allows. Limit is
// "nodes", "bytes" or "steps"; Max the limit's value.
type LimitError struct {
	Limit string
	Max   int64
	Stage string // where it was exceeded: "schema", "gbnf", "lower", "compile", "mask", ...
}

func (e *LimitError) Error() string {
	what := map[string]string{"nodes": "grammar nodes", "bytes": "bytes", "steps": "work steps"}[e.Limit]
	return fmt.Sprintf("grammar: the constraint exceeds its %s limit (more than %d %s while in %s)", e.Limit, e.Max, what, e.Stage)
}

// Budget counts one compilation against its Limits and context. A Budget
// is not safe for concurrent use; once exceeded (or cancelled) it stays so.
type Budget struct {
	ctx                 context.Context
	lim                 Limits
	nodes, bytes, steps int64
	nextCheck           int64 // steps at which the context is next polled
	stage               string
	err                 error
}

// maskStepsFactor scales Limits.Steps for one mask computation.
const maskStepsFactor = 10

// ctxEvery is how many steps pass between polls of the context.
const ctxEvery = 1 << 14

// NewBudget starts a budget. ctx may be nil (never cancelled).
func NewBudget(ctx context.Context, l Limits) *Budget {
	if ctx == nil {
		ctx = context.Background()
	}
	return &Budget{ctx: ctx, lim: l.orDefault(), stage: "compile"} // the first step polls the context
}

func defaultBudget() *Budget { return NewBudget(nil, Limits{}) }

// Limits returns the limits b counts against.
func (b *Budget) Limits() Limits { return b.lim }

// Used returns what b has counted so far.
func (b *Budget) Used() Limits { return Limits{Nodes: b.nodes, Bytes: b.bytes, Steps: b.steps} }

// Err is the first limit exceeded or the context's cancellation, or nil.
func (b *Budget) Err() error { return b.err }

func (b *Budget) fail(limit string, max int64) error {
	if b.err == nil {
		b.err = &LimitError{Limit: limit, Max: max, Stage: b.stage}
	}
	return b.err
}

// step counts n work steps (and polls the context now and then).
func (b *Budget) step(n int64) error {
	if b.err != nil {
		return b.err
	}
	b.steps += n
	if b.steps > b.lim.Steps {
		return b.fail("steps", b.lim.Steps)
	}
	if b.steps >= b.nextCheck {
		b.nextCheck = b.steps + ctxEvery
		if err := b.ctx.Err(); err != nil {
			b.err = fmt.Errorf("grammar: compilation cancelled: %w", context.Cause(b.ctx))
			return b.err
		}
	}
	return nil
}

// alloc counts n nodes taking size bytes.
func (b *Budget) alloc(n, size int64) error {
	if b.err != nil {
		return b.err
	}
	b.nodes += n
	b.bytes += size
	if b.nodes > b.lim.Nodes {
		return b.fail("nodes", b.lim.Nodes)
	}
	if b.bytes > b.lim.Bytes {
		return b.fail("bytes", b.lim.Bytes)
	}
	return nil
}

// Estimated sizes of what the pipeline allocates (64-bit).
const (
	exprBytes = 48  // an expression value with its interface header
	ruleBytes = 96  // a lowered rule: name, alternative list, index entry
	elemBytes = 16  // a lowered position: element + rule index
	nodeBytes = 160 // an interned stack: node record, table entry, successor slice
)

// The linear front ends (their work and memory are proportional to the
// text, which the caller already bounds) check the budget once for the
// text's size; what they build is counted again when lowered.

// ParseGBNF is ParseGBNF within b.
func (b *Budget) ParseGBNF(src string) (*Grammar, error) {
	b.stage = "gbnf"
	if err := b.text(len(src)); err != nil {
		return nil, err
	}
	return ParseGBNF(src)
}

// FromRegex is FromRegex within b.
func (b *Budget) FromRegex(re string) (*Grammar, error) {
	b.stage = "regex"
	if err := b.text(len(re)); err != nil {
		return nil, err
	}
	return FromRegex(re)
}

// FromChoices is FromChoices within b.
func (b *Budget) FromChoices(choices []string) (*Grammar, error) {
	b.stage = "choices"
	n := 0
	for _, c := range choices {
		n += len(c) + 1
	}
	if err := b.text(n); err != nil {
		return nil, err
	}
	return FromChoices(choices)
}

// text counts parsing n bytes of source: a step per byte, and the
// expressions built (about one per 6 bytes of source).
func (b *Budget) text(n int) error {
	if err := b.step(int64(n)); err != nil {
		return err
	}
	return b.alloc(0, int64(n)*exprBytes/6)
}
