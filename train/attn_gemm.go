package train

import (
	"math"

	"nanoserve/tensor"
)

// Attention through the inference GEMM (float32 only). Per sequence b and
// query head h (kv head g), with Q (T, hd), K, V (T, hd) gathered from qkv:
//
//	S  = Q·Kᵀ·scale, causal mask, P = softmax(S)      MatMul(K, Q)
//	O  = P·V                                          MatMul(Vᵀ, P)
//	dP = dO·Vᵀ                                        MatMul(V, dO)
//	dS = P⊙(dP − Σ_s P·dP)·scale
//	dQ = dS·K                                         MatMul(Kᵀ, dS)
//	dK += dSᵀ·Q, dV += Pᵀ·dO                          MatMul(Qᵀ, dSᵀ), MatMul(dOᵀ, Pᵀ)
//
// The products run over the full T×T square (the masked half is zero),
// twice the scalar loop's arithmetic, but on the vector kernel.
//
// Jobs are (sequence, kv head) pairs — a kv head's query heads share its
// dK and dV rows, so no two jobs write the same gradient — spread over the
// workers, each with its own scratch and single-threaded GEMM pool.
type attnScratch struct {
	q, k, v, kt, vt, qt, o, do, dot, s, st, ds, dq, dk, dv []float32
}

// inline is the nil Pool: a product inside a parallel job runs on the
// worker that claimed the job (borrowed scratch, no allocation).
var inline *tensor.Pool

// attnBufs returns one scratch per worker, sized for the current T.
func (n *Net[T]) attnBufs() []*attnScratch {
	t, hd := n.t, n.Cfg.HeadDim()
	for len(n.as) < n.mm.threads {
		n.as = append(n.as, &attnScratch{})
	}
	for _, s := range n.as {
		for _, p := range []*[]float32{&s.q, &s.k, &s.v, &s.kt, &s.vt, &s.qt, &s.o, &s.do, &s.dot, &s.dq, &s.dk, &s.dv} {
			*p = growF(*p, t*hd)
		}
		for _, p := range []*[]float32{&s.st, &s.ds} {
			*p = growF(*p, t*t)
		}
	}
	return n.as
}

// gather copies head columns [off, off+hd) of the (rows, w) matrix src
// rows [r0, r0+t) into dst (t, hd), times mul, and, if dstT != nil, its
// transpose.
func gather(dst, dstT, src []float32, r0, t, w, off, hd int, mul float32) {
	for i := range t {
		row := src[(r0+i)*w+off:][:hd]
		d := dst[i*hd : (i+1)*hd]
		for j, x := range row {
			d[j] = x * mul
		}
		if dstT != nil {
			for j, x := range row {
				dstT[j*t+i] = x
			}
		}
	}
}

func (n *Net[T]) attentionF32(a *acts[T]) {
	c := n.Cfg
	b, t := n.b, n.t
	hd, qd, kvd := c.HeadDim(), c.QDim(), c.KVDim()
	w := qd + 2*kvd
	rep := c.Heads / c.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	bufs := n.attnBufs()
	qkv, att, ao := f32(a.qkv), f32(a.att), f32(a.ao)
	n.mm.parallelW(b*c.KVHeads, func(job, worker int) {
		s := bufs[worker]
		bi, g := job/c.KVHeads, job%c.KVHeads
		gather(s.k, nil, qkv, bi*t, t, w, qd+g*hd, hd, 1)
		gather(s.v, s.vt, qkv, bi*t, t, w, qd+kvd+g*hd, hd, 1)
		for h := g * rep; h < (g+1)*rep; h++ {
			gather(s.q, nil, qkv, bi*t, t, w, h*hd, hd, scale) // S = (scale·Q)·Kᵀ
			P := att[(bi*c.Heads+h)*t*t:][:t*t]
			inline.MatMul(P, tensor.F32Mat(t, hd, s.k), s.q, t)
			for ti := range t {
				row := P[ti*t : (ti+1)*t]
				inv := 1 / tensor.SoftmaxExp(row[:ti+1])
				for j := range row[:ti+1] {
					row[j] *= inv
				}
				clear(row[ti+1:])
			}
			inline.MatMul(s.o, tensor.F32Mat(hd, t, s.vt), P, t)
			for ti := range t {
				copy(ao[(bi*t+ti)*qd+h*hd:][:hd], s.o[ti*hd:(ti+1)*hd])
			}
		}
	})
}

func (n *Net[T]) attentionBackF32(a *acts[T]) {
	c := n.Cfg
	b, t := n.b, n.t
	hd, qd, kvd := c.HeadDim(), c.QDim(), c.KVDim()
	w := qd + 2*kvd
	rep := c.Heads / c.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	bufs := n.attnBufs()
	qkv, att, dao, dqkv := f32(a.qkv), f32(a.att), f32(n.dao), f32(n.dqkv)
	clear(dqkv)
	n.mm.parallelW(b*c.KVHeads, func(job, worker int) {
		s := bufs[worker]
		bi, g := job/c.KVHeads, job%c.KVHeads
		gather(s.k, s.kt, qkv, bi*t, t, w, qd+g*hd, hd, 1)
		gather(s.v, nil, qkv, bi*t, t, w, qd+kvd+g*hd, hd, 1)
		for h := g * rep; h < (g+1)*rep; h++ {
			gather(s.q, s.qt, qkv, bi*t, t, w, h*hd, hd, 1)
			gather(s.do, s.dot, dao, bi*t, t, qd, h*hd, hd, 1)
			P := att[(bi*c.Heads+h)*t*t:][:t*t]
			inline.MatMul(s.ds, tensor.F32Mat(t, hd, s.v), s.do, t) // dP
			for ti := range t {
				pr, dr := P[ti*t:(ti+1)*t], s.ds[ti*t:(ti+1)*t]
				var sum float32
				for j := 0; j <= ti; j++ {
					sum += pr[j] * dr[j]
				}
				for j := 0; j <= ti; j++ {
					dr[j] = pr[j] * (dr[j] - sum) * scale
				}
				clear(dr[ti+1:])
			}
			transpose(s.st, s.ds, t, t, 0, t)
			inline.MatMul(s.dq, tensor.F32Mat(hd, t, s.kt), s.ds, t)
			inline.MatMul(s.dk, tensor.F32Mat(hd, t, s.qt), s.st, t)
			transpose(s.st, P, t, t, 0, t)
			inline.MatMul(s.dv, tensor.F32Mat(hd, t, s.dot), s.st, t)
			for ti := range t {
				r := dqkv[(bi*t+ti)*w:]
				copy(r[h*hd:h*hd+hd], s.dq[ti*hd:(ti+1)*hd])
				dk, dv := r[qd+g*hd:][:hd], r[qd+kvd+g*hd:][:hd]
				for j := range hd {
					dk[j] += s.dk[ti*hd+j]
					dv[j] += s.dv[ti*hd+j]
				}
			}
		}
	})
}
