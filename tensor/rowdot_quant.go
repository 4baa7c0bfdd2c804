package tensor

import "unsafe"

// dotQRows sets dst[i] = dotQ(wt, row i, a, off) for the len(dst) weight
// rows of n elements each, row i starting at w[i*stride]. Types with an
// AVX2 kernel (Q8_0, Q4_K, Q5_K, Q6_K; IQ4_NL, MXFP4, IQ4_XS, IQ3_S,
// Q2_K, Q3_K in rowdot_iq_amd64.s) run the whole row loop in one
// assembly call; the others, and machines without AVX2, use the
// reference dotQ (Q4_0, Q4_1, Q5_0 and Q5_1 have it too, but MatMul runs
// them on their packed rows: rowdot_q4x8.go). Bounds are checked here,
// once.
func dotQRows(wt DType, dst []float32, w []byte, stride, n int, a *quantizedActs, off int) {
	rows := len(dst)
	if rows == 0 {
		return
	}
	bs, bb := qBlock(wt)
	nb := n / bs
	rb := nb * bb
	if !hasQdotKernel(wt) || nb == 0 {
		for i := range dst {
			dst[i] = dotQ(wt, w[i*stride:i*stride+rb], a, off)
		}
		return
	}
	if f, _ := actsFormat(wt); f != a.Format {
		panic("tensor: dotQRows: " + wt.String() + " weights with " + a.Format.String() + " activations")
	}
	_ = w[(rows-1)*stride+rb-1]
	q := a.Q[off : off+n]
	var d []float32
	var aux unsafe.Pointer
	switch a.Format {
	case Q8_K:
		d = a.D[off/qkK : off/qkK+nb]
		bsums := a.BSums[off/16 : off/16+n/16]
		aux = unsafe.Pointer(&bsums[0])
	case Q8_1:
		d = a.D[off/32 : off/32+nb]
		s := a.S[off/32 : off/32+nb]
		aux = unsafe.Pointer(&s[0])
	default:
		d = a.D[off/32 : off/32+nb]
		switch g := nb / 8; {
		case wt != IQ4_NL && wt != MXFP4:
		case nlPairActs():
			if off%256 == 0 && g > 0 && off >= a.QNFrom && len(a.QN) >= 2*off+512*g {
				qn := a.QN[2*off : 2*off+512*g] // the ymm kernels' paired values (pairNL), groups aligned with the row's start
				aux = unsafe.Pointer(&qn[0])
			}
		case len(a.NS) >= (off+n)/32:
			ns := a.NS[off/32 : off/32+nb] // the biased-level kernels' corrections
			aux = unsafe.Pointer(&ns[0])
		}
	}
	pd, pw, pq, pdd, st := &dst[0], &w[0], &q[0], &d[0], uintptr(stride)
	switch wt { // direct calls: the kernels are go:noescape
	case Q8_0:
		if hasQ8Z {
			qdotQ8_0Z(pd, rows, pw, st, pq, pdd, aux, nb)
		} else {
			qdotQ8_0SIMD(pd, rows, pw, st, pq, pdd, aux, nb)
		}
	case Q4_K:
		if hasKZ {
			qp := a.QP[off : off+n] // the values paired as the kernel unpacks (pairK4)
			qdotQ4_KZ(pd, rows, pw, st, &qp[0], pdd, aux, nb)
		} else {
			qdotQ4_KSIMD(pd, rows, pw, st, pq, pdd, aux, nb)
		}
	case Q5_K:
		if hasKZ {
			qdotQ5_KZ(pd, rows, pw, st, pq, pdd, aux, nb)
		} else {
			qdotQ5_KSIMD(pd, rows, pw, st, pq, pdd, aux, nb)
		}
	case Q6_K:
		if hasKZ {
			qdotQ6_KZ(pd, rows, pw, st, pq, pdd, aux, nb)
		} else {
			qdotQ6_KSIMD(pd, rows, pw, st, pq, pdd, aux, nb)
		}
	default:
		qdotIQ(wt, pd, rows, pw, st, pq, pdd, aux, nb)
	}
}

// hasQdotKernel reports whether weight type wt has an assembly kernel on
// this machine.
func hasQdotKernel(wt DType) bool { return hasSIMD && qdotType(wt) || hasIQKernel(wt) }

// qdotType reports whether wt is one of the types with integer-dot
// kernels (on some machines). MatMul's choice of path depends on this, not
// on the CPU, so its results do not change with the hardware.
func qdotType(wt DType) bool {
	switch wt {
	case Q8_0, Q4_K, Q5_K, Q6_K:
		return true
	}
	return false
}

// dotQFast is dotQ(wt, w, a, off) — the weight row w against activations
// a[off : off+n] — through dotQRows.
func dotQFast(wt DType, w []byte, a *quantizedActs, off int) float32 {
	var out [1]float32
	bs, bb := qBlock(wt)
	dotQRows(wt, out[:], w, len(w), len(w)/bb*bs, a, off)
	return out[0]
}

// qBlock is (BlockSize, BlockBytes) of t without the type table's map
// lookups (the kernels' wrappers run once per chunk of rows).
func qBlock(t DType) (bs, bb int) {
	switch t {
	case Q4_0:
		return 32, 18
	case Q4_1:
		return 32, 20
	case Q5_0:
		return 32, 22
	case Q5_1:
		return 32, 24
	case Q8_0:
		return 32, 34
	case Q4_K:
		return 256, 144
	case Q5_K:
		return 256, 176
	case Q6_K:
		return 256, 210
	case IQ4_NL:
		return 32, 18
	case MXFP4:
		return 32, 17
	case IQ4_XS:
		return 256, 136
	case IQ3_S, Q3_K:
		return 256, 110
	case Q2_K:
		return 256, 84
	}
	return t.BlockSize(), t.blockBytes()
}
