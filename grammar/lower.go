package grammar

import (
	"fmt"
	"strings"
)

// The lowered program: rules of alternatives of elements, each element a
// byte-set terminal or a reference to a rule. Positions number every
// (rule, alternative, index) including one end position per alternative,
// so a stack frame is a single int32.

type elemKind uint8

const (
	kEnd elemKind = iota
	kTerm
	kRef
	kTok // one control token, matched by id (arg: the token id)
)

type elem struct {
	kind elemKind
	arg  int32 // terminal index or rule index
}

type program struct {
	names    []string  // (rules) rule names, helpers derived from their origin
	alts     [][]int32 // (rules) start position of each alternative
	pos      []elem    // (positions) element at each position (kEnd closes an alternative)
	posRule  []int32   // (positions) rule holding the position
	terms    []byteSet // (terminals)
	root     int32
	maxRules int
}

type lowerer struct {
	b       *Budget
	g       *Grammar
	v       *Vocab // resolves control tokens; nil: they are matched as text
	p       *program
	ruleIdx map[string]int32
	bodies  [][][]elem // (rules) alternatives while building
	termIdx map[byteSet]int32
	classes map[string]int32 // class helper rules by range key
	err     error
}

// lower turns g into a byte-level program, left-factored, and checks it
// for left recursion (which a top-down automaton cannot run), counting
// rules and positions against b.
func lower(g *Grammar, v *Vocab, b *Budget) (*program, error) {
	b.stage = "lower"
	l := &lowerer{b: b, g: g, v: v, p: &program{}, ruleIdx: map[string]int32{}, termIdx: map[byteSet]int32{}, classes: map[string]int32{}}
	for _, n := range g.order {
		l.newRule(n)
	}
	for _, n := range g.order {
		r := l.ruleIdx[n]
		l.bodies[r] = l.alternatives(g.rules[n], n)
		l.charge(l.bodies[r])
		if l.err != nil {
			return nil, l.err
		}
	}
	for r := 0; r < len(l.bodies) && l.err == nil; r++ {
		l.bodies[r] = l.factor(l.bodies[r], l.p.names[r])
	}
	if l.err != nil {
		return nil, l.err
	}
	p := l.p
	p.root = l.ruleIdx[g.root]
	p.alts = make([][]int32, len(l.bodies))
	for r, alts := range l.bodies {
		for _, a := range alts {
			p.alts[r] = append(p.alts[r], int32(len(p.pos)))
			for _, e := range a {
				p.pos = append(p.pos, e)
				p.posRule = append(p.posRule, int32(r))
			}
			p.pos = append(p.pos, elem{kind: kEnd})
			p.posRule = append(p.posRule, int32(r))
		}
	}
	if err := b.step(int64(len(p.pos))); err != nil {
		return nil, err
	}
	if err := p.checkLeftRecursion(); err != nil {
		return nil, err
	}
	return p, nil
}

// factor merges the alternatives of one rule that begin with the same
// element (left factoring: A ::= x B | x C becomes A ::= x A', A' ::= B | C),
// recursively on the tails. The language is unchanged; what changes is the
// automaton's width: a rule of n literals (a choice list, an enum, a GBNF
// rule of alternatives) becomes a trie, so after any prefix only the
// alternatives that agree with it are live stacks — at most one per
// distinct next element — instead of all n at the first byte.
func (l *lowerer) factor(alts [][]elem, origin string) [][]elem {
	if len(alts) < 2 || l.err != nil {
		return alts
	}
	if err := l.b.step(int64(len(alts))); err != nil {
		l.err = err
		return alts
	}
	groups := map[elem][]int{}
	shared := false
	for i, a := range alts {
		if len(a) == 0 {
			continue
		}
		groups[a[0]] = append(groups[a[0]], i)
		shared = shared || len(groups[a[0]]) > 1
	}
	if !shared {
		return alts
	}
	out := make([][]elem, 0, len(groups)+1)
	for i, a := range alts {
		if len(a) == 0 {
			out = append(out, a)
			continue
		}
		g := groups[a[0]]
		switch {
		case len(g) == 1:
			out = append(out, a)
		case g[0] == i:
			tails := make([][]elem, len(g))
			for k, j := range g {
				tails[k] = alts[j][1:]
			}
			out = append(out, []elem{a[0], l.helper(origin, l.factor(tails, origin))})
		}
	}
	return out
}

