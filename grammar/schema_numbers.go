package grammar

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Numbers under bounds and multipleOf. Bounds are exact decimals (a
// JSON number is one), inclusive or exclusive: minimum/maximum, the
// numeric exclusiveMinimum/exclusiveMaximum of draft 6 and later, and the
// boolean ones of draft 4 (which make minimum/maximum exclusive). The
// grammar writes no exponent under a bound or multipleOf, at most
// maxDigits digits before and after the point, and is exactly the numbers
// of that shape inside the bounds:
//
//	integers   intRange(ceil(lo), floor(hi)): numerals by digit count
//	decimals   I.g: an integral part I in [floor(lo), floor(hi)]; the two
//	           end values of I constrain the fraction g digit by digit
//	           (fracRange), the ones between take any fraction
//	negatives  -I.g with the bounds mirrored (-hi, -lo)
//
// so a range costs O(digits) expressions, however wide. multipleOf q (a
// decimal with at most maxDigits fraction digits: q = a/10^k) keeps the
// numbers n whose n·10^k is an integer multiple of a: an automaton of
// a·(k+2) states reads the digits keeping the remainder (modAutomaton),
// intersected with the shape above (nfa.go), each state counted against
// the budget.

// maxBound bounds a bound's magnitude.
const maxBound = 1e15

// decBound is one bound: its exact value and whether it excludes itself.
type decBound struct {
	v      *big.Rat
	strict bool
}

func (b *decBound) neg() *decBound {
	if b == nil {
		return nil
	}
	return &decBound{new(big.Rat).Neg(b.v), b.strict}
}

// decimalOf reads a JSON number exactly.
func decimalOf(x any, path, kw string) (*big.Rat, error) {
	n, ok := x.(json.Number)
	if !ok {
		return nil, serr(path, kw, "must be a number")
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || new(big.Rat).Abs(r).Cmp(new(big.Rat).SetFloat64(maxBound)) > 0 {
		return nil, serr(path, kw, "%s is outside the supported range ±1e15", n)
	}
	if _, k := fracDigits(r); k < 0 {
		return nil, serr(path, kw, "%s has more than %d digits after the point", n, 2*maxDigits)
	}
	return r, nil
}

// fracDigits splits r ≥ 0 into floor(r) and the digits of r - floor(r)
// after the point, without trailing zeros; k < 0 when they are more than
// 2·maxDigits.
func fracDigits(r *big.Rat) (int64, int) {
	ip := new(big.Int).Quo(r.Num(), r.Denom())
	if r.Sign() < 0 && !r.IsInt() {
		ip.Sub(ip, big.NewInt(1))
	}
	f := new(big.Rat).Sub(r, new(big.Rat).SetInt(ip))
	for k := 0; k <= 2*maxDigits; k++ {
		if new(big.Rat).Mul(f, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))).IsInt() {
			return ip.Int64(), k
		}
	}
	return ip.Int64(), -1
}

// fracString is the digits of r's fractional part (r ≥ 0), no trailing zeros.
func fracString(r *big.Rat) (int64, string) {
	ip, k := fracDigits(r)
	if k <= 0 {
		return ip, ""
	}
	s := new(big.Rat).Sub(r, new(big.Rat).SetInt64(ip)).FloatString(k)
	return ip, strings.TrimRight(s[strings.IndexByte(s, '.')+1:], "0")
}

// numberBounds reads the lower and upper bound (nil: none), the tighter
// of each pair.
func numberBounds(s *obj, path string) (lo, hi *decBound, err error) {
	read := func(kw string) (*big.Rat, bool, error) {
		x, ok := s.get(kw)
		if !ok {
			return nil, false, nil
		}
		if _, isBool := x.(bool); isBool {
			return nil, false, nil
		}
		r, err := decimalOf(x, path, kw)
		return r, err == nil, err
	}
	tighter := func(cur *decBound, v *big.Rat, strict bool, sign int) *decBound {
		if cur == nil {
			return &decBound{v, strict}
		}
		switch c := v.Cmp(cur.v) * sign; {
		case c > 0:
			return &decBound{v, strict}
		case c == 0 && strict:
			return &decBound{v, true}
		}
		return cur
	}
	for _, p := range []struct {
		kw, excl string
		sign     int
		out      **decBound
	}{{"minimum", "exclusiveMinimum", 1, &lo}, {"maximum", "exclusiveMaximum", -1, &hi}} {
		v, has, err := read(p.kw)
		if err != nil {
			return nil, nil, err
		}
		strict := false
		if x, ok := s.get(p.excl); ok {
			if b, isBool := x.(bool); isBool { // draft 4: it qualifies minimum/maximum
				if b && !has {
					return nil, nil, serr(path, p.excl, "the draft-4 boolean form needs %s beside it", p.kw)
				}
				strict = b
			}
		}
		if has {
			*p.out = tighter(*p.out, v, strict, p.sign)
		}
		ev, hasE, err := read(p.excl)
		if err != nil {
			return nil, nil, err
		}
		if hasE {
			*p.out = tighter(*p.out, ev, true, p.sign)
		}
	}
	return lo, hi, nil
}

