package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FromRegex builds a grammar whose outputs are exactly the strings the
// regular expression matches in full. The supported subset: literals,
// escapes (\n \r \t \f \v \0 \xHH \uHHHH and escaped punctuation), `.`
// (any character but \n and \r), classes [...] with ranges and negation,
// \d \w \s and their negations \D \W \S (ASCII, as RE2 defines them),
// groups (...) and (?:...), alternation, and the quantifiers * + ? {m}
// {m,} {m,n} (a lazy `?` suffix is accepted and changes nothing: the
// matched language is the same). ^ and $ are allowed only at the very
// start and end. Anything else (backreferences, lookaround, flags, \b,
// named classes) is an error naming it.
func FromRegex(re string) (*Grammar, error) {
	e, err := parseRegex(re)
	if err != nil {
		return nil, err
	}
	g := &Grammar{root: "root"}
	g.addRule("root", e.e)
	return g, g.check()
}

type regexAST struct {
	e                      expr
	anchorStart, anchorEnd bool
}

func parseRegex(re string) (regexAST, error) {
	p := &reParser{s: re}
	var a regexAST
	if strings.HasPrefix(p.s, "^") {
		a.anchorStart = true
		p.i = 1
	}
	e, err := p.alternation(0)
	if err != nil {
		return a, err
	}
	if p.i < len(p.s) {
		if p.s[p.i] == '$' && p.i == len(p.s)-1 {
			a.anchorEnd = true
		} else {
			return a, p.errf("unexpected %q", p.s[p.i])
		}
	}
	a.e = e
	return a, nil
}

type reParser struct {
	s string
	i int
}

func (p *reParser) errf(format string, a ...any) error {
	return fmt.Errorf("grammar: regex %q at offset %d: %s", p.s, p.i, fmt.Sprintf(format, a...))
}

func (p *reParser) alternation(depth int) (expr, error) {
	var alts []expr
	for {
		s, err := p.concat(depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, s)
		if p.i < len(p.s) && p.s[p.i] == '|' {
			p.i++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return alt(alts...), nil
}

func (p *reParser) concat(depth int) (expr, error) {
	var items []expr
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '|' || c == ')' {
			if c == ')' && depth == 0 {
				return nil, p.errf("unbalanced )")
			}
			break
		}
		if c == '$' && p.i == len(p.s)-1 && depth == 0 {
			break
		}
		var e expr
		switch c {
		case '(':
			p.i++
			if strings.HasPrefix(p.s[p.i:], "?:") {
				p.i += 2
			} else if p.i < len(p.s) && p.s[p.i] == '?' {
				return nil, p.errf("group syntax (?%s is not supported (lookaround, flags and named groups are not)", p.s[p.i+1:min(p.i+2, len(p.s))])
			}
			inner, err := p.alternation(depth + 1)
			if err != nil {
				return nil, err
			}
			if p.i >= len(p.s) || p.s[p.i] != ')' {
				return nil, p.errf("missing )")
			}
			p.i++
			e = inner
		case '[':
			cl, err := p.class()
			if err != nil {
				return nil, err
			}
			e = cl
		case '.':
			p.i++
			e = classExpr{negate(normRanges([]cpRange{{'\n', '\n'}, {'\r', '\r'}}))}
		case '^', '$':
			return nil, p.errf("anchor %c is only supported at the start/end of the pattern", c)
		case '*', '+', '?', '{':
			return nil, p.errf("quantifier %c without an operand", c)
		case '\\':
			r, cl, err := p.escape(false)
			if err != nil {
				return nil, err
			}
			if cl != nil {
				e = classExpr{cl}
			} else {
				e = lit(string(r))
			}
		default:
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			p.i += n
			e = lit(string(r))
		}
		e, err := p.quant(e)
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

func (p *reParser) quant(e expr) (expr, error) {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '*':
			e = star(e)
		case '+':
			e = plus(e)
		case '?':
			e = opt(e)
		case '{':
			j := strings.IndexByte(p.s[p.i:], '}')
			if j < 0 {
				return nil, p.errf("unterminated {")
			}
			lo, hi, ok := parseBounds(p.s[p.i+1 : p.i+j])
			if !ok || strings.HasPrefix(p.s[p.i+1:], ",") {
				return nil, p.errf("bad repetition %s", p.s[p.i:p.i+j+1])
			}
			if hi >= 0 && lo > hi || lo > 1000 || hi > 1000 {
				return nil, p.errf("repetition %s out of range (max 1000, min <= max)", p.s[p.i:p.i+j+1])
			}
			p.i += j
			e = rep(e, lo, hi)
		default:
			return e, nil
		}
		p.i++
		if p.i < len(p.s) && p.s[p.i] == '?' { // lazy: same language
			p.i++
		}
		if p.i < len(p.s) && p.s[p.i] == '+' {
			return nil, p.errf("possessive quantifiers are not supported")
		}
	}
	return e, nil
}

var (
	reDigit = []cpRange{{'0', '9'}}
	reWord  = normRanges([]cpRange{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}})
	reSpace = normRanges([]cpRange{{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}})
)