func (l *lowerer) newRule(name string) int32 {
	if err := l.b.alloc(1, ruleBytes+int64(len(name))); err != nil && l.err == nil {
		l.err = err
	}
	r := int32(len(l.bodies))
	l.bodies = append(l.bodies, nil)
	l.p.names = append(l.p.names, name)
	l.ruleIdx[name] = r
	return r
}

// charge counts a rule body's positions (one per element, one end per
// alternative).
func (l *lowerer) charge(alts [][]elem) {
	n := int64(0)
	for _, a := range alts {
		n += int64(len(a)) + 1
	}
	if err := l.b.alloc(n, n*elemBytes); err != nil && l.err == nil {
		l.err = err
	}
}

func (l *lowerer) helper(origin string, alts [][]elem) elem {
	r := l.newRule(fmt.Sprintf("%s-%d", origin, len(l.bodies)))
	l.charge(alts)
	l.bodies[r] = alts
	return elem{kind: kRef, arg: r}
}

func (l *lowerer) term(s byteSet) elem {
	i, ok := l.termIdx[s]
	if !ok {
		i = int32(len(l.p.terms))
		l.p.terms = append(l.p.terms, s)
		l.termIdx[s] = i
	}
	return elem{kind: kTerm, arg: i}
}

func (l *lowerer) alternatives(e expr, origin string) [][]elem {
	if l.err != nil {
		return nil
	}
	if a, ok := e.(altExpr); ok {
		out := make([][]elem, 0, len(a.alts))
		for _, x := range a.alts {
			out = append(out, l.sequence(x, origin, nil))
		}
		return out
	}
	return [][]elem{l.sequence(e, origin, nil)}
}

// sequence appends the elements of e to dst.
func (l *lowerer) sequence(e expr, origin string, dst []elem) []elem {
	if l.err != nil {
		return dst
	}
	if err := l.b.step(1); err != nil {
		l.err = err
		return dst
	}
	switch e := e.(type) {
	case litExpr:
		for i := 0; i < len(e.s); i++ {
			var s byteSet
			s.add(e.s[i], e.s[i])
			dst = append(dst, l.term(s))
		}
	case byteExpr:
		dst = append(dst, l.term(e.set))
	case tokExpr:
		// A control token the vocabulary holds is matched by its id (its
		// text is no byte sequence the trie can spell); otherwise the model
		// can only write the text itself.
		if l.v != nil {
			if id, ok := l.v.control[e.text]; ok {
				return append(dst, elem{kind: kTok, arg: id})
			}
		}
		return l.sequence(litExpr{e.text}, origin, dst)
	case refExpr:
		dst = append(dst, elem{kind: kRef, arg: l.ruleIdx[e.name]})
	case seqExpr:
		for _, x := range e.items {
			dst = l.sequence(x, origin, dst)
		}
	case altExpr:
		if len(e.alts) == 1 {
			return l.sequence(e.alts[0], origin, dst)
		}
		dst = append(dst, l.helper(origin, l.alternatives(e, origin)))
	case classExpr:
		dst = append(dst, l.class(e.r, origin))
	case repExpr:
		x := l.single(e.e, origin)
		if err := l.b.step(int64(e.min)); err != nil {
			l.err = err
			return dst
		}
		for i := 0; i < e.min; i++ {
			dst = append(dst, x)
		}
		switch {
		case e.max < 0:
			r := l.newRule(fmt.Sprintf("%s-star-%d", origin, len(l.bodies)))
			l.bodies[r] = [][]elem{{x, {kind: kRef, arg: r}}, {}}
			dst = append(dst, elem{kind: kRef, arg: r})
		case e.max > e.min:
			// O_1 ::= x | ε ; O_k ::= x O_{k-1} | ε
			var prev elem
			for k := 1; k <= e.max-e.min && l.err == nil; k++ {
				body := []elem{x}
				if k > 1 {
					body = append(body, prev)
				}
				prev = l.helper(origin, [][]elem{body, {}})
			}
			dst = append(dst, prev)
		}
	default:
		l.err = fmt.Errorf("grammar: internal: unknown expression %T", e)
	}
	return dst
}