func (c *schemaCompiler) numberSchema(s *obj, path string, integer bool) (expr, error) {
	lo, hi, err := numberBounds(s, path)
	if err != nil {
		return nil, err
	}
	mv, hasMult := s.get("multipleOf")
	if lo == nil && hi == nil && !hasMult {
		if integer {
			return c.baseRule("integer"), nil
		}
		return c.baseRule("number"), nil
	}
	if err := c.b.step(4 * maxDigits); err != nil {
		return nil, err
	}
	var alts []expr
	// Integers: lo rounded up, hi down (an exclusive integral bound moves by one).
	var iLo, iHi *int64
	if lo != nil {
		x, k := fracDigits(lo.v)
		if k == 0 && lo.strict || k != 0 {
			x++
		}
		iLo = &x
	}
	if hi != nil {
		x, k := fracDigits(hi.v)
		if k == 0 && hi.strict {
			x--
		}
		iHi = &x
	}
	if iLo == nil || iHi == nil || *iLo <= *iHi {
		if e := intRange(iLo, iHi); e != nil {
			alts = append(alts, e)
		}
	}
	if !integer {
		if e := decimalSide(lo, hi); e != nil {
			alts = append(alts, e)
		}
		if e := decimalSide(hi.neg(), lo.neg()); e != nil {
			alts = append(alts, seq(lit("-"), e))
		}
	}
	if len(alts) == 0 {
		return nil, serr(path, "minimum", "the bounds leave no value")
	}
	e := alt(alts...)
	if !hasMult {
		return e, nil
	}
	m, err := c.modAutomaton(mv, path)
	if err != nil {
		return nil, err
	}
	a, err := c.intersectAll([]expr{e}, m)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, serr(path, "multipleOf", "no multiple lies within the bounds")
	}
	return c.rules(a, func(r []cpRange) expr { return classExpr{r} })
}

// decimalSide is the numerals I.g (I ≥ 0, 1 to maxDigits fraction digits)
// whose value lies within lo and hi (nil: unbounded); lo below zero counts
// as zero. nil when there are none.
func decimalSide(lo, hi *decBound) expr {
	if lo == nil || lo.v.Sign() < 0 {
		lo = &decBound{new(big.Rat), false}
	}
	if hi != nil && hi.v.Cmp(lo.v) < 0 {
		return nil
	}
	il, fl := fracString(lo.v)
	anyFrac := rep(digits('0', '9'), 1, maxDigits)
	point := func(i int64, f expr) expr {
		if f == nil {
			return nil
		}
		return seq(lit(strconv.FormatInt(i, 10)+"."), f)
	}
	var alts []expr
	if hi == nil {
		alts = append(alts, point(il, fracRange(fl, "", true, false, lo.strict, false, 0)), seq(natRange(il+1, -1), lit("."), anyFrac))
		return alt(alts...)
	}
	ih, fh := fracString(hi.v)
	if il == ih {
		if e := point(il, fracRange(fl, fh, true, true, lo.strict, hi.strict, 0)); e != nil {
			return e
		}
		return nil
	}
	if e := point(il, fracRange(fl, "", true, false, lo.strict, false, 0)); e != nil {
		alts = append(alts, e)
	}
	if il+1 <= ih-1 {
		alts = append(alts, seq(natRange(il+1, ih-1), lit("."), anyFrac))
	}
	if e := point(ih, fracRange("", fh, false, true, false, hi.strict, 0)); e != nil {
		alts = append(alts, e)
	}
	if len(alts) == 0 {
		return nil
	}
	return alt(alts...)
}

