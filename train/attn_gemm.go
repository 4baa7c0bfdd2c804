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
//	dS = P⊙(dP − D)·scale, D_i = Σ_j P_ij·dP_ij = dO_i·O_i
//	dQ = dS·K                                         MatMul(Kᵀ, dS)
//	dK += dSᵀ·Q, dV += Pᵀ·dO                          MatMul(Qᵀ, dSᵀ), MatMul(dOᵀ, Pᵀ)
//
// The query rows go in causal blocks of B (Net.attnBlock): block [q0, q1)
// sees keys [0, q1) only, so the products skip the masked upper triangle
// except inside the diagonal blocks. At T = 1024, B = 128 that is 36 of 64
// (B, B) tiles: 56% of the full square's arithmetic, and of its transposes.
// Each block's S (then P, dP, dS) is a contiguous (B, q1) matrix; P is also
// stored for the backward in rows of T, of which only the block's first q1
// columns are written (zero past the diagonal) and read.
//
// S and dP contract over the head's hd dimensions only; where the vector
// kernel exists they run as tensor.GemmNN against Kᵀ and Vᵀ (outer
// products: no horizontal sum per element, 2.4× MatMul's rate at hd = 32
// on zmm), else as MatMul against K and V.
//
// Jobs are (sequence, kv head) pairs — a kv head's query heads share its
// dK and dV rows, so no two jobs write the same gradient — spread over the
// workers, each with its own scratch and single-threaded GEMM pool.
type attnScratch struct {
	q, k, v, kt, vt, qt, o, do, dot, dq, dk, dv, tmp []float32 // (T, hd) or (hd, T)
	blk                                              []float32 // (B, T): a block's S, P, dP, dS
	st                                               []float32 // (T, B): a block transposed
	wb                                               []float32 // (hd, T): columns of Kᵀ or Vᵀ
	wb2                                              []float32 // (hd, B): columns of Qᵀ or dOᵀ
	d                                                []float32 // (T): D_i = dO_i·O_i
}

// attnBlockRows is the default query rows per causal block: (128, 1024)
// float32 blocks of S are 512 KiB, in L2 with the 32-wide K and V.
const attnBlockRows = 128

// inline is the nil Pool: a product inside a parallel job runs on the
// worker that claimed the job (borrowed scratch, no allocation).
var inline *tensor.Pool

