package grammar

import "fmt"

// Intersection of regular languages. A JSON Schema string may carry a
// format, a pattern and length bounds at once (Zod writes both `format:
// email` and its own email pattern), and a number both bounds and
// multipleOf; each is a regular language over code points, and the
// instance must be in all of them. Each becomes a nondeterministic
// automaton without ε-moves (nfa), their product keeps the state pairs
// that both can reach and that can still reach acceptance (so the grammar
// has no dead ends, and every token it allows leads to a complete output),
// and the product is written out as right-linear rules: one rule per
// state, an alternative per move (a class, then the next state's rule),
// plus the empty alternative where the state accepts. Every state and move
// is counted against the compile's Budget, so an intersection that would
// explode (a multipleOf with a huge modulus under wide bounds) is a
// LimitError, never an unbounded compile.

// nfa is an automaton over code points: state 0 starts; moves[s] are the
// classes leaving s and their targets; accept[s] says s may end.
type nfa struct {
	moves  [][]nfaMove
	accept []bool
}

type nfaMove struct {
	r  []cpRange // sorted, merged
	to int
}

// nfaMaxStates bounds any one automaton (the Budget bounds the total).
const nfaMaxStates = 1 << 20

// enfa is the ε-NFA that Thompson's construction builds.
type enfa struct {
	b      *Budget
	eps    [][]int
	moves  [][]nfaMove
	accept int
}

func (a *enfa) state() (int, error) {
	if err := a.b.alloc(1, 64); err != nil {
		return 0, err
	}
	if len(a.eps) >= nfaMaxStates {
		return 0, fmt.Errorf("grammar: a string or number constraint needs more than %d automaton states", nfaMaxStates)
	}
	a.eps = append(a.eps, nil)
	a.moves = append(a.moves, nil)
	return len(a.eps) - 1, nil
}

// build adds e between states from and to (e must be regular: literals,
// classes, sequences, alternatives and repetitions; no rule references).
func (a *enfa) build(e expr, from, to int) error {
	if err := a.b.step(1); err != nil {
		return err
	}
	switch e := e.(type) {
	case litExpr:
		cur := from
		rs := []rune(e.s)
		for i, r := range rs {
			next := to
			if i < len(rs)-1 {
				var err error
				if next, err = a.state(); err != nil {
					return err
				}
			}
			a.moves[cur] = append(a.moves[cur], nfaMove{[]cpRange{{r, r}}, next})
			cur = next
		}
		if len(rs) == 0 {
			a.eps[from] = append(a.eps[from], to)
		}
	case classExpr:
		if len(e.r) > 0 {
			a.moves[from] = append(a.moves[from], nfaMove{e.r, to})
		}
	case seqExpr:
		cur := from
		for i, x := range e.items {
			next := to
			if i < len(e.items)-1 {
				var err error
				if next, err = a.state(); err != nil {
					return err
				}
			}
			if err := a.build(x, cur, next); err != nil {
				return err
			}
			cur = next
		}
		if len(e.items) == 0 {
			a.eps[from] = append(a.eps[from], to)
		}
	case altExpr:
		for _, x := range e.alts {
			if err := a.build(x, from, to); err != nil {
				return err
			}
		}
	case repExpr:
		cur := from
		for i := 0; i < e.min; i++ {
			next, err := a.then(e.e, cur)
			if err != nil {
				return err
			}
			cur = next
		}
		switch {
		case e.max < 0: // a loop state: e back to itself
			loop, err := a.state()
			if err != nil {
				return err
			}
			a.eps[cur] = append(a.eps[cur], loop)
			if err := a.build(e.e, loop, loop); err != nil {
				return err
			}
			a.eps[loop] = append(a.eps[loop], to)
		default:
			for i := e.min; i < e.max; i++ {
				a.eps[cur] = append(a.eps[cur], to) // stop here
				next, err := a.then(e.e, cur)
				if err != nil {
					return err
				}
				cur = next
			}
			a.eps[cur] = append(a.eps[cur], to)
		}
	default:
		return fmt.Errorf("grammar: internal: %T is not a regular expression", e)
	}
	return nil
}

// nfaOf builds the ε-free automaton of a regular expression e.
func nfaOf(b *Budget, e expr) (*nfa, error) {
	a := &enfa{b: b}
	start, err := a.state()
	if err != nil {
		return nil, err
	}
	if a.accept, err = a.state(); err != nil {
		return nil, err
	}
	if err := a.build(e, start, a.accept); err != nil {
		return nil, err
	}
	// ε-closure of each state reached from the start by a move; the
	// ε-free automaton has those states only, renumbered (start = 0).
	index := map[int]int{start: 0}
	order := []int{start}
	out := &nfa{}
	seen := make([]int, len(a.eps)) // closure stamp per ε-NFA state
	for i := 0; i < len(order); i++ {
		var moves []nfaMove
		acc := false
		stack := []int{order[i]}
		seen[order[i]] = i + 1
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if err := b.step(1); err != nil {
				return nil, err
			}
			if s == a.accept {
				acc = true
			}
			for _, m := range a.moves[s] {
				j, ok := index[m.to]
				if !ok {
					j = len(order)
					index[m.to] = j
					order = append(order, m.to)
				}
				moves = append(moves, nfaMove{m.r, j})
			}
			for _, t := range a.eps[s] {
				if seen[t] != i+1 {
					seen[t] = i + 1
					stack = append(stack, t)
				}
			}
		}
		out.moves = append(out.moves, mergeMoves(moves))
		out.accept = append(out.accept, acc)
	}
	return out, nil
}

