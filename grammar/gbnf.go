package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseGBNF parses a grammar in llama.cpp's GBNF format: rules
// `name ::= body`, where a body is alternatives (`|`) of sequences of
// "literals" (escapes \n \r \t \\ \" \' \[ \] \xHH \uHHHH \UHHHHHHHH),
// [character classes] (ranges a-z, negation [^...], the same escapes),
// `.` (any character), rule names, (groups), and the postfix operators
// * + ? {m} {m,} {m,n} {,n}. `#` starts a comment to the end of the line.
// A rule may span lines; the next `name ::=` starts the next rule. The
// start rule is "root". Errors name the line and column.
func ParseGBNF(src string) (*Grammar, error) {
	p := &gbnfParser{src: src, line: 1, col: 1}
	g := &Grammar{root: "root"}
	for {
		p.space()
		if p.eof() {
			break
		}
		name := p.name()
		if name == "" {
			return nil, p.errf("expected a rule name, found %s", p.found())
		}
		p.space()
		if !strings.HasPrefix(p.src[p.i:], "::=") {
			return nil, p.errf("expected ::= after rule name %q, found %s", name, p.found())
		}
		p.adv(3)
		body, err := p.alternatives(0)
		if err != nil {
			return nil, err
		}
		if err := g.addRule(name, body); err != nil {
			return nil, p.errf("%v", strings.TrimPrefix(err.Error(), "grammar: "))
		}
	}
	if len(g.order) == 0 {
		return nil, fmt.Errorf("grammar: empty grammar (no rules)")
	}
	if err := g.check(); err != nil {
		return nil, err
	}
	return g, nil
}

type gbnfParser struct {
	src       string
	i         int
	line, col int
}

func (p *gbnfParser) eof() bool { return p.i >= len(p.src) }

func (p *gbnfParser) adv(n int) {
	for ; n > 0 && p.i < len(p.src); n-- {
		if p.src[p.i] == '\n' {
			p.line, p.col = p.line+1, 1
		} else {
			p.col++
		}
		p.i++
	}
}

func (p *gbnfParser) errf(format string, a ...any) error {
	return fmt.Errorf("grammar: line %d col %d: %s", p.line, p.col, fmt.Sprintf(format, a...))
}

func (p *gbnfParser) found() string {
	if p.eof() {
		return "end of input"
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.i:])
	return strconv.QuoteRune(r)
}

