package jinja

// Render limits: the part of this fork that is not upstream.
//
// A template is data from a model file, and rendering it is running a small
// program. Three kinds of program take a process down in ways nothing outside
// the interpreter can stop: unbounded recursion (a macro calling itself) grows
// the Go stack until the runtime aborts with "fatal error: stack overflow",
// which recover cannot catch; an unbounded loop never returns, and a goroutine
// cannot be killed; and string or list doubling (x = x + x, 'a' * 10**9)
// allocates gigabytes in a handful of steps. So the evaluator carries a
// budget, shared by every nested evaluator of one render, and checks it where
// the work happens:
//
//   - depth: nested macro and caller() calls (each is one Go call chain deeper);
//   - steps: template nodes executed plus expressions evaluated, which bounds
//     loop iterations of any nesting as well as total time;
//   - output: the size of the rendered text and of any one string value, checked
//     before a repetition, replace or indent builds its result;
//   - alloc: the total bytes of strings and list slots produced by the render.
//
// Parsing is recursive descent too, so nesting of blocks and of expressions
// is bounded at compile time (maxParseDepth).

import (
	"errors"
	"fmt"
	"strings"
)

// Limits bound the work of one render. A zero field takes its DefaultLimits value.
type Limits struct {
	MaxDepth  int   // nested macro / caller() calls
	MaxSteps  int64 // nodes executed + expressions evaluated
	MaxOutput int64 // bytes of the rendered text, and of any one string value
	MaxAlloc  int64 // total bytes of strings (and 24 per list slot) produced
}

// DefaultLimits are generous for any real chat template (the largest known
// render a few thousand steps per message) and small enough that a hostile
// template fails in well under a second with bounded memory.
var DefaultLimits = Limits{
	MaxDepth:  200,
	MaxSteps:  1_000_000,
	MaxOutput: 16 << 20,
	MaxAlloc:  256 << 20,
}

// maxParseDepth bounds the nesting of blocks ({% if %} inside {% for %} ...)
// and of expressions (parentheses, brackets, unary operators) at compile time.
const maxParseDepth = 200

// ErrLimit is matched (errors.Is) by every *LimitError.
var ErrLimit = errors.New("template exceeded a render limit")

// LimitError says which limit a render or compile exceeded.
type LimitError struct {
	What  string // "recursion depth", "steps", "output size", "allocation", "nesting depth"
	Limit int64
}

func (e *LimitError) Error() string {
	switch e.What {
	case "recursion depth":
		return fmt.Sprintf("template exceeded its recursion depth limit (%d nested macro calls)", e.Limit)
	case "steps":
		return fmt.Sprintf("template exceeded its step limit (%d steps; a loop or recursion that does not end?)", e.Limit)
	case "output size":
		return fmt.Sprintf("template output or a string in it exceeded %d bytes", e.Limit)
	case "allocation":
		return fmt.Sprintf("template allocated more than %d bytes of strings and lists", e.Limit)
	case "nesting depth":
		return fmt.Sprintf("template nests blocks or expressions deeper than %d", e.Limit)
	}
	return fmt.Sprintf("template exceeded its %s limit (%d)", e.What, e.Limit)
}

func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// budget is the state of one render's limits; every nested evaluator of the
// render points at the same budget. Renders do not share one, so no lock.
type budget struct {
	lim   Limits
	steps int64
	depth int
	alloc int64
}

func newBudget(l Limits) *budget {
	d := DefaultLimits
	if l.MaxDepth > 0 {
		d.MaxDepth = l.MaxDepth
	}
	if l.MaxSteps > 0 {
		d.MaxSteps = l.MaxSteps
	}
	if l.MaxOutput > 0 {
		d.MaxOutput = l.MaxOutput
	}
	if l.MaxAlloc > 0 {
		d.MaxAlloc = l.MaxAlloc
	}
	return &budget{lim: d}
}

// step counts one node or expression.
func (b *budget) step() error {
	b.steps++
	if b.steps > b.lim.MaxSteps {
		return &LimitError{What: "steps", Limit: b.lim.MaxSteps}
	}
	return nil
}

