package grammar

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// expr is a grammar expression over code points; every front end (GBNF,
// JSON Schema, regex, choices) builds these and lower turns them into
// byte-level rules.
type expr interface{ isExpr() }

type (
	litExpr   struct{ s string }     // literal bytes (UTF-8)
	classExpr struct{ r []cpRange }  // one code point from sorted, merged ranges
	byteExpr  struct{ set byteSet }  // one raw byte (lowering only)
	refExpr   struct{ name string }  // a named rule
	tokExpr   struct{ text string }  // a control token named by its text (see Wrapper.ControlTokens)
	seqExpr   struct{ items []expr } // concatenation
	altExpr   struct{ alts []expr }  // alternation
	repExpr   struct {
		e        expr
		min, max int
	} // e{min,max}; max < 0: unbounded
)

func (litExpr) isExpr()   {}
func (classExpr) isExpr() {}
func (byteExpr) isExpr()  {}
func (refExpr) isExpr()   {}
func (tokExpr) isExpr()   {}
func (seqExpr) isExpr()   {}
func (altExpr) isExpr()   {}
func (repExpr) isExpr()   {}

func lit(s string) expr         { return litExpr{s} }
func ref(n string) expr         { return refExpr{n} }
func seq(items ...expr) expr    { return seqExpr{items} }
func alt(alts ...expr) expr     { return altExpr{alts} }
func opt(e expr) expr           { return repExpr{e, 0, 1} }
func star(e expr) expr          { return repExpr{e, 0, -1} }
func plus(e expr) expr          { return repExpr{e, 1, -1} }
func rep(e expr, a, b int) expr { return repExpr{e, a, b} }
func class(r ...cpRange) expr   { return classExpr{normRanges(r)} }

// cpRange is an inclusive code point range.
type cpRange struct{ lo, hi rune }

const maxRune = utf8.MaxRune

// normRanges sorts and merges ranges and removes the surrogates, which
// have no UTF-8 encoding.
func normRanges(r []cpRange) []cpRange {
	var in []cpRange
	for _, x := range r {
		if x.lo > x.hi {
			continue
		}
		// cut out D800-DFFF
		if x.lo < 0xD800 && x.hi >= 0xD800 {
			in = append(in, cpRange{x.lo, 0xD7FF})
			if x.hi > 0xDFFF {
				in = append(in, cpRange{0xE000, x.hi})
			}
			continue
		}
		if x.lo >= 0xD800 && x.lo <= 0xDFFF {
			if x.hi > 0xDFFF {
				in = append(in, cpRange{0xE000, x.hi})
			}
			continue
		}
		in = append(in, x)
	}
	sort.Slice(in, func(i, j int) bool { return in[i].lo < in[j].lo })
	var out []cpRange
	for _, x := range in {
		if n := len(out); n > 0 && x.lo <= out[n-1].hi+1 {
			if x.hi > out[n-1].hi {
				out[n-1].hi = x.hi
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

// negate returns the code points not in r (r normalised).
func negate(r []cpRange) []cpRange {
	var out []cpRange
	next := rune(0)
	for _, x := range r {
		if x.lo > next {
			out = append(out, cpRange{next, x.lo - 1})
		}
		next = x.hi + 1
	}
	if next <= maxRune {
		out = append(out, cpRange{next, maxRune})
	}
	return normRanges(out)
}

// byteSet is a set of byte values (bit b of word b/64).
type byteSet [4]uint64

func (s *byteSet) add(lo, hi byte) {
	for b := int(lo); b <= int(hi); b++ {
		s[b>>6] |= 1 << (b & 63)
	}
}
func (s *byteSet) has(b byte) bool { return s[b>>6]>>(b&63)&1 != 0 }

// utf8Seqs turns a code point range into byte-range sequences whose union
// is exactly the UTF-8 encodings of the range: split by encoded length,
// then wherever the continuation bytes do not span their full 80-BF range.
func utf8Seqs(lo, hi rune, out *[][]cpRange) {
	bounds := []rune{0x7F, 0x7FF, 0xFFFF, maxRune}
	for _, b := range bounds {
		if lo <= b && hi > b {
			utf8Seqs(lo, b, out)
			utf8Seqs(b+1, hi, out)
			return
		}
	}
	if hi < 0x80 {
		*out = append(*out, []cpRange{{lo, hi}})
		return
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1 // low 6*i bits
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Seqs(lo, lo|m, out)
				utf8Seqs((lo|m)+1, hi, out)
				return
			}
			if hi&m != m {
				utf8Seqs(lo, (hi&^m)-1, out)
				utf8Seqs(hi&^m, hi, out)
				return
			}
		}
	}
	var a, b [4]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([]cpRange, n)
	for i := 0; i < n; i++ {
		seq[i] = cpRange{rune(a[i]), rune(b[i])}
	}
	*out = append(*out, seq)
}

// Grammar is a parsed, validated grammar: named rules of code-point
// expressions, lowered to byte-level rules when a Constraint is built.
// A Grammar is immutable and safe to share.
type Grammar struct {
	rules map[string]expr
	order []string // definition order, for stable lowering and messages
	root  string
}

// addRule defines name (error if defined twice).
func (g *Grammar) addRule(name string, e expr) error {
	if g.rules == nil {
		g.rules = map[string]expr{}
	}
	if _, ok := g.rules[name]; ok {
		return fmt.Errorf("grammar: rule %q defined twice", name)
	}
	g.rules[name] = e
	g.order = append(g.order, name)
	return nil
}

// check verifies that every referenced rule exists and the root is defined.
func (g *Grammar) check() error { return g.checkIn(nil) }

// checkIn is check counting a step per expression visited against b (nil:
// not counted).
func (g *Grammar) checkIn(b *Budget) error {
	if _, ok := g.rules[g.root]; !ok {
		return fmt.Errorf("grammar: no root rule %q", g.root)
	}
	var walk func(e expr, in string) error
	walk = func(e expr, in string) error {
		if b != nil {
			if err := b.step(1); err != nil {
				return err
			}
		}
		switch e := e.(type) {
		case refExpr:
			if _, ok := g.rules[e.name]; !ok {
				return fmt.Errorf("grammar: rule %q references undefined rule %q", in, e.name)
			}
		case seqExpr:
			for _, x := range e.items {
				if err := walk(x, in); err != nil {
					return err
				}
			}
		case altExpr:
			for _, x := range e.alts {
				if err := walk(x, in); err != nil {
					return err
				}
			}
		case repExpr:
			if e.max >= 0 && e.min > e.max {
				return fmt.Errorf("grammar: rule %q: repetition {%d,%d} has min > max", in, e.min, e.max)
			}
			return walk(e.e, in)
		}
		return nil
	}
	for _, n := range g.order {
		if err := walk(g.rules[n], n); err != nil {
			return err
		}
	}
	return nil
}