// attnBufs returns one scratch per worker, sized for the current T, and the
// block rows B.
func (n *Net[T]) attnBufs() ([]*attnScratch, int) {
	t, hd := n.t, n.Cfg.HeadDim()
	bl := max(1, min(n.attnBlock, t))
	for len(n.as) < n.mm.threads {
		n.as = append(n.as, &attnScratch{})
	}
	for _, s := range n.as {
		for _, p := range []*[]float32{&s.q, &s.k, &s.v, &s.kt, &s.vt, &s.qt, &s.o, &s.do, &s.dot, &s.dq, &s.dk, &s.dv, &s.tmp, &s.wb} {
			*p = growF(*p, t*hd)
		}
		s.blk, s.st, s.wb2, s.d = growF(s.blk, bl*t), growF(s.st, t*bl), growF(s.wb2, hd*bl), growF(s.d, t)
	}
	return n.as, bl
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

// cols copies columns [c0, c1) of the (rows, ld) matrix src into dst
// (rows, c1−c0) and returns that matrix.
func cols(dst, src []float32, rows, ld, c0, c1 int) []float32 {
	w := c1 - c0
	for r := range rows {
		copy(dst[r*w:(r+1)*w], src[r*ld+c0:r*ld+c1])
	}
	return dst[:rows*w]
}

// timesT sets dst (nb, q1) = x (nb, hd) · y[0:q1]ᵀ, for S = Q·Kᵀ and
// dP = dO·Vᵀ: y (T, hd) is K or V and yt (hd, T) its transpose, which
// GemmNN reads (where nn is set) and MatMul does not.
func timesT(nn bool, dst, x, y, yt []float32, nb, q1, t, hd int) {
	if nn {
		tensor.GemmNN(dst, q1, x, hd, yt, t, nb, q1, hd)
		return
	}
	inline.MatMul(dst, tensor.F32Mat(q1, hd, y[:q1*hd]), x, nb)
}

func (n *Net[T]) attentionF32(a *acts[T]) {
	c := n.Cfg
	b, t := n.b, n.t
	hd, qd, kvd := c.HeadDim(), c.QDim(), c.KVDim()
	w := qd + 2*kvd
	rep := c.Heads / c.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	bufs, bl := n.attnBufs()
	qkv, att, ao := f32(a.qkv), f32(a.att), f32(a.ao)
	nn := n.attnNN
	n.mm.parallelW(b*c.KVHeads, func(job, worker int) {
		s := bufs[worker]
		bi, g := job/c.KVHeads, job%c.KVHeads
		gather(s.k, s.kt, qkv, bi*t, t, w, qd+g*hd, hd, 1)
		gather(s.v, s.vt, qkv, bi*t, t, w, qd+kvd+g*hd, hd, 1)
		for h := g * rep; h < (g+1)*rep; h++ {
			gather(s.q, nil, qkv, bi*t, t, w, h*hd, hd, scale) // S = (scale·Q)·Kᵀ
			P := att[(bi*c.Heads+h)*t*t:][:t*t]
			for q0 := 0; q0 < t; q0 += bl {
				q1 := min(q0+bl, t)
				nb := q1 - q0
				S := s.blk[:nb*q1] // (nb, q1): rows [q0, q1) over keys [0, q1)
				timesT(nn, S, s.q[q0*hd:q1*hd], s.k, s.kt, nb, q1, t, hd)
				for i := range nb {
					ti := q0 + i
					row := S[i*q1 : (i+1)*q1]
					inv := 1 / tensor.SoftmaxExp(row[:ti+1])
					for j := range row[:ti+1] {
						row[j] *= inv
					}
					clear(row[ti+1:])
					copy(P[ti*t:], row)
				}
				// O rows [q0, q1) = P·V[0:q1]
				if nn {
					tensor.GemmNN(s.o[q0*hd:q1*hd], hd, S, q1, s.v, hd, nb, hd, q1)
				} else {
					inline.MatMul(s.o[q0*hd:q1*hd], tensor.F32Mat(hd, q1, cols(s.wb, s.vt, hd, t, 0, q1)), S, nb)
				}
			}
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
	bufs, bl := n.attnBufs()
	qkv, att, ao, dao, dqkv := f32(a.qkv), f32(a.att), f32(a.ao), f32(n.dao), f32(n.dqkv)
	clear(dqkv)
	nn := n.attnNN
	n.mm.parallelW(b*c.KVHeads, func(job, worker int) {
		s := bufs[worker]
		bi, g := job/c.KVHeads, job%c.KVHeads
		kt, vt := s.kt, s.vt // Kᵀ for dQ by MatMul, Vᵀ for dP by GemmNN
		if nn {
			kt = nil
		} else {
			vt = nil
		}
		gather(s.k, kt, qkv, bi*t, t, w, qd+g*hd, hd, 1)
		gather(s.v, vt, qkv, bi*t, t, w, qd+kvd+g*hd, hd, 1)
		// The kv head's gradients, summed over its query heads: (T, hd), or
		// with GemmNN transposed, (hd, T).
		dk, dv := s.dk[:t*hd], s.dv[:t*hd]
		clear(dk)
		clear(dv)
		for h := g * rep; h < (g+1)*rep; h++ {
			gather(s.q, s.qt, qkv, bi*t, t, w, h*hd, hd, 1)
			gather(s.do, s.dot, dao, bi*t, t, qd, h*hd, hd, 1)
			P := att[(bi*c.Heads+h)*t*t:][:t*t]
			for ti := range t {
				o, do := ao[(bi*t+ti)*qd+h*hd:][:hd], s.do[ti*hd:(ti+1)*hd]
				var d float32
				for j, x := range o {
					d += x * do[j]
				}
				s.d[ti] = d
			}
			for q0 := 0; q0 < t; q0 += bl {
				q1 := min(q0+bl, t)
				nb := q1 - q0
				dS := s.blk[:nb*q1] // (nb, q1), first dP
				timesT(nn, dS, s.do[q0*hd:q1*hd], s.v, s.vt, nb, q1, t, hd)
				for i := range nb {
					ti := q0 + i
					pr, dr, d := P[ti*t:ti*t+ti+1], dS[i*q1:(i+1)*q1], s.d[ti]
					for j, p := range pr {
						dr[j] = p * (dr[j] - d) * scale
					}
					clear(dr[ti+1:])
				}
				if nn {
					// dQ rows [q0, q1) = dS·K[0:q1]; dKᵀ[:, 0:q1] += Qᵀ[:, q0:q1]·dS and
					// dVᵀ[:, 0:q1] += dOᵀ[:, q0:q1]·P[q0:q1, 0:q1], both (hd, q1): no
					// block is transposed, only the sums once per job.
					tensor.GemmNN(s.dq[q0*hd:q1*hd], hd, dS, q1, s.k, hd, nb, hd, q1)
					tmp := s.tmp[:hd*q1]
					tensor.GemmNN(tmp, q1, s.qt[q0:], t, dS, q1, hd, q1, nb)
					for d := range hd {
						addTo(dk[d*t:d*t+q1], tmp[d*q1:(d+1)*q1])
					}
					tensor.GemmNN(tmp, q1, s.dot[q0:], t, P[q0*t:], t, hd, q1, nb)
					for d := range hd {
						addTo(dv[d*t:d*t+q1], tmp[d*q1:(d+1)*q1])
					}
					continue
				}
				// dQ rows [q0, q1) = dS·K[0:q1]
				kt := cols(s.wb, s.kt, hd, t, 0, q1)
				inline.MatMul(s.dq[q0*hd:q1*hd], tensor.F32Mat(hd, q1, kt), dS, nb)
				// dK[0:q1] += dSᵀ·Q[q0:q1], dV[0:q1] += Pᵀ·dO[q0:q1]
				st, tmp := s.st[:q1*nb], s.tmp[:q1*hd]
				transposeStrided(st, nb, dS, q1, nb, q1)
				inline.MatMul(tmp, tensor.F32Mat(hd, nb, cols(s.wb2, s.qt, hd, t, q0, q1)), st, q1)
				addTo(dk[:q1*hd], tmp)
				transposeStrided(st, nb, P[q0*t:], t, nb, q1)
				inline.MatMul(tmp, tensor.F32Mat(hd, nb, cols(s.wb2, s.dot, hd, t, q0, q1)), st, q1)
				addTo(dv[:q1*hd], tmp)
			}
			for ti := range t {
				copy(dqkv[(bi*t+ti)*w+h*hd:][:hd], s.dq[ti*hd:(ti+1)*hd])
			}
		}
		if nn {
			transposeStrided(dqkv[bi*t*w+qd+g*hd:], w, dk, t, hd, t)
			transposeStrided(dqkv[bi*t*w+qd+kvd+g*hd:], w, dv, t, hd, t)
			return
		}
		for ti := range t {
			r := dqkv[(bi*t+ti)*w:]
			copy(r[qd+g*hd:][:hd], dk[ti*hd:(ti+1)*hd])
			copy(r[qd+kvd+g*hd:][:hd], dv[ti*hd:(ti+1)*hd])
		}
	})
}

// addTo adds src to dst elementwise.
func addTo(dst, src []float32) {
	for i, x := range src[:len(dst)] {
		dst[i] += x
	}
}