// fracRange is the fraction digit strings g (pos of them written, 1 to
// maxDigits in all) with lo ≤ 0.g ≤ hi, compared digit by digit: loT says
// the digits so far equal lo's (lo holds its digits still to compare),
// hiT the same for hi; loS and hiS make the bounds exclusive. nil: none.
func fracRange(lo, hi string, loT, hiT, loS, hiS bool, pos int) expr {
	var alts []expr
	if pos > 0 {
		ok := !(loT && (lo != "" || loS)) && !(hiT && hi == "" && hiS)
		if ok {
			alts = append(alts, seq())
		}
	}
	if pos < maxDigits {
		ld, hd := byte('0'), byte('9')
		if loT && lo != "" {
			ld = lo[0]
		}
		if hiT {
			hd = '0'
			if hi != "" {
				hd = hi[0]
			}
		}
		rest := func(s string) string {
			if s == "" {
				return ""
			}
			return s[1:]
		}
		loose := rep(digits('0', '9'), 0, maxDigits-pos-1)
		for d := ld; d <= hd; d++ {
			lt, ht := loT && d == ld, hiT && d == hd
			if !lt && !ht {
				top := hd
				if hiT {
					top = hd - 1
				}
				alts = append(alts, seq(digits(rune(d), rune(top)), loose))
				d = top
				continue
			}
			if e := fracRange(rest(lo), rest(hi), lt, ht, loS, hiS, pos+1); e != nil {
				alts = append(alts, seq(lit(string(rune(d))), e))
			}
		}
	}
	if len(alts) == 0 {
		return nil
	}
	return alt(alts...)
}

// modAutomaton reads a number's characters (sign, digits, point) and
// accepts when it is a multiple of q = multipleOf: with q = a/10^k, the
// state is the remainder mod a of the digits read so far as one integer
// and how many fraction digits were read (past k only zeros may follow);
// at the end the missing fraction digits multiply the remainder by 10.
func (c *schemaCompiler) modAutomaton(mv any, path string) (*nfa, error) {
	q, err := decimalOf(mv, path, "multipleOf")
	if err != nil {
		return nil, err
	}
	if q.Sign() <= 0 {
		return nil, serr(path, "multipleOf", "must be greater than 0")
	}
	_, k := fracDigits(q)
	if k > maxDigits {
		return nil, serr(path, "multipleOf", "more than %d digits after the point are not supported", maxDigits)
	}
	an := new(big.Rat).Mul(q, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)))
	if !an.Num().IsInt64() || an.Num().Int64() > 1e12 {
		return nil, serr(path, "multipleOf", "the modulus is too large to enforce")
	}
	a := an.Num().Int64()
	if a*int64(k+2) > modMaxBuild {
		return nil, serr(path, "multipleOf", "%s needs a remainder automaton of %d states; at most %d are built", mv, a*int64(k+2), modMaxBuild)
	}
	// Symbols: the digits 0-9, '-' (10) and '.' (11); -1 is no move.
	type st struct {
		j int // -1: integral part; 0..k: fraction digits read
		r int64
	}
	index := map[st]int{{-1, 0}: 0}
	order := []st{{-1, 0}}
	get := func(s st) int {
		if i, ok := index[s]; ok {
			return i
		}
		index[s] = len(order)
		order = append(order, s)
		return len(order) - 1
	}
	var next [][12]int
	var accept []bool
	for i := 0; i < len(order); i++ {
		s := order[i]
		if err := c.b.step(12); err != nil {
			return nil, err
		}
		var row [12]int
		for x := range row {
			row[x] = -1
		}
		switch {
		case s.j < 0:
			row[10], row[11] = i, get(st{0, s.r})
			for d := range 10 {
				row[d] = get(st{-1, (10*s.r + int64(d)) % a})
			}
		case s.j < k:
			for d := range 10 {
				row[d] = get(st{s.j + 1, (10*s.r + int64(d)) % a})
			}
		default:
			row[0] = i // past k fraction digits: zeros only
		}
		r := s.r
		for x := max(s.j, 0); x < k; x++ {
			r = 10 * r % a
		}
		next = append(next, row)
		accept = append(accept, r == 0)
	}
	// Moore's partition refinement merges states no input tells apart
	// (multipleOf 1000 needs four: how many trailing zeros were read).
	class := make([]int, len(next))
	for i, acc := range accept {
		if acc {
			class[i] = 1
		}
	}
	for n := 0; ; {
		sig := map[[13]int]int{}
		fresh := make([]int, len(next))
		for i, row := range next {
			if err := c.b.step(13); err != nil {
				return nil, err
			}
			var key [13]int
			key[12] = class[i]
			for x, t := range row {
				key[x] = -1
				if t >= 0 {
					key[x] = class[t]
				}
			}
			id, ok := sig[key]
			if !ok {
				id = len(sig)
				sig[key] = id
			}
			fresh[i] = id
		}
		class = fresh
		if len(sig) == n {
			break
		}
		n = len(sig)
	}
	// class numbers follow first appearance, so the start (state 0) is class 0.
	nc := 0
	for _, x := range class {
		nc = max(nc, x+1)
	}
	if nc > modMaxStates {
		return nil, serr(path, "multipleOf", "%s needs a remainder automaton of %d states; at most %d are enforced", mv, nc, modMaxStates)
	}
	out := &nfa{moves: make([][]nfaMove, nc), accept: make([]bool, nc)}
	done := make([]bool, nc)
	for i, row := range next {
		ci := class[i]
		if done[ci] {
			continue
		}
		done[ci] = true
		if err := c.b.alloc(1, 12*64); err != nil {
			return nil, err
		}
		var ms []nfaMove
		for x, t := range row {
			if t < 0 {
				continue
			}
			ch := rune('0' + x)
			switch x {
			case 10:
				ch = '-'
			case 11:
				ch = '.'
			}
			ms = append(ms, nfaMove{[]cpRange{{ch, ch}}, class[t]})
		}
		out.moves[ci] = mergeMoves(ms)
		out.accept[ci] = accept[i]
	}
	return out, nil
}

