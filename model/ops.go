package model

import (
	"math"
)

// The vector operations of a transformer block. Each works on one row (one
// token's activations); the forward pass loops them over the batch (split
// over its workers for long batches). They accumulate in float32 like the
// reference C implementations (llama2.c, ggml) except where a float64
// intermediate is free. The exponentials of softmax and SwiGLU — tens of
// millions per prompt — are tensor's vector kernels (tensor.Softmax,
// tensor.SoftmaxExp, tensor.SwiGLU).

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

// rmsNormPlain normalises x in place to unit root mean square, without
// gains: x / sqrt(mean(x²) + eps) (Gemma 4's V-norm).
func rmsNormPlain(x []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	ss = ss/float32(len(x)) + eps
	s := float32(1 / math.Sqrt(float64(ss)))
	for i, v := range x {
		x[i] = s * v
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

// geluTanh is GPT-2's GELU approximation
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func geluTanh(x float32) float32 {
	const c = 0.7978845608028654 // √(2/π)
	xf := float64(x)
	return float32(0.5 * xf * (1 + math.Tanh(c*(xf+0.044715*xf*xf*xf))))
}

// addTo adds b into a element-wise.
func addTo(a, b []float32) {
	for i := range a {
		a[i] += b[i]
	}
}

// softcap maps each x to c·tanh(x/c) (Gemma 2's attention and final logit
// soft-capping).
func softcap(x []float32, c float32) {
	inv := 1 / float64(c)
	for i, v := range x {
		x[i] = float32(float64(c) * math.Tanh(float64(v)*inv))
	}
}
