package tmpl

import (
	"strings"
	"unicode"
)

// The lexer splits a template source into text and tags, and the inside of
// each tag into expression tokens. It applies Jinja2's whitespace rules as
// Hugging Face configures them, so the parser never sees stripped text:
//
//   - A "-" after an opening delimiter ({{-, {%-, {#-) strips all whitespace
//     (newlines included) from the end of the text before it; a "-" before a
//     closing delimiter (-}}, -%}, -#}) strips all whitespace after it.
//   - lstrip_blocks: a {% or {# tag preceded on its line only by spaces or
//     tabs takes that indentation away ("{%+" keeps it). Not for {{.
//   - trim_blocks: the first newline directly after %} or #} is dropped
//     ("+%}" keeps it). Not after }}, and not after {% raw %}.
//   - {% raw %} ... {% endraw %} is text, tags and all.
//   - "\r\n" and "\r" become "\n", and one newline ending the source is
//     dropped (keep_trailing_newline=False).
//
// Inside a tag, a closing delimiter only ends the tag when brackets are
// balanced, so {{ {'a': {'b': 1}} }} is one expression.

type tokKind uint8

const (
	tEOF      tokKind = iota
	tText             // template text between tags
	tVarBegin         // {{
	tVarEnd           // }}
	tBlkBegin         // {%
	tBlkEnd           // %}
	tName
	tString
	tInt
	tFloat
	tOp // punctuation and operators; val holds it
)

type token struct {
	kind tokKind
	val  string
	pos  int // byte offset in the (normalized) source
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of template"
	case tText:
		return "template text"
	case tVarBegin:
		return "'{{'"
	case tVarEnd:
		return "'}}'"
	case tBlkBegin:
		return "'{%'"
	case tBlkEnd:
		return "'%}'"
	case tString:
		return "string literal"
	case tInt, tFloat:
		return "number " + t.val
	}
	return "'" + t.val + "'"
}

// normalizeSource applies Jinja2's newline handling to a source.
func normalizeSource(src string) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

type lexer struct {
	src          string
	pos          int
	toks         []token
	lineStarting bool // the last consumed piece ended with "\n" (or nothing consumed yet)
}

// lex tokenizes a normalized source.
func lex(src string) ([]token, error) {
	lx := &lexer{src: src, lineStarting: true}
	if err := lx.run(); err != nil {
		return nil, err
	}
	lx.toks = append(lx.toks, token{kind: tEOF, pos: len(src)})
	return lx.toks, nil
}

// nextOpen finds the next "{{", "{%" or "{#" at or after i.
func nextOpen(s string, i int) int {
	for {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 || i+j+1 >= len(s) {
			return -1
		}
		j += i
		if c := s[j+1]; c == '{' || c == '%' || c == '#' {
			return j
		}
		i = j + 1
	}
}

// isSpace is Python's str.isspace, which Jinja2's whitespace control uses.
func isSpace(r rune) bool { return pyIsSpace(r) }

func isBlank(s string) bool {
	for _, r := range s {
		if !isSpace(r) {
			return false
		}
	}
	return true
}

// stripText applies the whitespace control of the tag that follows text.
// mod is the tag's modifier ('-', '+' or 0); block is true for {% and {#.
func (lx *lexer) stripText(text string, mod byte, block bool) string {
	switch {
	case mod == '-':
		return strings.TrimRightFunc(text, isSpace)
	case mod != '+' && block:
		l := strings.LastIndexByte(text, '\n') + 1
		if (l > 0 || lx.lineStarting) && l < len(text) && isBlank(text[l:]) {
			return text[:l]
		}
	}
	return text
}

func (lx *lexer) emitText(text string, pos int) {
	if text != "" {
		lx.toks = append(lx.toks, token{kind: tText, val: text, pos: pos})
	}
}