// The remainder automaton of multipleOf: built up to modMaxBuild states,
// enforced when it minimises to at most modMaxStates (its product with the
// number's shape, ~100 states, then stays within the default budget).
const (
	modMaxBuild  = 1 << 16
	modMaxStates = 512
)

// intRange is the decimal integers in [lo, hi] (nil: unbounded), or nil if
// there are none.
func intRange(lo, hi *int64) expr {
	var alts []expr
	if lo == nil || *lo < 0 { // negatives: -n for n in [a, b]
		a := int64(1)
		if hi != nil && *hi < 0 {
			a = -*hi
		}
		b := int64(-1)
		if lo != nil {
			b = -*lo
		}
		if b < 0 || a <= b {
			alts = append(alts, seq(lit("-"), natRange(a, b)))
		}
	}
	if hi == nil || *hi >= 0 {
		a := int64(0)
		if lo != nil && *lo > 0 {
			a = *lo
		}
		b := int64(-1)
		if hi != nil {
			b = *hi
		}
		if b < 0 || a <= b {
			alts = append(alts, natRange(a, b))
		}
	}
	if len(alts) == 0 {
		return nil
	}
	return alt(alts...)
}

// natRange is the decimal numerals (no leading zeros) of [a, b], b < 0
// meaning unbounded.
func natRange(a, b int64) expr {
	if b < 0 { // unbounded above: up to maxDigits digits
		d := len(strconv.FormatInt(a, 10))
		top := int64(math.Pow10(d)) - 1
		if d >= maxDigits {
			return natRange(a, top)
		}
		more := seq(digits('1', '9'), rep(digits('0', '9'), d, maxDigits-1))
		return alt(natRange(a, top), more)
	}
	var alts []expr
	for l := len(strconv.FormatInt(a, 10)); l <= len(strconv.FormatInt(b, 10)); l++ {
		lo := int64(0)
		if l > 1 {
			lo = int64(math.Pow10(l - 1))
		}
		hi := int64(math.Pow10(l)) - 1
		lo, hi = max(lo, a), min(hi, b)
		if lo <= hi {
			alts = append(alts, sameLen(strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)))
		}
	}
	return alt(alts...)
}

// sameLen is the numerals from x to y, both of the same length.
func sameLen(x, y string) expr {
	if x == y {
		return lit(x)
	}
	n := len(x)
	if strings.Trim(x[1:], "0") == "" && strings.Trim(y[1:], "9") == "" {
		return seq(digits(rune(x[0]), rune(y[0])), rep(digits('0', '9'), n-1, n-1))
	}
	if x[0] == y[0] {
		return seq(lit(x[:1]), sameLen(x[1:], y[1:]))
	}
	nines, zeros := strings.Repeat("9", n-1), strings.Repeat("0", n-1)
	alts := []expr{seq(lit(x[:1]), sameLen(x[1:], nines))}
	if x[0]+1 <= y[0]-1 {
		alts = append(alts, seq(digits(rune(x[0]+1), rune(y[0]-1)), rep(digits('0', '9'), n-1, n-1)))
	}
	alts = append(alts, seq(lit(y[:1]), sameLen(zeros, y[1:])))
	return alt(alts...)
}
