package model

import (
	"math"
)

// The vector operations of a transformer block. Each works on one row (one
// token's activations); the forward pass loops them over the batch (split
// over its workers for long batches). They accumulate in float32 like the
// reference C implementations (llama2.c, ggml) except where a float64
// intermediate is free. The exponentials of softmax and SwiGLU — tens of
// millions per prompt — use expf, and on amd64 its 8-lane AVX2 version
// (ops_amd64.s) over each row's multiple-of-8 prefix.

// rmsNorm writes o = w ⊙ x / sqrt(mean(x²) + eps). o may alias x.
func rmsNorm(o, x, w []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	ss = ss/float32(len(x)) + eps
	s := float32(1 / math.Sqrt(float64(ss)))
	for i, v := range x {
		o[i] = w[i] * (s * v)
	}
}

// layerNorm writes o = (x - mean(x)) / sqrt(var(x) + eps) ⊙ w + b. o may
// alias x.
func layerNorm(o, x, w, b []float32, eps float32) {
	var mean float32
	for _, v := range x {
		mean += v
	}
	mean /= float32(len(x))
	var vr float32
	for _, v := range x {
		d := v - mean
		vr += d * d
	}
	vr /= float32(len(x))
	s := float32(1 / math.Sqrt(float64(vr+eps)))
	for i, v := range x {
		o[i] = (v-mean)*s*w[i] + b[i]
	}
}

// softmax normalises x in place to exp(x - max) / Σ exp(x - max).
func softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	inv := 1 / softmaxExp(x)
	for i := range x {
		x[i] *= inv
	}
}

// softmaxExp sets x[i] = exp(x[i] - max x) and returns their sum (≥ 1):
// softmax without the final division, which attention applies to its
// HeadDim-wide output instead of the (positions)-long scores.
func softmaxExp(x []float32) float32 {
	mx, i := vecMax(x)
	if i == 0 {
		mx = x[0]
	}
	for _, v := range x[i:] {
		if v > mx {
			mx = v
		}
	}
	sum, i := vecExpShift(x, mx)
	for j, v := range x[i:] {
		e := expf(v - mx)
		x[i+j] = e
		sum += e
	}
	return sum
}

// silu is x·σ(x) (the "swish" gate of SwiGLU).
func silu(x float32) float32 { return x / (1 + expf(-x)) }

// expf is e^x in float32 to about 1 ulp (Cephes' expf): x = n·ln2 + r
// with n = round(x/ln2) and |r| ≤ ln2/2, e^r by a degree-6 polynomial,
// 2^n by building the exponent bits. A few times faster than math.Exp
// through float64; softmax and SiLU call it millions of times per prompt.
// Below -87.3 (where e^x leaves the normal range) it returns 0, above
// 88.7 +Inf; NaN stays NaN.
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

// geluTanh is GPT-2's GELU approximation
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func geluTanh(x float32) float32 {
	const c = 0.7978845608028654 // √(2/π)
	xf := float64(x)
	return float32(0.5 * xf * (1 + math.Tanh(c*(xf+0.044715*xf*xf*xf))))
}

// swiglu writes gate[i] = silu(gate[i]) · up[i].
func swiglu(gate, up []float32) {
	i := vecSwiGLU(gate, up)
	for ; i < len(gate); i++ {
		gate[i] = silu(gate[i]) * up[i]
	}
}

// addTo adds b into a element-wise.
func addTo(a, b []float32) {
	for i := range a {
		a[i] += b[i]
	}
}

// ropeInterleaved rotates the pairs (x[2i], x[2i+1]) for i < len(cos) by
// the angles whose cosines and sines are cos[i], sin[i] (llama2.c and the
// llama-architecture GGUF layout).
func ropeInterleaved(x, cos, sin []float32) {
	for i := range cos {
		c, s := cos[i], sin[i]
		a, b := x[2*i], x[2*i+1]
		x[2*i] = a*c - b*s
		x[2*i+1] = a*s + b*c
	}
}

// ropeNeox rotates the pairs (x[i], x[i+len(cos)]) (the "rotate halves"
// layout of Hugging Face Llama/Qwen2 and NEOX-type GGUF architectures).
func ropeNeox(x, cos, sin []float32) {
	h := len(cos)
	for i := range cos {
		c, s := cos[i], sin[i]
		a, b := x[i], x[i+h]
		x[i] = a*c - b*s
		x[i+h] = a*s + b*c
	}
}