// mergeMoves joins the classes of moves that share a target.
func mergeMoves(ms []nfaMove) []nfaMove {
	var out []nfaMove
	at := map[int]int{}
	for _, m := range ms {
		if i, ok := at[m.to]; ok {
			out[i].r = normRanges(append(append([]cpRange(nil), out[i].r...), m.r...))
			continue
		}
		at[m.to] = len(out)
		out = append(out, m)
	}
	return out
}

// rangeAnd is the intersection of two sorted, merged range lists.
func rangeAnd(a, b []cpRange) []cpRange {
	var out []cpRange
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo <= hi {
			out = append(out, cpRange{lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// product is the automaton of the strings both x and y accept, trimmed to
// the states that lie on some accepted path. nil: no string.
func product(b *Budget, x, y *nfa) (*nfa, error) {
	type pair struct{ p, q int }
	index := map[pair]int{{0, 0}: 0}
	order := []pair{{0, 0}}
	out := &nfa{}
	for i := 0; i < len(order); i++ {
		pq := order[i]
		if err := b.alloc(1, 96); err != nil {
			return nil, err
		}
		if len(order) > nfaMaxStates {
			return nil, fmt.Errorf("grammar: a string or number constraint needs more than %d automaton states", nfaMaxStates)
		}
		var moves []nfaMove
		for _, mx := range x.moves[pq.p] {
			for _, my := range y.moves[pq.q] {
				if err := b.step(1); err != nil {
					return nil, err
				}
				r := rangeAnd(mx.r, my.r)
				if len(r) == 0 {
					continue
				}
				t := pair{mx.to, my.to}
				j, ok := index[t]
				if !ok {
					j = len(order)
					index[t] = j
					order = append(order, t)
				}
				moves = append(moves, nfaMove{r, j})
			}
		}
		out.moves = append(out.moves, mergeMoves(moves))
		out.accept = append(out.accept, x.accept[pq.p] && y.accept[pq.q])
	}
	return out.trim(b)
}

// trim keeps the states from which an accepting state can be reached
// (the others are dead ends: a grammar must never enter one), renumbered
// with the start first. nil when the start is dead: the language is empty.
func (a *nfa) trim(b *Budget) (*nfa, error) {
	back := make([][]int, len(a.moves))
	for s, ms := range a.moves {
		for _, m := range ms {
			back[m.to] = append(back[m.to], s)
		}
	}
	live := make([]bool, len(a.moves))
	var stack []int
	for s, acc := range a.accept {
		if acc {
			live[s] = true
			stack = append(stack, s)
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if err := b.step(1); err != nil {
			return nil, err
		}
		for _, p := range back[s] {
			if !live[p] {
				live[p] = true
				stack = append(stack, p)
			}
		}
	}
	if !live[0] {
		return nil, nil
	}
	num := make([]int, len(a.moves))
	n := 0
	for s := range a.moves {
		if live[s] {
			num[s] = n
			n++
		}
	}
	out := &nfa{}
	for s, ms := range a.moves {
		if !live[s] {
			continue
		}
		var keep []nfaMove
		for _, m := range ms {
			if live[m.to] {
				keep = append(keep, nfaMove{m.r, num[m.to]})
			}
		}
		out.moves = append(out.moves, keep)
		out.accept = append(out.accept, a.accept[s])
	}
	return out, nil
}

// intersectAll is the automaton of the strings every expression matches
// (nil: none).
func (c *schemaCompiler) intersectAll(parts []expr, extra ...*nfa) (*nfa, error) {
	var acc *nfa
	for _, e := range parts {
		a, err := nfaOf(c.b, e)
		if err != nil {
			return nil, err
		}
		extra = append(extra, a)
	}
	for _, a := range extra {
		if acc == nil {
			acc = a
			continue
		}
		var err error
		if acc, err = product(c.b, acc, a); err != nil || acc == nil {
			return nil, err
		}
	}
	return acc, nil
}

// rules writes automaton a as right-linear grammar rules and returns the
// start rule's reference; wrap turns a class of code points into what the
// output spells for it (jsonClass inside a JSON string).
func (c *schemaCompiler) rules(a *nfa, wrap func([]cpRange) expr) (expr, error) {
	base := c.newName("fsa")
	name := func(s int) string { return fmt.Sprintf("%s-%d", base, s) }
	for s, ms := range a.moves {
		if err := c.b.alloc(int64(len(ms)+1), int64(len(ms)+1)*2*exprBytes); err != nil {
			return nil, err
		}
		var alts []expr
		for _, m := range ms {
			alts = append(alts, seq(wrap(m.r), ref(name(m.to))))
		}
		if a.accept[s] {
			alts = append(alts, seq())
		}
		if err := c.g.addRule(name(s), alt(alts...)); err != nil {
			return nil, err
		}
	}
	return ref(name(0)), nil
}

// then builds one more copy of e from state cur to a new state, and returns
// that state (one repetition of a repExpr).
func (a *enfa) then(e expr, cur int) (int, error) {
	next, err := a.state()
	if err != nil {
		return 0, err
	}
	return next, a.build(e, cur, next)
}
