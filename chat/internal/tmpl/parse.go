package tmpl

import (
	"fmt"
	"strconv"
	"strings"
)

// The parser is recursive descent over the token list, one function per
// precedence level of Jinja2's expression grammar (loosest first):
//
//	tuple    = cond ("," cond)*            (a tuple only if a comma occurs)
//	cond     = or ("if" or ["else" cond])*
//	or       = and ("or" and)*
//	and      = not ("and" not)*
//	not      = "not" not | compare
//	compare  = math1 (("=="|"!="|"<"|"<="|">"|">="|"in"|"not in") math1)*
//	math1    = concat (("+"|"-") concat)*
//	concat   = math2 ("~" math2)*
//	math2    = pow (("*"|"/"|"//"|"%") pow)*
//	pow      = unary ("**" unary)*
//	unary    = ("-"|"+") unary' | primary postfix  , then filters and tests
//	postfix  = ("." name | "[" subscript "]" | "(" args ")")*
//	filters  = ("|" name ["(" args ")"] | "is" ["not"] name [args] | "(" args ")")*
//
// where unary' is a unary without the filters, so "-x|abs" is abs(-x).
// Nesting (blocks, and expressions through unary/not) is bounded by
// maxNesting: the parser and the evaluator both recurse on it.

type parser struct {
	src   string
	toks  []token
	i     int
	depth int
	loops int // enclosing for loops (break/continue are valid inside)
	// soft is true directly inside an {% if %} (not inside a loop, macro or
	// block nested in it): as in Jinja2, an unknown filter or test there is
	// an error only when evaluated; elsewhere it is a parse error.
	soft   bool
	macros []*macroDef // macros being parsed, innermost last
}

// Template is a parsed template, safe for concurrent renders.
type Template struct {
	src  string
	body []node
}

// Parse parses a template source.
func Parse(src string) (t *Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fmt.Errorf("internal error (please report): %v", p)
		}
	}()
	src = normalizeSource(src)
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	body, end, err := p.body(nil)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errAt(p.cur().pos, "", "unexpected {% "+end+" %}")
	}
	return &Template{src: src, body: body}, nil
}