// escape reads \x at p.i: a single character, or a class for \d \w \s
// and their negations.
func (p *reParser) escape(inClass bool) (rune, []cpRange, error) {
	if p.i+1 >= len(p.s) {
		return 0, nil, p.errf("trailing backslash")
	}
	c := p.s[p.i+1]
	p.i += 2
	switch c {
	case 'd':
		return 0, reDigit, nil
	case 'D':
		return 0, negate(reDigit), nil
	case 'w':
		return 0, reWord, nil
	case 'W':
		return 0, negate(reWord), nil
	case 's':
		return 0, reSpace, nil
	case 'S':
		return 0, negate(reSpace), nil
	case 'n':
		return '\n', nil, nil
	case 'r':
		return '\r', nil, nil
	case 't':
		return '\t', nil, nil
	case 'f':
		return '\f', nil, nil
	case 'v':
		return '\v', nil, nil
	case '0':
		return 0, nil, nil
	case 'x', 'u':
		n := 2
		if c == 'u' {
			n = 4
		}
		if p.i+n > len(p.s) {
			return 0, nil, p.errf("short \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
		if err != nil || v >= 0xD800 && v <= 0xDFFF {
			return 0, nil, p.errf("bad \\%c escape", c)
		}
		p.i += n
		return rune(v), nil, nil
	}
	if c < 0x80 && !isNameByte(c) || c == '-' {
		return rune(c), nil, nil
	}
	return 0, nil, p.errf("escape \\%c is not supported", c)
}

func (p *reParser) class() (expr, error) {
	p.i++
	neg := false
	if p.i < len(p.s) && p.s[p.i] == '^' {
		neg = true
		p.i++
	}
	var rs []cpRange
	first := true
	for {
		if p.i >= len(p.s) {
			return nil, p.errf("unterminated [")
		}
		if p.s[p.i] == ']' && !first {
			p.i++
			break
		}
		first = false
		if strings.HasPrefix(p.s[p.i:], "[:") {
			return nil, p.errf("POSIX classes [:name:] are not supported")
		}
		lo, cl, err := p.classChar()
		if err != nil {
			return nil, err
		}
		if cl != nil {
			rs = append(rs, cl...)
			continue
		}
		hi := lo
		if p.i+1 < len(p.s) && p.s[p.i] == '-' && p.s[p.i+1] != ']' {
			p.i++
			var cl2 []cpRange
			if hi, cl2, err = p.classChar(); err != nil {
				return nil, err
			}
			if cl2 != nil || hi < lo {
				return nil, p.errf("bad character range")
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

func (p *reParser) classChar() (rune, []cpRange, error) {
	if p.s[p.i] == '\\' {
		return p.escape(true)
	}
	r, n := utf8.DecodeRuneInString(p.s[p.i:])
	p.i += n
	return r, nil, nil
}

// FromChoices builds a grammar whose outputs are exactly the given strings.
func FromChoices(choices []string) (*Grammar, error) {
	if len(choices) == 0 {
		return nil, fmt.Errorf("grammar: empty choice list")
	}
	var alts []expr
	for i, c := range choices {
		if !utf8.ValidString(c) {
			return nil, fmt.Errorf("grammar: choice %d is not valid UTF-8", i)
		}
		alts = append(alts, lit(c))
	}
	g := &Grammar{root: "root"}
	g.addRule("root", alt(alts...))
	return g, g.check()
}
