package sample

import (
	"math"
	"math/bits"
	"unsafe"
)

// Vocabulary-wide kernels. Each has a pure-Go definition (the *Go functions
// below) and, on amd64 with AVX2, an assembly version (vec_amd64.s) that
// returns the same bits: the exp kernels run expCore's exact sequence of
// IEEE-754 float64 operations four lanes at a time (VMULPD/VADDPD/VSUBPD
// round each lane exactly as the scalar operations do, and there is no FMA),
// integer sums are exact in any order, and float sums use the same four
// lanes and the same final reduction in both versions. Tests compare the two
// on millions of inputs; the golden test runs on both.
//
// The wrappers hand the assembly the largest multiple of 8 elements and
// finish the tail in Go.

// useAVX2 selects the assembly kernels; tests flip it to run the Go ones.
var useAVX2 = hasAVX2

// expConsts holds expCore's constants and a call's parameters, each
// broadcast to four lanes (the assembly reads them as 32-byte operands at
// the offsets C_* in vec_amd64.s; TestExpConstsLayout pins them).
type expConsts struct {
	m       [4]float64 // subtracted from every logit
	invT    [4]float64 // 1/T (1 for the log-softmax sum)
	lo      [4]float64 // x is clamped to it: xmin (weights) or -60 (expSum)
	invLn2  [4]float64 // 64/ln2
	shifter [4]float64 // 1.5·2^52
	nbias   [4]uint64  // bits(shifter) − 1023·64: bits(t) − nbias = n + 1023·64
	ln2Hi   [4]float64
	ln2Lo   [4]float64
	c5      [4]float64 // 1/120
	c4      [4]float64 // 1/24
	c3      [4]float64 // 1/6
	c2      [4]float64 // 1/2
	one     [4]float64
	mask63  [4]uint64
	notM63  [4]uint64
	k       [4]uint64  // 1075 − shift: weight = mantissa >> (k − biased exponent)
	mant    [4]uint64  // 2^52 − 1
	implied [4]uint64  // 2^52
	sub31   [4]uint64  // histKey: mask of the 5 bits after the leading one
	keyBase [4]uint64  // histKey: 48·32
	kmin    [4]uint64  // weightsHist: kmin − 1 (keys below kmin may be skipped)
	eFloor  [4]float64 // expSum: expSumFloor
}

func bcast(v float64) [4]float64 { return [4]float64{v, v, v, v} }
func bcastU(v uint64) [4]uint64  { return [4]uint64{v, v, v, v} }

func newExpConsts(c *expConsts, m, invT, lo float64, shift int) {
	const (
		invLn2x64 = 0x1.71547652b82fep+06
		ln2o64Hi  = 0x1.62e42feep-07
		ln2o64Lo  = 0x1.a39ef35793c76p-39
		shifter   = 0x1.8p52
	)
	c.m, c.invT, c.lo = bcast(m), bcast(invT), bcast(lo)
	c.invLn2, c.shifter = bcast(invLn2x64), bcast(shifter)
	c.nbias = bcastU(math.Float64bits(shifter) - 1023*64)
	c.ln2Hi, c.ln2Lo = bcast(ln2o64Hi), bcast(ln2o64Lo)
	c.c5, c.c4, c.c3, c.c2, c.one = bcast(1.0/120), bcast(1.0/24), bcast(1.0/6), bcast(0.5), bcast(1)
	c.mask63, c.notM63 = bcastU(63), bcastU(^uint64(63))
	c.k = bcastU(uint64(1075 - shift))
	c.mant, c.implied = bcastU(1<<52-1), bcastU(1<<52)
	c.sub31, c.keyBase = bcastU(31), bcastU(48<<5)
	c.eFloor = bcast(expSumFloor)
}

// weights sets w[i] = ⌊expDet((l[i] − m)·invT)·scale⌋ for all i and returns
// Σ w. scale must be 2^shift with 0 <= shift <= 62, m >= max(l), and xmin
// such that the weight at xmin is 0 (the sampler's xmin = −(shift+1)·ln2).
// Then the weight is 0 for every x < xmin, so the exp can be skipped there
// (Go) or x clamped to xmin (assembly), with the same result.
func weights(w []uint64, l []float32, m, invT, scale, xmin float64) uint64 {
	w = w[:len(l)]
	n := 0
	var sum uint64
	if useAVX2 && len(l) >= 8 {
		n = len(l) &^ 7
		var c expConsts
		newExpConsts(&c, m, invT, xmin, int(math.Float64bits(scale)>>52)-1023)
		sum = weightsAVX2(unsafe.SliceData(w), unsafe.SliceData(l), n, &c, &exp2Table)
	}
	return sum + weightsGo(w[n:], l[n:], m, invT, scale, xmin)
}

// histBins is the size of the top-p weight histogram (see histKey).
const histBins = 2048

