package tensor

import "unsafe"

// The row dots of rowdot_iq_amd64.s — the table formats and Q2_K, Q3_K;
// see dotQRows and rowdot_iq_ref.go for the lane arithmetic they share,
// bit for bit, with the Go reference.

//go:noescape
func qdotIQ4_NLSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotMXFP4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotIQ4_XSSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotIQ3_SSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ2_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ3_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

// nlPairActs says whether IQ4_NL and MXFP4 activations are also laid out
// in pairs of blocks (quantizedActs.QN, pairNL) for the ymm row dots,
// which then take eight blocks per step: on AVX2 hosts whose zmm kernels
// (biased levels, NS) are off.
func nlPairActs() bool { return hasSIMD && !(hasKZ && hasNLZV) }

// hasIQKernel reports whether weight type wt has an assembly kernel of
// rowdot_iq_amd64.s on this machine (the table formats, Q2_K, Q3_K).
func hasIQKernel(wt DType) bool {
	switch wt {
	case IQ4_NL, MXFP4, IQ4_XS, IQ3_S, Q2_K, Q3_K:
		return hasSIMD
	}
	return false
}

// qdotIQ runs wt's kernel (hasIQKernel(wt) must hold).
func qdotIQ(wt DType, dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int) {
	switch wt {
	case IQ4_NL: // aux: quantizedActs.NS (zmm) or QN (ymm) from the row's first block, or nil
		if hasKZ && hasNLZV && aux != nil {
			qdotIQ4_NLZV(dst, rows, w, stride, q, d, nil, nb, (*int32)(aux))
		} else {
			qdotIQ4_NLSIMD(dst, rows, w, stride, q, d, aux, nb)
		}
	case MXFP4:
		if hasKZ && hasNLZV && aux != nil {
			qdotMXFP4ZV(dst, rows, w, stride, q, d, unsafe.Pointer(&e8m0HalfTab[0]), nb, (*int32)(aux))
		} else {
			qdotMXFP4SIMD(dst, rows, w, stride, q, d, aux, nb)
		}
	case IQ4_XS:
		if hasKZ {
			qdotIQ4_XSZ(dst, rows, w, stride, q, d, aux, nb)
		} else {
			qdotIQ4_XSSIMD(dst, rows, w, stride, q, d, aux, nb)
		}
	case IQ3_S:
		if hasKZ {
			qdotIQ3_SZ2(dst, rows, w, stride, q, d, nb)
		} else {
			qdotIQ3_SSIMD(dst, rows, w, stride, q, d, unsafe.Pointer(&iq3sGrid[0]), nb)
		}
	case Q2_K:
		qdotQ2_KSIMD(dst, rows, w, stride, q, d, aux, nb)
	case Q3_K:
		qdotQ3_KSIMD(dst, rows, w, stride, q, d, aux, nb)
	default:
		panic("tensor: no table-format kernel for " + wt.String())
	}
}
