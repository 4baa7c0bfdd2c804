package model

import (
	"math"

	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// The gated delta net token mixer of Qwen3.5 (see hybrid.go for the
// equations). Shapes, per token: the convolution's channels are
// [q (n_k·d) ‖ k (n_k·d) ‖ v (n_v·d)]; the state of value head h is a
// (d_v, d_k) matrix S_h stored row-major (row j: the weights that predict
// value component j from the key).

// deltaNetMixer runs a delta-net layer over the n rows of ws.xb, each token
// on its sequence's state, in batch order (a sequence's tokens come in
// position order), and writes the output projection into ws.xb.
func (m *Model) deltaNetMixer(b *Batch, c *kvcache.Cache, r *recWeights, n int) {
	cfg := &m.Config
	hw := &m.hw
	dim, d := cfg.Dim, cfg.SSMHeadDim
	nv := cfg.SSMVHeads
	ch, dc := cfg.ConvChannels(), cfg.ConvKernel
	vd := nv * d
	h := m.ws.xb[:n*dim]
	hw.mix = grow(hw.mix, n*ch)
	hw.z = grow(hw.z, n*vd)
	hw.beta = grow(hw.beta, n*nv)
	hw.alpha = grow(hw.alpha, n*nv)
	hw.o = grow(hw.o, n*vd)
	hw.row = grow(hw.row, ch)
	m.pool.MatMul(hw.mix, r.wqkv, h, n)
	m.pool.MatMul(hw.z, r.wz, h, n)
	m.pool.MatMul(hw.beta, r.wBeta, h, n)
	m.pool.MatMul(hw.alpha, r.wAlpha, h, n)
	// Phase 1: the causal convolution (which advances each sequence's
	// window), SiLU, and the L2-normalised q and k of every key head (q
	// also by 1/√d), in place in hw.mix. Channels are independent, so the
	// workers take d-wide channel blocks (whole q/k heads), each running
	// the batch's tokens in order: the same numbers whatever the split.
	// One decode token's channels are too little work to hand out.
	cj := &hw.conv
	cj.m, cj.b, cj.c, cj.r, cj.n = m, b, c, r, n
	if work := n * ch * dc; m.pool.Threads() > 1 && ch%d == 0 && work >= parRowsMin && !deltaConvSerial {
		m.pool.For(ch/d, 1, cj)
	} else {
		cj.Range(0, ch/d, 0)
	}
	cj.b, cj.c, cj.r = nil, nil, nil
	// Phase 2: the delta rule and the gated norm, value head by value
	// head (each head's state is its own, so heads run in parallel; within
	// a head the tokens go in batch order, the same arithmetic whatever the
	// split: batch invariant).
	j := &hw.job
	j.m, j.b, j.c, j.r, j.n = m, b, c, r, n
	if work := n * nv * d * d; m.pool.Threads() > 1 && nv > 1 && work >= parRowsMin {
		m.pool.For(nv, 1, j)
	} else {
		j.Range(0, nv, 0)
	}
	j.b, j.c, j.r = nil, nil, nil
	m.pool.MatMul(h, r.wOut, hw.o[:n*vd], n)
}

// deltaStep is one token of the gated delta rule on one value head's
// state S (d_v rows of d_k): S ← decay·S; S ← S + β(v − S k)kᵀ; out = S q.
// Row j needs only its own values, so each row is one read pass and one
// write pass: tensor.DeltaStep, in SIMD registers where the CPU has them.
func deltaStep(out, S, q, k, v []float32, decay, beta float32) {
	deltaStepFn(out, S, q, k, v, decay, beta)
}

// deltaStepFn is the kernel deltaStep runs; benchmarks swap in the
// previous scalar loop to measure old against new in one run.
var deltaStepFn = tensor.DeltaStep

// deltaConvSerial runs phase 1 of deltaNetMixer on one thread, as the
// model did before (benchmarks: old against new).
var deltaConvSerial = false

// l2Norm writes o = x / √(Σx² + eps) (ggml_l2_norm as llama.cpp's
// build_gdn_l2_norm computes it: an RMSNorm with eps/n, scaled by 1/√n).
func l2Norm(o, x []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	s := float32(1 / math.Sqrt(float64(ss+eps)))
	for i, v := range x {
		o[i] = v * s
	}
}

// convJob runs channel blocks [lo, hi) (d wide; the last may be
// shorter) of phase 1 of deltaNetMixer, a tensor.RangeJob kept in the
// workspace.
type convJob struct {
	m *Model
	b *Batch
	c *kvcache.Cache
	r *recWeights
	n int
}

func (j *convJob) Range(lo, hi, _ int) {
	m, r := j.m, j.r
	cfg := &m.Config
	hw := &m.hw
	d, nk := cfg.SSMHeadDim, cfg.SSMKHeads
	ch, dc := cfg.ConvChannels(), cfg.ConvKernel
	convLen := (dc - 1) * ch
	scale := float32(1 / math.Sqrt(float64(d)))
	c0, c1 := lo*d, min(hi*d, ch)
	if hi >= ch/d {
		c1 = ch
	}
	for i := range j.n {
		st := j.c.State(j.b.Seq[i])[r.stateOff : r.stateOff+convLen]
		x := hw.mix[i*ch : (i+1)*ch]
		causalConvRange(hw.row, x, st, r.conv, ch, dc, c0, c1)
		copy(x[c0:c1], hw.row[c0:c1])
		// SiLU per d-wide block: the same spans (so the same bits)
		// however the channels are split between workers.
		for b0 := c0; b0 < c1; b0 += d {
			tensor.SiLUs(x[b0:min(b0+d, c1)])
		}
		for kh := lo; kh < min(hi, 2*nk); kh++ {
			qk := x[kh*d : (kh+1)*d]
			l2Norm(qk, qk, cfg.NormEps)
			if kh < nk {
				for t := range qk {
					qk[t] *= scale
				}
			}
		}
	}
}

// deltaJob runs value heads [lo, hi) of a delta-net layer over the batch
// (phase 2 of deltaNetMixer), a tensor.RangeJob kept in the workspace.
type deltaJob struct {
	m *Model
	b *Batch
	c *kvcache.Cache
	r *recWeights
	n int
}

func (j *deltaJob) Range(lo, hi, _ int) {
	m, r := j.m, j.r
	cfg := &m.Config
	hw := &m.hw
	d, nk, nv := cfg.SSMHeadDim, cfg.SSMKHeads, cfg.SSMVHeads
	ch, vd := cfg.ConvChannels(), nv*d
	convLen := (cfg.ConvKernel - 1) * ch
	for vh := lo; vh < hi; vh++ {
		kh := vh % nk // value head vh reads key head vh mod n_k (tiled)
		for i := range j.n {
			st := j.c.State(j.b.Seq[i])[r.stateOff:]
			x := hw.mix[i*ch : (i+1)*ch]
			g := softplus(hw.alpha[i*nv+vh]+r.dtBias[vh]) * r.a[vh]
			beta := sigmoid(hw.beta[i*nv+vh])
			o := hw.o[i*vd+vh*d : i*vd+(vh+1)*d]
			deltaStep(o, st[convLen+vh*d*d:convLen+(vh+1)*d*d], x[kh*d:(kh+1)*d], x[(nk+kh)*d:(nk+kh+1)*d],
				x[2*nk*d+vh*d:2*nk*d+(vh+1)*d], float32(math.Exp(float64(g))), beta)
			// Gated RMSNorm: RMSNorm(o_h)·SiLU(z_h).
			rmsNorm(o, o, r.ssmNorm, cfg.NormEps)
			z := hw.z[i*vd+vh*d : i*vd+(vh+1)*d]
			tensor.SwiGLU(z, o) // z ← SiLU(z)·o (z is this token's and head's alone)
			copy(o, z)
		}
	}
}