// histKey returns weight x's histogram bin: x itself below 64, else 32·(b−5)
// plus the 5 bits after the leading one, b = x's bit length (7..63). It is
// monotone in x, and < 1888 for x < 2^63.
func histKey(x uint64) int {
	if x < 64 {
		return int(x)
	}
	b := bits.Len64(x)
	return (b-5)<<5 | int(x>>(b-6))&31
}

// histRange returns the weights [lo, hi) of histogram bin k (k < 1888).
func histRange(k int) (lo, hi uint64) {
	if k < 64 {
		return uint64(k), uint64(k) + 1
	}
	b := k>>5 + 5
	lo = uint64(32+k&31) << (b - 6)
	return lo, lo + 1<<(b-6)
}

// weightsHist is weights that also sets hist[k] = Σ{w[i] : histKey(w[i]) = k}
// for every bin k >= kmin (hist is cleared first; lower bins may be partial).
func weightsHist(w []uint64, l []float32, m, invT, scale, xmin float64, hist *[histBins]uint64, kmin int) uint64 {
	clear(hist[:])
	w = w[:len(l)]
	n := 0
	var sum uint64
	if useAVX2 && len(l) >= 8 {
		n = len(l) &^ 7
		var c expConsts
		newExpConsts(&c, m, invT, xmin, int(math.Float64bits(scale)>>52)-1023)
		c.kmin = bcastU(uint64(kmin) - 1)
		sum = weightsHistAVX2(unsafe.SliceData(w), unsafe.SliceData(l), n, &c, &exp2Table, hist)
	} else {
		sum = weightsGo(w, l, m, invT, scale, xmin)
		for _, x := range w {
			hist[histKey(x)&(histBins-1)] += x
		}
		return sum
	}
	sum += weightsGo(w[n:], l[n:], m, invT, scale, xmin)
	for _, x := range w[n:] {
		hist[histKey(x)&(histBins-1)] += x
	}
	return sum
}

// weightsGo is weights in Go. It repeats expCore's arithmetic inline
// (identical operations, hence identical bits; a test pins it) to avoid a
// call per token.
func weightsGo(w []uint64, l []float32, m, invT, scale, xmin float64) uint64 {
	const (
		invLn2x64 = 0x1.71547652b82fep+06
		ln2o64Hi  = 0x1.62e42feep-07
		ln2o64Lo  = 0x1.a39ef35793c76p-39
		shifter   = 0x1.8p52
	)
	w = w[:len(l)]
	var sum uint64
	for i, v := range l {
		x := (float64(v) - m) * invT // <= 0
		if x < xmin {                // also -Inf
			w[i] = 0
			continue
		}
		t := float64(x*invLn2x64) + shifter
		n := int64(math.Float64bits(t) - math.Float64bits(shifter))
		fn := t - shifter
		r := float64(x-float64(fn*ln2o64Hi)) - float64(fn*ln2o64Lo)
		q := float64(r*(1.0/120)) + 1.0/24
		q = float64(r*q) + 1.0/6
		q = float64(r*q) + 0.5
		q = float64(r*q) + 1
		q = r * q
		tj := exp2Table[n&63]
		e := float64(tj+float64(tj*q)) * math.Float64frombits(uint64(n>>6+1023)<<52)
		x64 := uint64(e * scale)
		w[i] = x64
		sum += x64
	}
	return sum
}

// expSumCut: the log-softmax sum clamps x = l[i] − m to it and keeps only
// terms above expSumFloor = expDet(-60) (each term dropped is under 1e-26 of
// the largest).
const expSumCut = -60

var expSumFloor = expDet(expSumCut)

// expSum returns Σ expDet(x_i) over the terms with expDet(x_i) >
// expDet(-60), x_i = max(l[i] − m, -60), for m >= max(l). Term i is added
// to lane i mod 4 and the lanes are reduced in a fixed tree, so the float64
// result is the same with or without assembly.
func expSum(l []float32, m float64) float64 {
	var lanes [4]float64
	n := 0
	if useAVX2 && len(l) >= 8 {
		n = len(l) &^ 7
		var c expConsts
		newExpConsts(&c, m, 1, expSumCut, 0)
		expSumAVX2(unsafe.SliceData(l), n, &c, &exp2Table, &lanes)
	}
	expSumGo(&lanes, l[n:], m) // n is a multiple of 4: lanes line up
	return reduceLanes(&lanes)
}

func reduceLanes(lanes *[4]float64) float64 {
	return (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])
}

// weightsExpSum is weights (with invT = 1) and expSum(l, m) in one pass:
// both exponentiate the same x = l[i] − m. It needs xmin >= -60.
func weightsExpSum(w []uint64, l []float32, m, scale, xmin float64) (sum uint64, z float64) {
	w = w[:len(l)]
	var lanes [4]float64
	n := 0
	if useAVX2 && len(l) >= 8 {
		n = len(l) &^ 7
		var c expConsts
		newExpConsts(&c, m, 1, expSumCut, int(math.Float64bits(scale)>>52)-1023)
		sum = weightsExpSumAVX2(unsafe.SliceData(w), unsafe.SliceData(l), n, &c, &exp2Table, &lanes)
	}
	sum += weightsGo(w[n:], l[n:], m, 1, scale, xmin)
	expSumGo(&lanes, l[n:], m)
	return sum, reduceLanes(&lanes)
}