func (p *parser) cur() token  { return p.toks[p.i] }
func (p *parser) peek() token { return p.toks[min(p.i+1, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) isOp(op string) bool {
	t := p.cur()
	return t.kind == tOp && t.val == op
}

func (p *parser) isName(n string) bool {
	t := p.cur()
	return t.kind == tName && t.val == n
}

func (p *parser) errAt(pos int, construct, msg string) error {
	return newError(p.src, pos, construct, msg)
}

// expected fails at the current token: "expected WHAT, found TOKEN".
func (p *parser) expected(construct, what string) error {
	return p.errAt(p.cur().pos, construct, "expected "+what+", found "+p.cur().String())
}

// expectOp consumes op; what describes the alternatives for the message
// (default: op itself).
func (p *parser) expectOp(construct, op string, what ...string) error {
	if !p.isOp(op) {
		w := "'" + op + "'"
		if len(what) > 0 {
			w = what[0]
		}
		return p.expected(construct, w)
	}
	p.next()
	return nil
}

func (p *parser) expectName(construct, what string) (string, error) {
	if p.cur().kind != tName {
		return "", p.expected(construct, what)
	}
	return p.next().val, nil
}

func (p *parser) expectBlockEnd(construct string) error {
	if p.cur().kind != tBlkEnd {
		return p.expected(construct, "'%}'")
	}
	p.next()
	return nil
}

func (p *parser) enter(pos int) error {
	p.depth++
	if p.depth > maxNesting {
		e := newError(p.src, pos, "", "nested too deeply")
		e.Err = &LimitError{What: "nesting", Limit: maxNesting}
		e.Msg = e.Err.Error()
		return e
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// chain counts one more link of an operator or postfix chain: a+b+c is a
// left-deep tree, so its length is nesting for the evaluator's recursion.
// The caller undoes its links with p.depth -= *links when the chain ends.
func (p *parser) chain(links *int, pos int) error {
	*links++
	return p.enter(pos)
}

// body parses statements until one of the end tags in ends (consumed up to
// and including its name; the caller reads the rest of that tag) or the end
// of the template (only when ends is nil). It returns the end tag's name.
func (p *parser) body(ends []string) ([]node, string, error) {
	var out []node
	for {
		t := p.cur()
		switch t.kind {
		case tEOF:
			if ends != nil {
				return nil, "", p.errAt(t.pos, "", "unexpected end of template; expected {% "+strings.Join(ends, " %} or {% ")+" %}")
			}
			return out, "", nil
		case tText:
			p.next()
			out = append(out, &textNode{base{t.pos}, t.val})
		case tVarBegin:
			p.next()
			e, err := p.tuple(true, nil)
			if err != nil {
				return nil, "", err
			}
			if p.cur().kind != tVarEnd {
				return nil, "", p.expected("{{ ... }}", "'}}'")
			}
			p.next()
			out = append(out, &outputNode{base{t.pos}, e})
		case tBlkBegin:
			name := p.peek()
			if name.kind != tName {
				p.next()
				return nil, "", p.expected("{% ... %}", "a statement name")
			}
			for _, e := range ends {
				if name.val == e {
					p.next()
					p.next()
					return out, e, nil
				}
			}
			if strings.HasPrefix(name.val, "end") || name.val == "elif" || name.val == "else" {
				if ends == nil {
					return out, name.val, nil
				}
				return nil, "", p.errAt(name.pos, "", "unexpected {% "+name.val+" %}; expected {% "+strings.Join(ends, " %} or {% ")+" %}")
			}
			p.next()
			n, err := p.statement()
			if err != nil {
				return nil, "", err
			}
			if n != nil {
				out = append(out, n)
			}
		default:
			return nil, "", p.expected("", "template text or a tag")
		}
	}
}

// statement parses one {% name ... %} tag (and its body), with the current
// token at the name.
func (p *parser) statement() (node, error) {
	t := p.next()
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	if t.val != "if" && t.val != "set" {
		saved := p.soft
		p.soft = false
		defer func() { p.soft = saved }()
	}
	switch t.val {
	case "if":
		return p.ifStmt(t.pos)
	case "for":
		return p.forStmt(t.pos)
	case "set":
		return p.setStmt(t.pos)
	case "macro":
		return p.macroStmt(t.pos)
	case "call":
		return p.callStmt(t.pos)
	case "filter":
		return p.filterStmt(t.pos)
	case "with":
		return p.withStmt(t.pos)
	case "generation":
		// Hugging Face's {% generation %} marks assistant text for training
		// masks; rendering passes its body through unchanged.
		if err := p.expectBlockEnd("{% generation %}"); err != nil {
			return nil, err
		}
		body, _, err := p.body([]string{"endgeneration"})
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd("{% endgeneration %}"); err != nil {
			return nil, err
		}
		return &withNode{base: base{t.pos}, body: body}, nil
	case "break", "continue":
		if p.loops == 0 {
			return nil, p.errAt(t.pos, "{% "+t.val+" %}", "only valid inside a {% for %} loop")
		}
		if err := p.expectBlockEnd("{% " + t.val + " %}"); err != nil {
			return nil, err
		}
		if t.val == "break" {
			return &breakNode{base{t.pos}}, nil
		}
		return &continueNode{base{t.pos}}, nil
	}
	return nil, p.errAt(t.pos, "", "unknown statement {% "+t.val+" %} (supported: if, for, set, macro, call, filter, with, raw, generation, break, continue)")
}

func (p *parser) ifStmt(pos int) (node, error) {
	saved := p.soft
	p.soft = true
	defer func() { p.soft = saved }()
	n := &ifNode{base: base{pos}}
	for {
		cond, err := p.tuple(false, nil)
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd("{% if %}"); err != nil {
			return nil, err
		}
		body, end, err := p.body([]string{"elif", "else", "endif"})
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, cond)
		n.bodies = append(n.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.expectBlockEnd("{% else %}"); err != nil {
				return nil, err
			}
			n.els, _, err = p.body([]string{"endif"})
			if err != nil {
				return nil, err
			}
		}
		return n, p.expectBlockEnd("{% endif %}")
	}
}

// assignTargets parses "a" or "a, b" or "(a, b)".
func (p *parser) assignTargets(construct string) ([]string, error) {
	paren := p.isOp("(")
	if paren {
		p.next()
	}
	var names []string
	for {
		n, err := p.expectName(construct, "a variable name")
		if err != nil {
			return nil, err
		}
		names = append(names, n)
		if !p.isOp(",") {
			break
		}
		p.next()
		if p.cur().kind != tName {
			break
		}
	}
	if paren {
		if err := p.expectOp(construct, ")"); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func (p *parser) forStmt(pos int) (node, error) {
	const c = "{% for %}"
	n := &forNode{base: base{pos}}
	var err error
	if n.targets, err = p.assignTargets(c); err != nil {
		return nil, err
	}
	if !p.isName("in") {
		return nil, p.expected(c, "'in' after the loop variable")
	}
	p.next()
	if n.iter, err = p.tuple(false, []string{"recursive", "if"}); err != nil {
		return nil, err
	}
	if p.isName("if") {
		p.next()
		if n.filter, err = p.cond(); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		p.next()
		n.recursive = true
	}
	if err := p.expectBlockEnd(c); err != nil {
		return nil, err
	}
	p.loops++
	body, end, err := p.body([]string{"else", "endfor"})
	p.loops--
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.expectBlockEnd("{% else %}"); err != nil {
			return nil, err
		}
		saved := p.loops
		p.loops = 0
		n.els, _, err = p.body([]string{"endfor"})
		p.loops = saved
		if err != nil {
			return nil, err
		}
	}
	return n, p.expectBlockEnd("{% endfor %}")
}

func (p *parser) setStmt(pos int) (node, error) {
	const c = "{% set %}"
	first, err := p.expectName(c, "a variable name")
	if err != nil {
		return nil, err
	}
	targets := []string{first}
	attr := ""
	switch {
	case p.isOp("."):
		p.next()
		if attr, err = p.expectName(c, "an attribute name after '.'"); err != nil {
			return nil, err
		}
	case p.isOp(","):
		for p.isOp(",") {
			p.next()
			if p.cur().kind != tName {
				break
			}
			targets = append(targets, p.next().val)
		}
	}
	if p.isOp("=") {
		p.next()
		e, err := p.tuple(true, nil)
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(c); err != nil {
			return nil, err
		}
		return &setNode{base: base{pos}, targets: targets, attr: attr, e: e}, nil
	}
	if len(targets) > 1 {
		return nil, p.expected(c, "'=' (a block set assigns one name)")
	}
	n := &setBlockNode{base: base{pos}, target: first, attr: attr}
	for p.isOp("|") {
		p.next()
		f, err := p.filter(nil)
		if err != nil {
			return nil, err
		}
		n.filters = append(n.filters, f)
	}
	if p.cur().kind != tBlkEnd {
		return nil, p.expected(c, "'=' or '%}'")
	}
	p.next()
	if n.body, _, err = p.body([]string{"endset"}); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd("{% endset %}")
}

// params parses a macro's or caller's "(a, b=default, ...)".
func (p *parser) params(construct string, def *macroDef) error {
	if err := p.expectOp(construct, "("); err != nil {
		return err
	}
	for !p.isOp(")") {
		name, err := p.expectName(construct, "a parameter name or ')'")
		if err != nil {
			return err
		}
		var d expr
		if p.isOp("=") {
			p.next()
			if d, err = p.cond(); err != nil {
				return err
			}
		} else if len(def.defaults) > 0 && def.defaults[len(def.defaults)-1] != nil {
			return p.errAt(p.cur().pos, construct, "a parameter without a default follows one with a default")
		}
		def.params = append(def.params, name)
		def.defaults = append(def.defaults, d)
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	return p.expectOp(construct, ")")
}

func (p *parser) macroStmt(pos int) (node, error) {
	const c = "{% macro %}"
	name, err := p.expectName(c, "the macro's name")
	if err != nil {
		return nil, err
	}
	def := &macroDef{name: name, pos: pos, src: p.src}
	if err := p.params(c, def); err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(c); err != nil {
		return nil, err
	}
	saved := p.loops
	p.loops = 0
	p.macros = append(p.macros, def)
	def.body, _, err = p.body([]string{"endmacro"})
	p.macros = p.macros[:len(p.macros)-1]
	p.loops = saved
	if err != nil {
		return nil, err
	}
	if p.cur().kind == tName && p.cur().val == name {
		p.next()
	}
	return &macroNode{base{pos}, def}, p.expectBlockEnd("{% endmacro %}")
}

func (p *parser) callStmt(pos int) (node, error) {
	const c = "{% call %}"
	def := &macroDef{name: "caller", pos: pos, src: p.src}
	if p.isOp("(") {
		if err := p.params(c, def); err != nil {
			return nil, err
		}
	}
	e, err := p.cond()
	if err != nil {
		return nil, err
	}
	call, ok := e.(*callExpr)
	if !ok {
		return nil, p.errAt(e.at(), c, "expected a macro call such as m(args)")
	}
	if err := p.expectBlockEnd(c); err != nil {
		return nil, err
	}
	saved := p.loops
	p.loops = 0
	p.macros = append(p.macros, def)
	def.body, _, err = p.body([]string{"endcall"})
	p.macros = p.macros[:len(p.macros)-1]
	p.loops = saved
	if err != nil {
		return nil, err
	}
	return &callBlockNode{base{pos}, call, def}, p.expectBlockEnd("{% endcall %}")
}

func (p *parser) filterStmt(pos int) (node, error) {
	const c = "{% filter %}"
	n := &filterBlockNode{base: base{pos}}
	for {
		f, err := p.filter(nil)
		if err != nil {
			return nil, err
		}
		n.filters = append(n.filters, f)
		if !p.isOp("|") {
			break
		}
		p.next()
	}
	if err := p.expectBlockEnd(c); err != nil {
		return nil, err
	}
	var err error
	if n.body, _, err = p.body([]string{"endfilter"}); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd("{% endfilter %}")
}

func (p *parser) withStmt(pos int) (node, error) {
	const c = "{% with %}"
	n := &withNode{base: base{pos}}
	for p.cur().kind != tBlkEnd {
		if len(n.names) > 0 {
			if err := p.expectOp(c, ","); err != nil {
				return nil, err
			}
		}
		name, err := p.expectName(c, "a variable name")
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(c, "="); err != nil {
			return nil, err
		}
		e, err := p.cond()
		if err != nil {
			return nil, err
		}
		n.names = append(n.names, name)
		n.vals = append(n.vals, e)
	}
	p.next()
	var err error
	if n.body, _, err = p.body([]string{"endwith"}); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd("{% endwith %}")
}

// Expressions.

// atEnd reports whether the current token ends a tuple: a tag's end, a
// closing bracket, or one of the extra names (e.g. "if" in a for tag).
func (p *parser) atEnd(extra []string) bool {
	t := p.cur()
	switch t.kind {
	case tVarEnd, tBlkEnd, tEOF:
		return true
	case tOp:
		return t.val == ")" || t.val == "]" || t.val == "}"
	case tName:
		for _, n := range extra {
			if t.val == n {
				return true
			}
		}
	}
	return false
}

// tuple parses "e" or "e, e, ..." (a tuple).
func (p *parser) tuple(withCond bool, extraEnd []string) (expr, error) {
	pos := p.cur().pos
	one := p.or
	if withCond {
		one = p.cond
	}
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if !p.isOp(",") {
				break
			}
			p.next()
			isTuple = true
		}
		if p.atEnd(extraEnd) {
			break
		}
		e, err := one()
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	if !isTuple {
		if len(items) == 0 {
			return nil, p.expected("", "an expression")
		}
		return items[0], nil
	}
	return &listExpr{base{pos}, items, true}, nil
}

func (p *parser) cond() (expr, error) {
	pos := p.cur().pos
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	for p.isName("if") {
		p.next()
		test, err := p.or()
		if err != nil {
			return nil, err
		}
		var no expr
		if p.isName("else") {
			p.next()
			if no, err = p.cond(); err != nil {
				return nil, err
			}
		}
		e = &condExpr{base{pos}, test, e, no}
	}
	return e, nil
}

func (p *parser) or() (expr, error) {
	links := 0
	defer func() { p.depth -= links }()
	a, err := p.and()
	for err == nil && p.isName("or") {
		t := p.next()
		if err = p.chain(&links, t.pos); err != nil {
			break
		}
		var b expr
		if b, err = p.and(); err == nil {
			a = &binaryExpr{base{t.pos}, "or", a, b}
		}
	}
	return a, err
}

func (p *parser) and() (expr, error) {
	links := 0
	defer func() { p.depth -= links }()
	a, err := p.not()
	for err == nil && p.isName("and") {
		t := p.next()
		if err = p.chain(&links, t.pos); err != nil {
			break
		}
		var b expr
		if b, err = p.not(); err == nil {
			a = &binaryExpr{base{t.pos}, "and", a, b}
		}
	}
	return a, err
}

func (p *parser) not() (expr, error) {
	if p.isName("not") {
		t := p.next()
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{base{t.pos}, "not", x}, nil
	}
	return p.compare()
}

func (p *parser) compare() (expr, error) {
	links := 0
	defer func() { p.depth -= links }()
	a, err := p.math1()
	if err != nil {
		return nil, err
	}
	for {
		t := p.cur()
		op := ""
		switch {
		case t.kind == tOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			op = t.val
			p.next()
		case t.kind == tName && t.val == "in":
			op = "in"
			p.next()
		case t.kind == tName && t.val == "not" && p.peek().kind == tName && p.peek().val == "in":
			op = "not in"
			p.next()
			p.next()
		default:
			return a, nil
		}
		if err := p.chain(&links, t.pos); err != nil {
			return nil, err
		}
		b, err := p.math1()
		if err != nil {
			return nil, err
		}
		a = &binaryExpr{base{t.pos}, op, a, b}
	}
}

// binaryLevel parses one left-associative level.
func (p *parser) binaryLevel(ops []string, sub func() (expr, error)) (expr, error) {
	links := 0
	defer func() { p.depth -= links }()
	a, err := sub()
	if err != nil {
		return nil, err
	}
	for {
		t := p.cur()
		if t.kind != tOp {
			return a, nil
		}
		found := false
		for _, op := range ops {
			if t.val == op {
				found = true
			}
		}
		if !found {
			return a, nil
		}
		if err := p.chain(&links, t.pos); err != nil {
			return nil, err
		}
		p.next()
		b, err := sub()
		if err != nil {
			return nil, err
		}
		a = &binaryExpr{base{t.pos}, t.val, a, b}
	}
}

var (
	opsMath1  = []string{"+", "-"}
	opsConcat = []string{"~"}
	opsMath2  = []string{"*", "/", "//", "%"}
	opsPow    = []string{"**"}
)

func (p *parser) math1() (expr, error)  { return p.binaryLevel(opsMath1, p.concat) }
func (p *parser) concat() (expr, error) { return p.binaryLevel(opsConcat, p.math2) }
func (p *parser) math2() (expr, error)  { return p.binaryLevel(opsMath2, p.pow) }
func (p *parser) pow() (expr, error) {
	return p.binaryLevel(opsPow, func() (expr, error) { return p.unary(true) })
}

func (p *parser) unary(withFilters bool) (expr, error) {
	t := p.cur()
	if err := p.enter(t.pos); err != nil {
		return nil, err
	}
	defer p.leave()
	var e expr
	var err error
	if t.kind == tOp && (t.val == "-" || t.val == "+") {
		p.next()
		x, err := p.unary(false)
		if err != nil {
			return nil, err
		}
		e = &unaryExpr{base{t.pos}, t.val, x}
	} else if e, err = p.primary(); err != nil {
		return nil, err
	}
	if e, err = p.postfix(e); err != nil {
		return nil, err
	}
	if withFilters {
		return p.filters(e)
	}
	return e, nil
}

func (p *parser) primary() (expr, error) {
	t := p.cur()
	switch t.kind {
	case tName:
		p.next()
		switch t.val {
		case "true", "True":
			return &constExpr{base{t.pos}, Bool(true)}, nil
		case "false", "False":
			return &constExpr{base{t.pos}, Bool(false)}, nil
		case "none", "None":
			return &constExpr{base{t.pos}, None()}, nil
		}
		if n := len(p.macros); n > 0 {
			switch t.val {
			case "varargs":
				p.macros[n-1].usesVarargs = true
			case "kwargs":
				p.macros[n-1].usesKwargs = true
			}
		}
		return &nameExpr{base{t.pos}, t.val}, nil
	case tString:
		s := p.next().val
		for p.cur().kind == tString {
			s += p.next().val
		}
		return &constExpr{base{t.pos}, String(s)}, nil
	case tInt:
		p.next()
		n, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			return nil, p.errAt(t.pos, "number", "an integer that fits in 64 bits")
		}
		return &constExpr{base{t.pos}, Int(n)}, nil
	case tFloat:
		p.next()
		f, err := strconv.ParseFloat(t.val, 64)
		if err != nil {
			return nil, p.errAt(t.pos, "number", "a float in range")
		}
		return &constExpr{base{t.pos}, Float(f)}, nil
	case tOp:
		switch t.val {
		case "(":
			p.next()
			if p.isOp(")") {
				p.next()
				return &listExpr{base{t.pos}, nil, true}, nil
			}
			e, err := p.tuple(true, nil)
			if err != nil {
				return nil, err
			}
			return e, p.expectOp("parenthesized expression", ")")
		case "[":
			p.next()
			var items []expr
			for !p.isOp("]") {
				e, err := p.cond()
				if err != nil {
					return nil, err
				}
				items = append(items, e)
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			return &listExpr{base{t.pos}, items, false}, p.expectOp("list literal", "]", "']' or ','")
		case "{":
			p.next()
			d := &dictExpr{base: base{t.pos}}
			for !p.isOp("}") {
				k, err := p.cond()
				if err != nil {
					return nil, err
				}
				if err := p.expectOp("dict literal", ":"); err != nil {
					return nil, err
				}
				v, err := p.cond()
				if err != nil {
					return nil, err
				}
				d.keys = append(d.keys, k)
				d.vals = append(d.vals, v)
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			if !p.isOp("}") {
				return nil, p.expected("dict literal", "'}' or ','")
			}
			p.next()
			return d, nil
		}
	}
	return nil, p.expected("", "an expression")
}

func (p *parser) postfix(e expr) (expr, error) {
	links := 0
	defer func() { p.depth -= links }()
	for {
		t := p.cur()
		if t.kind != tOp || t.val != "." && t.val != "[" && t.val != "(" {
			return e, nil
		}
		if err := p.chain(&links, t.pos); err != nil {
			return nil, err
		}
		switch t.val {
		case ".":
			p.next()
			switch n := p.cur(); n.kind {
			case tName:
				p.next()
				e = &attrExpr{base{t.pos}, e, n.val}
			case tInt:
				p.next()
				i, _ := strconv.ParseInt(n.val, 10, 64)
				e = &indexExpr{base{t.pos}, e, &constExpr{base{n.pos}, Int(i)}}
			default:
				return nil, p.expected("attribute access", "a name after '.'")
			}
		case "[":
			p.next()
			var err error
			if e, err = p.subscript(e, t.pos); err != nil {
				return nil, err
			}
		case "(":
			var err error
			if e, err = p.call(e); err != nil {
				return nil, err
			}
		default:
			return e, nil
		}
	}
}

// subscript parses the inside of x[...] after the '['.
func (p *parser) subscript(x expr, pos int) (expr, error) {
	const c = "subscript"
	var parts [3]expr
	n := 0
	isSlice := false
	for {
		if !p.isOp(":") && !p.isOp("]") {
			e, err := p.cond()
			if err != nil {
				return nil, err
			}
			parts[n] = e
		}
		if p.isOp(":") && n < 2 {
			p.next()
			n++
			isSlice = true
			continue
		}
		break
	}
	if err := p.expectOp(c, "]"); err != nil {
		return nil, err
	}
	if isSlice {
		return &sliceExpr{base{pos}, x, parts[0], parts[1], parts[2]}, nil
	}
	if parts[0] == nil {
		return nil, p.errAt(pos, c, "expected an index inside []")
	}
	return &indexExpr{base{pos}, x, parts[0]}, nil
}

// args parses "(a, b, k=v)" into positional and keyword arguments.
func (p *parser) args(construct string) ([]expr, []kwExpr, error) {
	if err := p.expectOp(construct, "("); err != nil {
		return nil, nil, err
	}
	var args []expr
	var kwargs []kwExpr
	for !p.isOp(")") {
		if p.cur().kind == tName && p.peek().kind == tOp && p.peek().val == "=" {
			name := p.next().val
			p.next()
			e, err := p.cond()
			if err != nil {
				return nil, nil, err
			}
			kwargs = append(kwargs, kwExpr{name, e})
		} else {
			if len(kwargs) > 0 {
				return nil, nil, p.errAt(p.cur().pos, construct, "a positional argument follows a keyword argument")
			}
			e, err := p.cond()
			if err != nil {
				return nil, nil, err
			}
			args = append(args, e)
		}
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	return args, kwargs, p.expectOp(construct, ")", "')' or ','")
}

func (p *parser) call(fn expr) (expr, error) {
	pos := p.cur().pos
	args, kwargs, err := p.args("call")
	if err != nil {
		return nil, err
	}
	return &callExpr{base{pos}, fn, args, kwargs}, nil
}

// filter parses "name" or "name(args)" after a '|' (x is the input).
func (p *parser) filter(x expr) (*filterExpr, error) {
	t := p.cur()
	name, err := p.expectName("filter", "a filter name after '|'")
	if err != nil {
		return nil, err
	}
	for p.isOp(".") && p.peek().kind == tName {
		p.next()
		name += "." + p.next().val
	}
	if _, ok := filters[name]; !ok && !p.soft {
		return nil, p.errAt(t.pos, "filter", "no filter named '"+name+"'")
	}
	f := &filterExpr{base: base{t.pos}, x: x, name: name}
	if p.isOp("(") {
		if f.args, f.kwargs, err = p.args("filter '" + name + "'"); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) filters(e expr) (expr, error) {
	links := 0
	defer func() { p.depth -= links }()
	for {
		if p.isOp("|") || p.isName("is") || p.isOp("(") {
			if err := p.chain(&links, p.cur().pos); err != nil {
				return nil, err
			}
		}
		switch {
		case p.isOp("|"):
			p.next()
			f, err := p.filter(e)
			if err != nil {
				return nil, err
			}
			e = f
		case p.isName("is"):
			t := p.next()
			te := &testExpr{base: base{t.pos}, x: e}
			if p.isName("not") {
				p.next()
				te.neg = true
			}
			name, err := p.expectName("test", "a test name after 'is'")
			if err != nil {
				return nil, err
			}
			te.name = name
			if _, ok := tests[name]; !ok && !p.soft {
				return nil, p.errAt(t.pos, "test", "no test named '"+name+"'")
			}
			c := p.cur()
			switch {
			case p.isOp("("):
				args, kwargs, err := p.args("test '" + name + "'")
				if err != nil {
					return nil, err
				}
				if len(kwargs) > 0 {
					return nil, p.errAt(c.pos, "test '"+name+"'", "tests take positional arguments only")
				}
				te.args = args
			case c.kind == tName && c.val != "else" && c.val != "or" && c.val != "and" && c.val != "if" && c.val != "is",
				c.kind == tString, c.kind == tInt, c.kind == tFloat, c.kind == tOp && (c.val == "[" || c.val == "{"):
				if err := p.enter(c.pos); err != nil {
					return nil, err
				}
				a, err := p.primary()
				if err == nil {
					a, err = p.postfix(a)
				}
				p.leave()
				if err != nil {
					return nil, err
				}
				te.args = []expr{a}
			}
			e = te
		case p.isOp("("):
			var err error
			if e, err = p.call(e); err != nil {
				return nil, err
			}
		default:
			return e, nil
		}
	}
}
