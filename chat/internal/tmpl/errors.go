package tmpl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a parse or render error at a place in the template: line and
// column (1-based, columns count characters), the construct being read or
// run ("{% for %}", "filter 'join'", ...) and what went wrong, phrased as what
// was expected where possible.
type Error struct {
	Line, Col int
	Construct string
	Msg       string
	Err       error // wrapped cause (a *LimitError, a raised error, ...), or nil
}

func (e *Error) Error() string {
	s := fmt.Sprintf("line %d, column %d", e.Line, e.Col)
	if e.Construct != "" {
		s += ": " + e.Construct
	}
	return s + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// position converts a byte offset into a line and a column.
func position(src string, pos int) (line, col int) {
	pos = min(max(pos, 0), len(src))
	line = 1 + strings.Count(src[:pos], "\n")
	start := strings.LastIndexByte(src[:pos], '\n') + 1
	return line, 1 + utf8.RuneCountInString(src[start:pos])
}

func newError(src string, pos int, construct, msg string) *Error {
	l, c := position(src, pos)
	return &Error{Line: l, Col: c, Construct: construct, Msg: msg}
}

func quoteRune(r rune) string { return strconv.QuoteRune(r) }

func decodeRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }

// Limits bound the work of one render. A zero field takes its DefaultLimits
// value. The evaluator checks them where the work happens, so no template,
// however written, can take more than these from the process:
//
//   - MaxDepth: nested macro and caller() calls (each is a deeper Go call
//     chain; unbounded recursion would overflow the stack, which is fatal);
//   - MaxSteps: statements executed plus expressions evaluated plus items
//     visited by filters such as map and select (bounds time);
//   - MaxOutput: bytes of the rendered text, and of any one string built —
//     checked before a repetition, replace, join, indent or print builds it;
//   - MaxAlloc: total bytes of strings and list slots (the size of a Value each) the
//     render builds.
type Limits struct {
	MaxDepth  int
	MaxSteps  int64
	MaxOutput int64
	MaxAlloc  int64
}

// DefaultLimits. Steps: the heaviest real template measured (Gemma 4, whose
// per-message look-ahead makes it quadratic) takes about 2.7·n² steps for n
// messages — 457k for 400 messages, at ~76 ns a step — so 4M steps admit
// some 1200 messages with any known template, while a runaway loop stops in
// well under a second or two. Output: 16 MiB is four times the largest
// request body. Allocation: 256 MiB bounds the memory one render can take.
// Depth: real templates nest macro calls a handful deep.
var DefaultLimits = Limits{
	MaxDepth:  200,
	MaxSteps:  4_000_000,
	MaxOutput: 16 << 20,
	MaxAlloc:  256 << 20,
}

// maxNesting bounds the nesting of blocks and of expressions at parse time;
// the parser and the evaluator recurse on both.
const maxNesting = 200

// ErrLimit is matched (errors.Is) by every error caused by a limit.
var ErrLimit = errors.New("template exceeded a limit")

// LimitError says which limit was exceeded.
type LimitError struct {
	What  string // "call depth", "steps", "output size", "allocation", "nesting"
	Limit int64
}

func (e *LimitError) Error() string {
	switch e.What {
	case "call depth":
		return fmt.Sprintf("exceeded the recursion depth limit: more than %d nested macro calls (a recursion that does not end?)", e.Limit)
	case "steps":
		return fmt.Sprintf("exceeded the step limit: more than %d evaluation steps (a loop or recursion that does not end?)", e.Limit)
	case "output size":
		return fmt.Sprintf("the output or a string in it would exceed %d bytes", e.Limit)
	case "allocation":
		return fmt.Sprintf("the render would allocate more than %d bytes of strings and lists", e.Limit)
	case "nesting":
		return fmt.Sprintf("blocks or expressions nested deeper than %d", e.Limit)
	}
	return fmt.Sprintf("%s limit %d exceeded", e.What, e.Limit)
}

func (e *LimitError) Is(target error) bool { return target == ErrLimit }