// expSumGo adds expSum's terms for l to lanes[i mod 4], expCore inlined.
func expSumGo(lanes *[4]float64, l []float32, m float64) {
	const (
		invLn2x64 = 0x1.71547652b82fep+06
		ln2o64Hi  = 0x1.62e42feep-07
		ln2o64Lo  = 0x1.a39ef35793c76p-39
		shifter   = 0x1.8p52
	)
	floor := expSumFloor
	for i, v := range l {
		x := max(float64(v)-m, expSumCut)
		t := float64(x*invLn2x64) + shifter
		n := int64(math.Float64bits(t) - math.Float64bits(shifter))
		fn := t - shifter
		r := float64(x-float64(fn*ln2o64Hi)) - float64(fn*ln2o64Lo)
		q := float64(r*(1.0/120)) + 1.0/24
		q = float64(r*q) + 1.0/6
		q = float64(r*q) + 0.5
		q = float64(r*q) + 1
		q = r * q
		tj := exp2Table[n&63]
		// The conversion keeps the product from fusing with a later sum.
		e := float64(float64(tj+float64(tj*q)) * math.Float64frombits(uint64(n>>6+1023)<<52))
		if e > floor {
			lanes[i&3] += e
		}
	}
}

// maxValid returns the maximum of l (-Inf if l is empty or all -Inf; +0 for
// a maximum of ±0) and whether every value is finite or -Inf (no NaN, no +Inf).
func maxValid(l []float32) (float32, bool) {
	m, ok := negInf32, true
	n := 0
	if useAVX2 && len(l) >= 8 {
		n = len(l) &^ 7
		m, ok = maxValidAVX2(unsafe.SliceData(l), n)
	}
	for _, v := range l[n:] {
		ok = ok && v <= math.MaxFloat32
		m = max(m, v)
	}
	if m == 0 {
		m = 0 // +0 whichever zero won
	}
	return m, ok
}

// indexAbove returns the first i >= from with l[i] > v, or len(l).
func indexAbove(l []float32, from int, v float32) int {
	i := from
	if useAVX2 && len(l)-i >= 8 {
		n := (len(l) - i) &^ 7
		if j := indexAboveAVX2(&l[i], n, v); j < n {
			return i + j
		}
		i += n
	}
	for ; i < len(l); i++ {
		if l[i] > v {
			return i
		}
	}
	return len(l)
}

// indexBetween returns the first i >= from with a <= l[i] <= b, or len(l).
func indexBetween(l []float32, from int, a, b float32) int {
	i := from
	if useAVX2 && len(l)-i >= 8 {
		n := (len(l) - i) &^ 7
		if j := indexBetweenAVX2(&l[i], n, a, b); j < n {
			return i + j
		}
		i += n
	}
	for ; i < len(l); i++ {
		if l[i] >= a && l[i] <= b {
			return i
		}
	}
	return len(l)
}

// indexEqual returns the first i with l[i] == v, or len(l).
func indexEqual(l []float32, v float32) int {
	i := 0
	if useAVX2 && len(l) >= 8 {
		n := len(l) &^ 7
		if j := indexEqualAVX2(unsafe.SliceData(l), n, v); j < n {
			return j
		}
		i = n
	}
	for ; i < len(l); i++ {
		if l[i] == v {
			return i
		}
	}
	return len(l)
}

// drawAtLeast returns the first i whose running sum of the weights >= thr,
// Σ{w[j] : j <= i, w[j] >= thr}, exceeds t; len(w) if none does. Weights
// must be < 2^63 (the sampler's are < 2^62).
func drawAtLeast(w []uint64, thr, t uint64) int {
	i, acc := 0, uint64(0)
	if useAVX2 && len(w) >= 8 {
		// The assembly stops at the block of 8 where the sum passes t.
		i, acc = drawAtLeastAVX2(unsafe.SliceData(w), len(w)&^7, thr, t)
	}
	for ; i < len(w); i++ {
		if x := w[i]; x >= thr {
			acc += x
			if acc > t {
				return i
			}
		}
	}
	return len(w)
}

// sumAtLeast returns Σ{x in w : x >= thr} (weights < 2^63, sum < 2^64).
func sumAtLeast(w []uint64, thr uint64) uint64 {
	i, acc := 0, uint64(0)
	if useAVX2 && len(w) >= 8 {
		i, acc = drawAtLeastAVX2(unsafe.SliceData(w), len(w)&^7, thr, math.MaxUint64)
	}
	for _, x := range w[i:] {
		if x >= thr {
			acc += x
		}
	}
	return acc
}