// single lowers e to one element (a helper rule when it is longer).
func (l *lowerer) single(e expr, origin string) elem {
	s := l.sequence(e, origin, nil)
	if len(s) == 1 {
		return s[0]
	}
	return l.helper(origin, [][]elem{s})
}

// class lowers a code point set to UTF-8 byte sequences: one terminal when
// every sequence is one byte long, else a shared helper rule.
func (l *lowerer) class(r []cpRange, origin string) elem {
	var seqs [][]cpRange
	for _, x := range r {
		utf8Seqs(x.lo, x.hi, &seqs)
	}
	var ascii byteSet
	var multi [][]cpRange
	for _, s := range seqs {
		if len(s) == 1 {
			ascii.add(byte(s[0].lo), byte(s[0].hi))
		} else {
			multi = append(multi, s)
		}
	}
	if len(multi) == 0 {
		return l.term(ascii)
	}
	var key strings.Builder
	for _, x := range r {
		fmt.Fprintf(&key, "%x-%x,", x.lo, x.hi)
	}
	if i, ok := l.classes[key.String()]; ok {
		return elem{kind: kRef, arg: i}
	}
	var alts [][]elem
	if ascii != (byteSet{}) {
		alts = append(alts, []elem{l.term(ascii)})
	}
	for _, s := range multi {
		var a []elem
		for _, b := range s {
			var bs byteSet
			bs.add(byte(b.lo), byte(b.hi))
			a = append(a, l.term(bs))
		}
		alts = append(alts, a)
	}
	h := l.helper("char", alts)
	l.classes[key.String()] = h.arg
	return h
}

// nullable reports, per rule, whether it derives the empty string.
func (p *program) nullable() []bool {
	nul := make([]bool, len(p.alts))
	for changed := true; changed; {
		changed = false
		for r, alts := range p.alts {
			if nul[r] {
				continue
			}
			for _, start := range alts {
				ok := true
				for q := start; p.pos[q].kind != kEnd; q++ {
					if e := p.pos[q]; e.kind != kRef || !nul[e.arg] {
						ok = false
						break
					}
				}
				if ok {
					nul[r], changed = true, true
					break
				}
			}
		}
	}
	return nul
}

// checkLeftRecursion finds a rule that can reach itself without consuming
// a byte: a top-down automaton would expand it forever.
func (p *program) checkLeftRecursion() error {
	nul := p.nullable()
	left := make([][]int32, len(p.alts)) // rules reachable at the left edge
	for r, alts := range p.alts {
		for _, start := range alts {
			for q := start; p.pos[q].kind == kRef; q++ {
				left[r] = append(left[r], p.pos[q].arg)
				if !nul[p.pos[q].arg] {
					break
				}
			}
		}
	}
	color := make([]uint8, len(p.alts))
	var visit func(r int32) int32
	visit = func(r int32) int32 {
		color[r] = 1
		for _, s := range left[r] {
			if color[s] == 1 {
				return s
			}
			if color[s] == 0 {
				if c := visit(s); c >= 0 {
					return c
				}
			}
		}
		color[r] = 2
		return -1
	}
	for r := range p.alts {
		if color[r] == 0 {
			if c := visit(int32(r)); c >= 0 {
				name := p.names[c]
				if i := strings.Index(name, "-star-"); i >= 0 {
					return fmt.Errorf("grammar: rule %q repeats (*, +) an expression that can match the empty string", name[:i])
				}
				return fmt.Errorf("grammar: rule %q is left-recursive (it can reach itself without consuming input)", name)
			}
		}
	}
	return nil
}
