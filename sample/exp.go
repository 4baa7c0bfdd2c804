package sample

import "math"

// expDet computes e^x with a fixed sequence of IEEE-754 float64 operations, so
// it returns the same bits on every platform (math.Exp has assembly versions on
// some architectures and the compiler may fuse a*b+c into an FMA on others; both
// can move the last bit, and a draw must not depend on that). It is accurate to
// about 1 ulp over the range the sampler uses (x <= 0); results below 2^-1022
// are flushed to 0 and x > 709 gives +Inf.
//
// Method: with N = 64, write x = (64k + j)·ln2/64 + r, |r| <= ln2/128, so
//
//	e^x = 2^k · 2^(j/64) · e^r
//
// 2^(j/64) comes from a table of correctly rounded constants (checked by a test
// against a 300-bit computation), and e^r − 1 from its degree-5 Taylor
// polynomial (truncation error r^6/720 < 4e-17). ln2/64 is split into a 32-bit
// head and a tail (Cody–Waite) so n·head is exact. Every product that is followed
// by an addition is wrapped in float64(...) — an explicit conversion forbids
// fusing (Go spec, "Floating-point operators").
func expDet(x float64) float64 {
	switch {
	case x != x: // NaN
		return x
	case x > 709:
		return math.Inf(1)
	case x < -708: // also -Inf
		return 0
	}
	return expCore(x)
}

// expCore is expDet without the range checks: x must be in [-708, 709]. It is
// small enough to be inlined into the vocabulary-wide loops.
func expCore(x float64) float64 {
	const (
		invLn2x64 = 0x1.71547652b82fep+06 // 64/ln2
		ln2o64Hi  = 0x1.62e42feep-07      // ln2/64, 32 significant bits
		ln2o64Lo  = 0x1.a39ef35793c76p-39 // ln2/64 − ln2o64Hi
		shifter   = 0x1.8p52              // adding it rounds to an integer
	)
	t := float64(x*invLn2x64) + shifter
	n := int64(math.Float64bits(t) - math.Float64bits(shifter)) // round(x·64/ln2)
	fn := t - shifter
	r := float64(x-float64(fn*ln2o64Hi)) - float64(fn*ln2o64Lo)
	// q = e^r − 1 = r + r²/2 + r³/6 + r⁴/24 + r⁵/120 (Horner).
	q := float64(r*(1.0/120)) + 1.0/24
	q = float64(r*q) + 1.0/6
	q = float64(r*q) + 0.5
	q = float64(r*q) + 1
	q = r * q
	tj := exp2Table[n&63]
	// 2^k with k = floor(n/64) in [-1022, 1022] for x in [-708, 709].
	return float64(tj+float64(tj*q)) * math.Float64frombits(uint64(n>>6+1023)<<52)
}

// exp2Table[j] = 2^(j/64), correctly rounded.
var exp2Table = [64]float64{
	0x1p+00, 0x1.02c9a3e778061p+00, 0x1.059b0d3158574p+00, 0x1.0874518759bc8p+00,
	0x1.0b5586cf9890fp+00, 0x1.0e3ec32d3d1a2p+00, 0x1.11301d0125b51p+00, 0x1.1429aaea92dep+00,
	0x1.172b83c7d517bp+00, 0x1.1a35beb6fcb75p+00, 0x1.1d4873168b9aap+00, 0x1.2063b88628cd6p+00,
	0x1.2387a6e756238p+00, 0x1.26b4565e27cddp+00, 0x1.29e9df51fdee1p+00, 0x1.2d285a6e4030bp+00,
	0x1.306fe0a31b715p+00, 0x1.33c08b26416ffp+00, 0x1.371a7373aa9cbp+00, 0x1.3a7db34e59ff7p+00,
	0x1.3dea64c123422p+00, 0x1.4160a21f72e2ap+00, 0x1.44e086061892dp+00, 0x1.486a2b5c13cdp+00,
	0x1.4bfdad5362a27p+00, 0x1.4f9b2769d2ca7p+00, 0x1.5342b569d4f82p+00, 0x1.56f4736b527dap+00,
	0x1.5ab07dd485429p+00, 0x1.5e76f15ad2148p+00, 0x1.6247eb03a5585p+00, 0x1.6623882552225p+00,
	0x1.6a09e667f3bcdp+00, 0x1.6dfb23c651a2fp+00, 0x1.71f75e8ec5f74p+00, 0x1.75feb564267c9p+00,
	0x1.7a11473eb0187p+00, 0x1.7e2f336cf4e62p+00, 0x1.82589994cce13p+00, 0x1.868d99b4492edp+00,
	0x1.8ace5422aa0dbp+00, 0x1.8f1ae99157736p+00, 0x1.93737b0cdc5e5p+00, 0x1.97d829fde4e5p+00,
	0x1.9c49182a3f09p+00, 0x1.a0c667b5de565p+00, 0x1.a5503b23e255dp+00, 0x1.a9e6b5579fdbfp+00,
	0x1.ae89f995ad3adp+00, 0x1.b33a2b84f15fbp+00, 0x1.b7f76f2fb5e47p+00, 0x1.bcc1e904bc1d2p+00,
	0x1.c199bdd85529cp+00, 0x1.c67f12e57d14bp+00, 0x1.cb720dcef9069p+00, 0x1.d072d4a07897cp+00,
	0x1.d5818dcfba487p+00, 0x1.da9e603db3285p+00, 0x1.dfc97337b9b5fp+00, 0x1.e502ee78b3ff6p+00,
	0x1.ea4afa2a490dap+00, 0x1.efa1bee615a27p+00, 0x1.f50765b6e454p+00, 0x1.fa7c1819e90d8p+00,
}
