package tensor

import "unsafe"

// Eight-token row dots of IQ4_NL and MXFP4 on 512-bit registers (AVX-512
// BW + VNNI: hasKZ).
//
// Prefill multiplies each matrix by many tokens. Token after token, the
// row dots (qdotIQ4_NLZ) unpack every block — codes split into nibbles,
// looked up, signs applied — once per token. qdotIQ4_NLx8Z (qdotMXFP4x8Z)
// unpacks a block once for eight tokens and meets them two per register
// with Q8_0's packed activations (qx8Pack: biased by 0x80, token pairs
// side by side), one VPDPBUSD per pair and block plus the float step. Each
// (row, token) is the row dot's arithmetic bit for bit (exact int32
// lanes, VCVTDQ2PS, VMULPS by dw·da, VADDPS in block order, the same
// fold), so a token's result does not depend on its batch (TestIQZx8,
// TestMatMulBatchInvariant).

// useIQx8 reports whether MatMul takes the eight-token zmm kernel for
// weights wt (an IQ4_NL or MXFP4 matrix, n ≥ 8).
func useIQx8(wt DType) bool {
	switch wt {
	case IQ4_NL, MXFP4:
		return hasKZ && hasIQKernel(wt) && qdotX4On
	}
	return false
}

// dotQRowsIQX8 sets dst[(t0+t)·ldd + r] = the row dot of row r of the
// weights w (type wt, row r at w[r·stride], n elements) and token t0+t,
// for rows [lo, hi) and t < 8, from the group's packed Q8_0 activations p
// and scales dx (qx8Pack). Requires useIQx8(wt).
func dotQRowsIQX8(wt DType, dst []float32, ldd int, w []byte, stride, lo, hi, n int, p []byte, dx []float32, t0 int) {
	if hi <= lo {
		return
	}
	bs, bb := qBlock(wt)
	nb := n / bs
	if n%bs != 0 || nb == 0 {
		panic("tensor: dotQRowsIQX8: rows not whole blocks")
	}
	_ = w[(hi-1)*stride+nb*bb-1]
	_ = p[nb*256-1]
	_ = dx[nb*8-1]
	_ = dst[(t0+7)*ldd+hi-1]
	pd, pw, st, pp, px, pl := &dst[t0*ldd+lo], &w[lo*stride], uintptr(stride), &p[0], &dx[0], uintptr(ldd*4)
	switch wt { // direct calls: the kernels are go:noescape
	case IQ4_NL:
		qdotIQ4_NLx8Z(pd, hi-lo, pw, st, pp, px, nil, nb, pl)
	case MXFP4:
		qdotMXFP4x8Z(pd, hi-lo, pw, st, pp, px, unsafe.Pointer(&e8m0HalfTab[0]), nb, pl)
	default:
		panic("tensor: dotQRowsIQX8: " + wt.String())
	}
}
