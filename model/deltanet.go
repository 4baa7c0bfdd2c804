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
	ch := cfg.ConvChannels()
	vd := nv * d
	h := m.ws.xb[:n*dim]
	hw.mix = grow(hw.mix, n*ch)
	hw.z = grow(hw.z, n*vd)
	hw.beta = grow(hw.beta, n*nv)
	hw.alpha = grow(hw.alpha, n*nv)
	hw.o = grow(hw.o, n*vd)
	hw.row = grow(hw.row, ch)
	// The two wide projections in one hand-off to the workers when
	// MatMulShared can (one token); bit for bit two MatMuls either way.
	hw.mats[0], hw.mats[1] = r.wqkv, r.wz
	hw.dsts[0], hw.dsts[1] = hw.mix, hw.z
	m.pool.MatMulShared(h, n, hw.mats[:2], hw.dsts[:2])
	// β and α are n_v rows each: for a few tokens too little to hand out,
	// so they run on this goroutine (a nil Pool; MatMul's numbers do not
	// depend on the pool), two fewer waits for the workers per layer.
	small := m.pool
	if n <= 8 {
		small = nil
	}
	small.MatMul(hw.beta, r.wBeta, h, n)
	small.MatMul(hw.alpha, r.wAlpha, h, n)
	// The rest of the mixer, key head by key head in one pass (one
	// hand-out to the workers per layer, in decode as in prefill): for
	// each token in batch order, the causal convolution (which advances
	// the sequence's window) of the head's q and k channels and of the v
	// channels of its value heads, SiLU, the L2-normalised q (also by
	// 1/√d) and k, then per value head the delta rule on its state and the
	// gated norm. Heads share nothing but read-only weights, and within a
	// head the tokens go in order with the same arithmetic on the same
	// spans whatever the split: batch invariant.
	j := &hw.job
	j.m, j.b, j.c, j.r, j.n = m, b, c, r, n
	if len(hw.chunk) < m.pool.Threads() {
		hw.chunk = make([]chunkScratch, m.pool.Threads())
	}
	if work := n * nv * d * d; m.pool.Threads() > 1 && cfg.SSMKHeads > 1 && work >= parRowsMin {
		m.pool.For(cfg.SSMKHeads, 1, j)
	} else {
		j.Range(0, cfg.SSMKHeads, 0)
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

// deltaJob runs key heads [lo, hi) of a delta-net layer over the batch
// (deltaNetMixer's fused pass), a tensor.RangeJob kept in the workspace.
type deltaJob struct {
	m *Model
	b *Batch
	c *kvcache.Cache
	r *recWeights
	n int
}

func (j *deltaJob) Range(lo, hi, worker int) {
	m, r := j.m, j.r
	cfg := &m.Config
	hw := &m.hw
	d, nk, nv := cfg.SSMHeadDim, cfg.SSMKHeads, cfg.SSMVHeads
	ch, dc, vd := cfg.ConvChannels(), cfg.ConvKernel, nv*d
	convLen := (dc - 1) * ch
	scale := float32(1 / math.Sqrt(float64(d)))
	// prep runs token i's convolution and SiLU of key head kh's q and k
	// channels and its value heads' v channels (d-wide blocks: q heads,
	// then k heads, then v heads), then the q and k norms.
	prep := func(i, kh int) {
		st := j.c.State(j.b.Seq[i])[r.stateOff : r.stateOff+convLen]
		x := hw.mix[i*ch : (i+1)*ch]
		conv := func(blk int) {
			c0, c1 := blk*d, (blk+1)*d
			causalConvRange(hw.row, x, st, r.conv, ch, dc, c0, c1)
			copy(x[c0:c1], hw.row[c0:c1])
			tensor.SiLUs(x[c0:c1])
		}
		conv(kh)
		conv(nk + kh)
		for vh := kh; vh < nv; vh += nk { // value head vh reads key head vh mod n_k (tiled)
			conv(2*nk + vh)
		}
		q, k := x[kh*d:(kh+1)*d], x[(nk+kh)*d:(nk+kh+1)*d]
		l2Norm(q, q, cfg.NormEps)
		for t := range q {
			q[t] *= scale
		}
		l2Norm(k, k, cfg.NormEps)
	}
	// logDecay is token i's g for value head vh, and its β.
	logDecay := func(i, vh int) (g, beta float32) {
		return softplus(hw.alpha[i*nv+vh]+r.dtBias[vh]) * r.a[vh], sigmoid(hw.beta[i*nv+vh])
	}
	// gatedNorm is RMSNorm(o_h)·SiLU(z_h) for token i, value head vh.
	gatedNorm := func(i, vh int) {
		o := hw.o[i*vd+vh*d : i*vd+(vh+1)*d]
		rmsNorm(o, o, r.ssmNorm, cfg.NormEps)
		z := hw.z[i*vd+vh*d : i*vd+(vh+1)*d]
		tensor.SwiGLU(z, o) // z ← SiLU(z)·o (z is this token's and head's alone)
		copy(o, z)
	}
	blocked := deltaBlocked(d)
	w := &hw.chunk[worker]
	for kh := lo; kh < hi; kh++ {
		for i0 := 0; i0 < j.n; {
			// A run of one sequence's consecutive positions: through
			// tensor.DeltaStepsBlocked in one call per value head (its bits
			// do not depend on the run's length: a run of one is decode),
			// chunked (when deltaChunk asks), or token by token.
			i1 := i0 + 1
			for (blocked || deltaChunk > 0) && i1 < j.n && j.b.Seq[i1] == j.b.Seq[i0] {
				i1++
			}
			st := j.c.State(j.b.Seq[i0])[r.stateOff+convLen:]
			if blocked || i1-i0 > 1 {
				for i := i0; i < i1; i++ {
					prep(i, kh)
				}
				for vh := kh; vh < nv; vh += nk {
					w.g, w.b = grow(w.g, i1-i0), grow(w.b, i1-i0)
					for i := i0; i < i1; i++ {
						w.g[i-i0], w.b[i-i0] = logDecay(i, vh)
					}
					S := st[vh*d*d : (vh+1)*d*d]
					q, k, v := hw.mix[i0*ch+kh*d:], hw.mix[i0*ch+(nk+kh)*d:], hw.mix[i0*ch+2*nk*d+vh*d:]
					if deltaChunk > 0 {
						if blocked { // the state is held blocked; the chunked form takes it row-major
							w.rm = grow(w.rm, d*d)
							tensor.DeltaFromBlocked(w.rm, S, d)
							S = w.rm
						}
						tensor.DeltaChunked(hw.o[i0*vd+vh*d:], vd, S, q, k, ch, v, ch, w.g, w.b, d, d, deltaChunk, &w.work)
						if blocked {
							tensor.DeltaToBlocked(st[vh*d*d:(vh+1)*d*d], S, d)
						}
					} else {
						for t, g := range w.g {
							w.g[t] = float32(math.Exp(float64(g))) // the decay e^g, as deltaStep takes it
						}
						tensor.DeltaStepsBlocked(hw.o[i0*vd+vh*d:], vd, S, q, k, ch, v, ch, w.g, w.b, d)
					}
					for i := i0; i < i1; i++ {
						gatedNorm(i, vh)
					}
				}
				i0 = i1
				continue
			}
			prep(i0, kh)
			x := hw.mix[i0*ch : (i0+1)*ch]
			for vh := kh; vh < nv; vh += nk {
				g, beta := logDecay(i0, vh)
				deltaStep(hw.o[i0*vd+vh*d:i0*vd+(vh+1)*d], st[vh*d*d:(vh+1)*d*d], x[kh*d:(kh+1)*d], x[(nk+kh)*d:(nk+kh+1)*d],
					x[2*nk*d+vh*d:2*nk*d+(vh+1)*d], float32(math.Exp(float64(g))), beta)
				gatedNorm(i0, vh)
			}
			i0 = i1
		}
	}
}

// deltaBlocked reports whether the delta-net states of heads of d × d are
// held in tensor.DeltaStepsBlocked's row-block layout and stepped by it
// (where it runs in SIMD registers: amd64 with AVX2, d a multiple of 16), rather
// than row-major and stepped token by token by deltaStep. It depends only
// on the CPU and the shape, so one process holds every state one way (a
// state is never read by another process). deltaStepFn swapped for a
// benchmark's old kernel turns it off.
func deltaBlocked(d int) bool {
	return tensor.DeltaBlockedSIMD(d, d) && !deltaStepSwapped
}

// deltaStepSwapped is set by benchmarks that run deltaStepFn's old
// kernels, which take the row-major layout.
var deltaStepSwapped bool

// deltaChunk, when above 0, runs each run of a sequence's consecutive
// positions in a step through the chunked delta rule
// (tensor.DeltaChunked, chunks of deltaChunk tokens) instead of the
// recurrent one. The forward pass leaves it at 0: the chunked form rounds
// differently, so a token's logits would depend on where the engine's step
// boundaries fell and on whether it came as prompt or was generated
// (chunked prefill, sessions, preemption recompute, snapshots: all
// compared with == to a lone cold run), and measured it is slower on a
// CPU anyway (tensor/deltarule_chunk.go). Tests and benchmarks set it.
var deltaChunk = 0

// chunkScratch is one worker's chunked-delta-rule scratch.
type chunkScratch struct {
	work tensor.DeltaChunkWork
	g, b []float32 // (run) log decays (then decays) and write strengths of one value head
	rm   []float32 // (d, d) a blocked state row-major, for the chunked form
}
