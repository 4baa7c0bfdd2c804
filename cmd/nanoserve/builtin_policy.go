package main

import (
	"flag"

	"nanoserve/sample"
)

// The built-in model is a code-completion model: without --model,
// generate uses its completion policy for every flag the command line
// does not set — greedy decoding (the model's best guess, the same every
// run), a repetition penalty of 1.2 over the last 64 tokens (greedy alone
// loops: "func main() {" repeats one comment line, "package main" writes
// "inin…"; 1.1 does not break either loop, 1.2 does), at most 128 tokens —
// and stops at the end of the block the prompt opened (blockStop).
const (
	builtinRepeatPenalty = 1.2
	builtinRepeatLastN   = 64
	builtinMaxTokens     = 128
)

// builtinPolicy applies the built-in model's completion policy to p for
// the flags of fs the user did not set.
func builtinPolicy(fs *flag.FlagSet, p *sample.Policy) {
	if !flagSet(fs, "temperature") {
		p.Temperature = 0
	}
	if !flagSet(fs, "repeat-penalty") {
		p.RepetitionPenalty = builtinRepeatPenalty
	}
	if !flagSet(fs, "repeat-last-n") {
		p.RepeatLastN = builtinRepeatLastN
	}
	if !flagSet(fs, "max-tokens") {
		p.MaxTokens = builtinMaxTokens
	}
}

// blockStop ends a Go completion at the end of the block the prompt left
// open, as /infill's indentation rule ends a middle: it counts braces
// (outside string, rune and comment literals, roughly: quotes and // are
// tracked per line) in the prompt, then in the output, and cuts the output
// just after the brace that closes the prompt's innermost open block. A
// prompt with no open block is never cut.
type blockStop struct {
	depth  int  // open braces of the prompt still open (≤ 0: inactive)
	quote  rune // the open string or rune literal's quote, or 0
	line   bool // inside a // comment
	prev   rune // the last rune scanned (pieces may split "//" or an escape)
	active bool
}

func newBlockStop(prompt string) *blockStop {
	b := &blockStop{}
	b.scan(prompt)
	b.active = b.depth > 0
	b.depth = 0
	return b
}

// scan advances over s and returns the byte offset just after the brace
// that takes the depth below zero, or -1.
func (b *blockStop) scan(s string) int {
	prev := b.prev
	defer func() { b.prev = prev }()
	for i, r := range s {
		switch {
		case b.line:
			if r == '\n' {
				b.line = false
			}
		case b.quote != 0:
			if r == b.quote && prev != '\\' || r == '\n' && b.quote != '`' {
				b.quote = 0
			}
			if prev == '\\' && r == '\\' {
				r = 0 // an escaped backslash escapes nothing after it
			}
		case r == '"' || r == '\'' || r == '`':
			b.quote = r
		case r == '/' && prev == '/':
			b.line = true
		case r == '{':
			b.depth++
		case r == '}':
			b.depth--
			if b.active && b.depth < 0 {
				prev = r
				return i + 1
			}
		}
		prev = r
	}
	return -1
}

// cut returns the part of the output piece s to show and whether the
// block ended in it.
func (b *blockStop) cut(s string) (string, bool) {
	if !b.active {
		return s, false
	}
	if i := b.scan(s); i >= 0 {
		return s[:i], true
	}
	return s, false
}