// closeTag consumes a closing delimiter at lx.pos (with its optional "-" or
// "+" already known): "-" eats following whitespace, trim eats one newline.
func (lx *lexer) closeTag(mod byte, delimLen int, trim bool) {
	start := lx.pos
	lx.pos += delimLen
	switch {
	case mod == '-':
		for lx.pos < len(lx.src) {
			r, n := decodeRune(lx.src[lx.pos:])
			if !isSpace(r) {
				break
			}
			lx.pos += n
		}
	case mod != '+' && trim && lx.pos < len(lx.src) && lx.src[lx.pos] == '\n':
		lx.pos++
	}
	if lx.pos > start {
		lx.lineStarting = lx.src[lx.pos-1] == '\n'
	}
}

func (lx *lexer) run() error {
	src := lx.src
	for lx.pos < len(src) {
		open := nextOpen(src, lx.pos)
		if open < 0 {
			lx.emitText(src[lx.pos:], lx.pos)
			return nil
		}
		kind := src[open+1]
		after := open + 2
		var mod byte
		if after < len(src) && (src[after] == '-' || src[after] == '+') {
			mod = src[after]
			after++
		}
		text := src[lx.pos:open]
		lx.emitText(lx.stripText(text, mod, kind != '{'), lx.pos)
		lx.lineStarting = false
		switch kind {
		case '#':
			end := strings.Index(src[after:], "#}")
			if end < 0 {
				return lx.errAt(open, "comment", "a closing '#}'")
			}
			end += after
			var cmod byte
			if end > after && (src[end-1] == '-' || src[end-1] == '+') {
				cmod = src[end-1]
			}
			lx.pos = end
			lx.closeTag(cmod, 2, true)
		case '%':
			if rawEnd, ok := lx.rawTag(after); ok {
				if err := lx.raw(open, rawEnd); err != nil {
					return err
				}
				continue
			}
			lx.toks = append(lx.toks, token{kind: tBlkBegin, pos: open})
			lx.pos = after
			if err := lx.inside('%', open); err != nil {
				return err
			}
		case '{':
			lx.toks = append(lx.toks, token{kind: tVarBegin, pos: open})
			lx.pos = after
			if err := lx.inside('}', open); err != nil {
				return err
			}
		}
	}
	return nil
}

// rawTag reports whether the block tag whose body starts at i is
// "{% raw %}", returning the offset just past it.
func (lx *lexer) rawTag(i int) (int, bool) {
	s := lx.src
	j := skipSpaces(s, i)
	if !strings.HasPrefix(s[j:], "raw") {
		return 0, false
	}
	j = skipSpaces(s, j+3)
	switch {
	case strings.HasPrefix(s[j:], "-%}"):
		j += 3
		for j < len(s) {
			r, n := decodeRune(s[j:])
			if !isSpace(r) {
				break
			}
			j += n
		}
		return j, true
	case strings.HasPrefix(s[j:], "%}"):
		return j + 2, true // no trim_blocks after {% raw %}, as in Jinja2
	}
	return 0, false
}

// raw emits the text of a raw block up to its {% endraw %}.
func (lx *lexer) raw(open, body int) error {
	s := lx.src
	for i := body; ; {
		k := strings.Index(s[i:], "{%")
		if k < 0 {
			return lx.errAt(open, "{% raw %}", "a closing {% endraw %}")
		}
		k += i
		j := k + 2
		var mod byte
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			mod = s[j]
			j++
		}
		j = skipSpaces(s, j)
		if strings.HasPrefix(s[j:], "endraw") {
			e := skipSpaces(s, j+6)
			var cmod byte
			if e < len(s) && (s[e] == '-' || s[e] == '+') {
				cmod = s[e]
				e++
			}
			if strings.HasPrefix(s[e:], "%}") {
				lx.lineStarting = s[body-1] == '\n'
				lx.emitText(lx.stripText(s[body:k], mod, true), body)
				lx.pos = e
				lx.closeTag(cmod, 2, true)
				return nil
			}
		}
		i = k + 2
	}
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v') {
		i++
	}
	return i
}

