package tensor

import "math"

// Element-wise vector operations of a transformer block that are bound by
// the exponential: softmax (attention scores, the output distribution) and
// SwiGLU/SiLU (the feed-forward gate). A prompt needs tens of millions of
// them, and training as many again for the backward pass, so e^x is
// computed in float32 by expf (Cephes' expf, ~1 ulp) and, on amd64 with
// AVX2+FMA, by its 8-lane version (vecops_amd64.s) over each slice's
// multiple-of-8 prefix; the Go loop finishes the tail. The two agree to
// about 1 ulp (TestVecOps).

// expf is e^x in float32 to about 1 ulp (Cephes' expf): x = n·ln2 + r
// with n = round(x/ln2) and |r| ≤ ln2/2, e^r by a degree-6 polynomial,
// 2^n by building the exponent bits. Several times faster than math.Exp
// through float64. Below -87.3 (where e^x leaves the normal range) it
// returns 0, above 88.7 +Inf; NaN stays NaN.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375 // ln2 split so n·ln2hi is exact
		ln2lo = -2.12194440e-4
	)
	switch {
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -87.33654:
		return 0
	case x != x:
		return x
	}
	t := x * log2e
	if t < 0 {
		t -= 0.5
	} else {
		t += 0.5
	}
	n := float32(int32(t)) // round half away from zero
	r := x - n*ln2hi - n*ln2lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	// 2^n for n in [-126, 127]: at x ≈ 88.7, n = 128 would overflow the
	// exponent, so scale in two halves.
	ni := int32(n)
	h := ni / 2
	return y * math.Float32frombits(uint32(h+127)<<23) * math.Float32frombits(uint32(ni-h+127)<<23)
}

// SiLU is z·σ(z) = z / (1 + e^-z) (the "swish" gate of SwiGLU).
func SiLU(z float32) float32 { return z / (1 + expf(-z)) }

// Max returns the largest element of x (x must not be empty).
func Max(x []float32) float32 {
	mx, i := vecMax(x)
	if i == 0 {
		mx = x[0]
	}
	for _, v := range x[i:] {
		mx = max(mx, v)
	}
	return mx
}

// ExpShift sets x[i] = e^(x[i] - shift) and returns Σ x[i].
func ExpShift(x []float32, shift float32) float32 {
	sum, i := vecExpShift(x, shift)
	for j, v := range x[i:] {
		e := expf(v - shift)
		x[i+j] = e
		sum += e
	}
	return sum
}

// SoftmaxExp sets x[i] = e^(x[i] - max x) and returns their sum (≥ 1 for
// a non-empty x): softmax without the final division, for callers that
// divide something smaller instead (attention divides its head-wide
// output, not the positions-long scores).
func SoftmaxExp(x []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	return ExpShift(x, Max(x))
}

// Softmax normalises x in place to e^(x - max) / Σ e^(x - max).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	inv := 1 / SoftmaxExp(x)
	for i := range x {
		x[i] *= inv
	}
}

// SwiGLU sets gate[i] = silu(gate[i]) · up[i].
func SwiGLU(gate, up []float32) {
	_ = up[:len(gate)]
	i := vecSwiGLU(gate, up)
	for ; i < len(gate); i++ {
		gate[i] = SiLU(gate[i]) * up[i]
	}
}

// MulSigmoid sets x[i] = x[i]·σ(g[i]) = x[i] / (1 + e^-g[i]) (Qwen3.5's
// sigmoid output gates), with SwiGLU's float32 exponential: AVX2 over the
// multiple-of-8 prefix, the Go loop for the tail, so its bits depend on
// len(x) only.
func MulSigmoid(x, g []float32) {
	_ = g[:len(x)]
	i := vecMulSigmoid(x, g)
	for ; i < len(x); i++ {
		x[i] = x[i] / (1 + expf(-g[i]))
	}
}