// space skips blanks, newlines and comments.
func (p *gbnfParser) space() {
	for !p.eof() {
		switch c := p.src[p.i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			p.adv(1)
		case c == '#':
			for !p.eof() && p.src[p.i] != '\n' {
				p.adv(1)
			}
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (p *gbnfParser) name() string {
	j := p.i
	for j < len(p.src) && isNameByte(p.src[j]) {
		j++
	}
	n := p.src[p.i:j]
	p.adv(j - p.i)
	return n
}

// atRuleStart reports whether `name ::=` follows (the next rule).
func (p *gbnfParser) atRuleStart() bool {
	j := p.i
	for j < len(p.src) && isNameByte(p.src[j]) {
		j++
	}
	if j == p.i {
		return false
	}
	for j < len(p.src) && (p.src[j] == ' ' || p.src[j] == '\t') {
		j++
	}
	return strings.HasPrefix(p.src[j:], "::=")
}

func (p *gbnfParser) alternatives(depth int) (expr, error) {
	var alts []expr
	for {
		s, err := p.sequence(depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, s)
		p.space()
		if p.eof() || p.src[p.i] != '|' {
			break
		}
		p.adv(1)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return alt(alts...), nil
}

func (p *gbnfParser) sequence(depth int) (expr, error) {
	var items []expr
	for {
		p.space()
		if p.eof() {
			break
		}
		c := p.src[p.i]
		if c == '|' || c == ')' {
			if c == ')' && depth == 0 {
				return nil, p.errf("unbalanced )")
			}
			break
		}
		if depth == 0 && p.atRuleStart() {
			break
		}
		var e expr
		var err error
		switch {
		case c == '"':
			e, err = p.literal()
		case c == '[':
			e, err = p.class()
		case c == '.':
			p.adv(1)
			e = class(cpRange{0, maxRune})
		case c == '(':
			p.adv(1)
			e, err = p.alternatives(depth + 1)
			if err == nil {
				p.space()
				if p.eof() || p.src[p.i] != ')' {
					return nil, p.errf("expected ) to close the group, found %s", p.found())
				}
				p.adv(1)
			}
		case isNameByte(c):
			e = ref(p.name())
		case c == '<':
			return nil, p.errf("token references <...> are not supported")
		default:
			return nil, p.errf("unexpected %s", p.found())
		}
		if err != nil {
			return nil, err
		}
		e, err = p.postfix(e)
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return seq(items...), nil
}

func (p *gbnfParser) postfix(e expr) (expr, error) {
	for !p.eof() {
		switch p.src[p.i] {
		case '*':
			e = star(e)
		case '+':
			e = plus(e)
		case '?':
			e = opt(e)
		case '{':
			line, col := p.line, p.col
			j := strings.IndexByte(p.src[p.i:], '}')
			if j < 0 {
				return nil, p.errf("unterminated {m,n}")
			}
			body := strings.TrimSpace(p.src[p.i+1 : p.i+j])
			lo, hi, ok := parseBounds(body)
			if !ok {
				return nil, fmt.Errorf("grammar: line %d col %d: bad repetition {%s} (want {m}, {m,}, {m,n} or {,n})", line, col, body)
			}
			if hi >= 0 && lo > hi {
				return nil, fmt.Errorf("grammar: line %d col %d: repetition {%s} has min > max", line, col, body)
			}
			if lo > 10000 || hi > 10000 {
				return nil, fmt.Errorf("grammar: line %d col %d: repetition {%s} too large (limit 10000)", line, col, body)
			}
			p.adv(j)
			e = rep(e, lo, hi)
		default:
			return e, nil
		}
		p.adv(1)
	}
	return e, nil
}

func parseBounds(s string) (lo, hi int, ok bool) {
	a, b, comma := strings.Cut(s, ",")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	num := func(x string) (int, bool) {
		if x == "" || len(x) > 6 {
			return 0, false
		}
		n, err := strconv.Atoi(x)
		return n, err == nil && n >= 0
	}
	if a == "" {
		lo = 0
	} else if lo, ok = num(a); !ok {
		return 0, 0, false
	}
	if !comma {
		return lo, lo, a != ""
	}
	if b == "" {
		return lo, -1, a != ""
	}
	if hi, ok = num(b); !ok {
		return 0, 0, false
	}
	return lo, hi, true
}

// char reads one character of a literal or class, decoding escapes.
func (p *gbnfParser) char() (rune, error) {
	if p.eof() {
		return 0, p.errf("unexpected end of input")
	}
	if p.src[p.i] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.i:])
		if r == utf8.RuneError && n == 1 {
			return 0, p.errf("invalid UTF-8")
		}
		p.adv(n)
		return r, nil
	}
	if p.i+1 >= len(p.src) {
		return 0, p.errf("unterminated escape")
	}
	c := p.src[p.i+1]
	simple := map[byte]rune{'n': '\n', 'r': '\r', 't': '\t', '\\': '\\', '"': '"', '\'': '\'', '[': '[', ']': ']', '-': '-', '^': '^', '/': '/', '0': 0}
	if r, ok := simple[c]; ok {
		p.adv(2)
		return r, nil
	}
	n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
	if n == 0 {
		return 0, p.errf("unknown escape \\%c", c)
	}
	if p.i+2+n > len(p.src) {
		return 0, p.errf("short \\%c escape", c)
	}
	v, err := strconv.ParseUint(p.src[p.i+2:p.i+2+n], 16, 32)
	if err != nil || v > maxRune || v >= 0xD800 && v <= 0xDFFF {
		return 0, p.errf("bad \\%c escape %q", c, p.src[p.i+2:p.i+2+n])
	}
	p.adv(2 + n)
	return rune(v), nil
}

func (p *gbnfParser) literal() (expr, error) {
	line, col := p.line, p.col
	p.adv(1)
	var b strings.Builder
	for {
		if p.eof() || p.src[p.i] == '\n' {
			return nil, fmt.Errorf("grammar: line %d col %d: unterminated string literal", line, col)
		}
		if p.src[p.i] == '"' {
			p.adv(1)
			return lit(b.String()), nil
		}
		r, err := p.char()
		if err != nil {
			return nil, err
		}
		b.WriteRune(r)
	}
}

func (p *gbnfParser) class() (expr, error) {
	line, col := p.line, p.col
	p.adv(1)
	neg := false
	if !p.eof() && p.src[p.i] == '^' {
		neg = true
		p.adv(1)
	}
	var rs []cpRange
	for {
		if p.eof() || p.src[p.i] == '\n' {
			return nil, fmt.Errorf("grammar: line %d col %d: unterminated character class", line, col)
		}
		if p.src[p.i] == ']' {
			p.adv(1)
			break
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.i+1 < len(p.src) && p.src[p.i] == '-' && p.src[p.i+1] != ']' {
			p.adv(1)
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errf("character range %q-%q is reversed", lo, hi)
			}
		}
		rs = append(rs, cpRange{lo, hi})
	}
	r := normRanges(rs)
	if neg {
		r = negate(r)
	}
	if len(r) == 0 {
		return nil, p.errf("character class matches nothing")
	}
	return classExpr{r}, nil
}
