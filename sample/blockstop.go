package sample

// BlockStop ends a code completion at the end of the block the prompt left
// open, as a code editor expects and /infill's indentation rule ends a
// middle: it counts braces (outside string, rune and comment literals,
// roughly: quotes and // are tracked per line) in the prompt, then in the
// output, and cuts the output just after the brace that closes the
// prompt's innermost open block. A prompt with no open block is never
// cut. The built-in Go model's completions stop by it in generate and in
// the server's /v1/completions and Ollama /api/generate; like StopMatcher
// it works on streamed pieces split anywhere.
type BlockStop struct {
	depth  int  // open braces of the prompt still open (≤ 0: inactive)
	quote  rune // the open string or rune literal's quote, or 0
	line   bool // inside a // comment
	prev   rune // the last rune scanned (pieces may split "//" or an escape)
	active bool
}

// NewBlockStop scans prompt for the blocks it leaves open.
func NewBlockStop(prompt string) *BlockStop {
	b := &BlockStop{}
	b.scan(prompt)
	b.active = b.depth > 0
	b.depth = 0
	return b
}

// BraceDepth is the number of braces src leaves open (negative: more
// closed than opened), counted as BlockStop counts them.
func BraceDepth(src string) int {
	b := &BlockStop{}
	b.scan(src)
	return b.depth
}

// scan advances over s and returns the byte offset just after the brace
// that takes the depth below zero, or -1.
func (b *BlockStop) scan(s string) int {
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

// Cut returns the part of the output piece s to show and whether the
// block ended in it (nothing after that is output).
func (b *BlockStop) Cut(s string) (string, bool) {
	if !b.active {
		return s, false
	}
	if i := b.scan(s); i >= 0 {
		return s[:i], true
	}
	return s, false
}