// enter counts one nested call; leave must follow when it returns nil.
func (b *budget) enter() error {
	if b.depth >= b.lim.MaxDepth {
		return &LimitError{What: "recursion depth", Limit: int64(b.lim.MaxDepth)}
	}
	b.depth++
	return nil
}

func (b *budget) leave() { b.depth-- }

// size checks that a string of n bytes may be built, before building it.
func (b *budget) size(n int64) error {
	if n < 0 || n > b.lim.MaxOutput {
		return &LimitError{What: "output size", Limit: b.lim.MaxOutput}
	}
	return nil
}

// produced charges n bytes to the render's allocation budget.
func (b *budget) produced(n int64) error {
	b.alloc += n
	if b.alloc > b.lim.MaxAlloc {
		return &LimitError{What: "allocation", Limit: b.lim.MaxAlloc}
	}
	return nil
}

// value charges a freshly computed value: its string bytes or list slots.
func (b *budget) value(v Value) error {
	switch {
	case v.IsString():
		n := int64(len(v.AsString()))
		if err := b.size(n); err != nil {
			return err
		}
		return b.produced(n)
	case v.IsList():
		return b.produced(24 * int64(v.AsList().Len()))
	}
	return nil
}

// write appends to the evaluator's output within the output and allocation limits.
func (e *evaluator) write(s string) error {
	if err := e.b.size(int64(e.output.Len()) + int64(len(s))); err != nil {
		return err
	}
	if err := e.b.produced(int64(len(s))); err != nil {
		return err
	}
	e.output.WriteString(s)
	return nil
}

// maxBuiltString caps the strings the builtins below may build from
// repetition counts and widths given by the template, before they are built;
// the render's own output limit then applies to the result.
const maxBuiltString = 64 << 20

// replacedLen is the length of strings.Replace(s, old, new, count), computed
// without building it.
func replacedLen(s, old, new string, count int) int64 {
	n := int64(strings.Count(s, old))
	if count >= 0 && int64(count) < n {
		n = int64(count)
	}
	return int64(len(s)) + n*(int64(len(new))-int64(len(old)))
}

func checkBuilt(n int64) error {
	if n < 0 || n > maxBuiltString {
		return &LimitError{What: "output size", Limit: maxBuiltString}
	}
	return nil
}

// PrintedSizeOver reports whether printing or serializing v (its text, its
// list/dict repr, or JSON) would take more than limit bytes. Lists may hold
// the same large string many times (a loop appending one value), so a small
// value can print as terabytes; the walk stops as soon as the running size
// passes limit, so it visits at most about limit/2 items.
func PrintedSizeOver(v Value, limit int64) bool {
	n := int64(0)
	return sizeWalk(v, &n, limit)
}

func sizeWalk(v Value, n *int64, limit int64) bool {
	switch v.kind {
	case KindString:
		*n += int64(len(v.AsString())) + 2
	case KindList:
		*n += 2
		for _, item := range v.AsList().Items {
			*n += 2
			if *n > limit || sizeWalk(item, n, limit) {
				return true
			}
		}
	case KindDict:
		d := v.AsDict()
		*n += 2
		for _, k := range d.Keys {
			*n += int64(len(k)) + 6
			if *n > limit {
				return true
			}
			if item, ok := d.Get(k); ok && sizeWalk(item, n, limit) {
				return true
			}
		}
	default:
		*n += 24
	}
	return *n > limit
}

// printable checks that printing v stays within the output limit, before printing it.
func (e *evaluator) printable(v Value) error {
	if (v.IsList() || v.IsDict()) && PrintedSizeOver(v, e.b.lim.MaxOutput) {
		return &LimitError{What: "output size", Limit: e.b.lim.MaxOutput}
	}
	return nil
}

// serializable is printable for the builtins, which have no budget: the
// fixed cap maxBuiltString.
func serializable(v Value) error {
	if (v.IsList() || v.IsDict()) && PrintedSizeOver(v, maxBuiltString) {
		return &LimitError{What: "output size", Limit: maxBuiltString}
	}
	return nil
}