// inside lexes expression tokens up to the tag's closing delimiter
// ('%' for %}, '}' for }}).
func (lx *lexer) inside(closer byte, open int) error {
	s := lx.src
	depth := 0 // open brackets
	construct := "{{ ... }}"
	endKind := tVarEnd
	if closer == '%' {
		construct = "{% ... %}"
		endKind = tBlkEnd
	}
	for {
		lx.pos = skipSpaces(s, lx.pos)
		i := lx.pos
		if i >= len(s) {
			want := "'}}'"
			if closer == '%' {
				want = "'%}'"
			}
			return lx.errAt(open, construct, "a closing "+want+" before the end of the template")
		}
		if depth == 0 {
			var mod byte
			j := i
			if s[j] == '-' || s[j] == '+' {
				mod = s[j]
				j++
			}
			if j+1 < len(s) && s[j] == closer && s[j+1] == '}' {
				lx.toks = append(lx.toks, token{kind: endKind, pos: i})
				lx.pos = j
				lx.closeTag(mod, 2, closer == '%')
				return nil
			}
		}
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			lx.number()
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			lx.toks = append(lx.toks, token{kind: tName, val: s[i:j], pos: i})
			lx.pos = j
		case c == '\'' || c == '"':
			if err := lx.str(); err != nil {
				return err
			}
		default:
			op := ""
			if i+1 < len(s) {
				switch two := s[i : i+2]; two {
				case "//", "**", "==", "!=", "<=", ">=":
					op = two
				}
			}
			if op == "" {
				if !strings.ContainsRune("+-/*%~[](){}<>=.:|,;", rune(c)) {
					r, _ := decodeRune(s[i:])
					return lx.errAt(i, construct, "an expression, found the character "+quoteRune(r))
				}
				op = s[i : i+1]
			}
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
			}
			lx.toks = append(lx.toks, token{kind: tOp, val: op, pos: i})
			lx.pos = i + len(op)
		}
	}
}

// number lexes an int or float literal (digits may be grouped with "_").
func (lx *lexer) number() {
	s := lx.src
	i := lx.pos
	digits := func(j int) int {
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '_' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9') {
			j++
		}
		return j
	}
	j := digits(i)
	kind := tInt
	if j+1 < len(s) && s[j] == '.' && s[j+1] >= '0' && s[j+1] <= '9' {
		j = digits(j + 1)
		kind = tFloat
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			j = digits(k)
			kind = tFloat
		}
	}
	lx.toks = append(lx.toks, token{kind: kind, val: strings.ReplaceAll(s[i:j], "_", ""), pos: i})
	lx.pos = j
}

// str lexes a quoted string and decodes Python's escapes (\n, \t, \\, \',
// \", \xHH, \uXXXX, \UXXXXXXXX, octal); an unknown escape stays as written.
func (lx *lexer) str() error {
	s := lx.src
	q := s[lx.pos]
	var b strings.Builder
	i := lx.pos + 1
	for {
		if i >= len(s) {
			return lx.errAt(lx.pos, "string literal", "a closing "+string(q))
		}
		c := s[i]
		if c == q {
			break
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n':
			// line continuation
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(s) {
				return lx.errAt(i-2, "string literal", "a complete \\"+string(e)+" escape")
			}
			var r rune
			for _, h := range []byte(s[i : i+n]) {
				d := hexVal(h)
				if d < 0 {
					return lx.errAt(i-2, "string literal", "hex digits after \\"+string(e))
				}
				r = r<<4 | rune(d)
			}
			if r > unicode.MaxRune {
				return lx.errAt(i-2, "string literal", "a code point up to U+10FFFF")
			}
			b.WriteRune(r)
			i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			r := rune(e - '0')
			for k := 0; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
				r = r*8 + rune(s[i]-'0')
				i++
			}
			b.WriteRune(r)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	lx.toks = append(lx.toks, token{kind: tString, val: b.String(), pos: lx.pos})
	lx.pos = i + 1
	return nil
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func (lx *lexer) errAt(pos int, construct, expected string) error {
	return newError(lx.src, pos, construct, "expected "+expected)
}
