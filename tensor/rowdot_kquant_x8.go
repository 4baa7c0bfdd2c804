package tensor

// Eight-token K-quant row dots on 512-bit registers (AVX-512 BW + VNNI).
//
// Prefill (and a decode step of 8+ sequences) multiplies each Q4_K (Q5_K,
// Q6_K) matrix by many tokens. The four-token ymm kernels (qdotQ4_Kx4SIMD) unpack a
// super-block once per four tokens and then spend, per token and 64
// weights, two VPMADDUBSW, two VPMADDWD and two VPADDD on 256-bit
// registers. The kernel qdotQ4_Kx8Z unpacks once per eight tokens into
// 512-bit registers (64 weights in element order per register, see
// qdotQ4_KZ; qdotQ5_Kx8Z, qdotQ6_Kx8Z likewise) and spends one VPMADDUBSW and one VPDPWSSD per token and 64
// weights; the per-super-block float steps of two tokens share one
// register (lanes 0-7 and 8-15, each token's 8-lane accumulator never
// mixed with the other's). Each (row, token) is still the single-token
// kernel's arithmetic bit for bit — the same exact int32 lanes, the same
// VCVTDQ2PS, VMULPS, VFNMADD231PS and VFMADD231PS per lane in super-block
// order, the same fold — so a token's result does not depend on its
// batch (TestKQuantZx8, TestMatMulBatchInvariant). IQ4_XS (qdotIQ4_XSx8Z,
// Q8_K activations too, the packed scales of qx8PackK) runs its prefill
// the same way, eight tokens per unpacked super-block instead of the row
// dot token after token; IQ3_S (qdotIQ3_Sx8Z2) likewise.

// useKx8 reports whether MatMul takes the eight-token zmm kernel for
// weights wt.
func useKx8(wt DType) bool {
	switch wt {
	case Q4_K, Q5_K, Q6_K:
		return hasKZ && hasQdotX4(wt)
	case IQ4_XS, IQ3_S:
		return hasKZ && hasIQKernel(wt) && qdotX4On
	}
	return false
}

// qx8PackKLen is the length of one group's packed bsums (int16) and
// scales (float32) for rows of n elements: per super-block four token
// pairs of 32 bsums and of 16 scales.
func qx8PackKLen(n int) (bsums, scales int) { return n / qkK * 128, n / qkK * 64 }

// qx8PackK fills bs and dz (qx8PackKLen(n)) for the eight tokens
// t0..t0+7 of the Q8_K activations a (rows of n elements): for super-block
// b and pair p (tokens 2p+h, h = 0, 1),
// bs[(4b+p)·32 + 16h + i] = a.BSums[(t0+2p+h)·n/16 + 16b + i] and
// dz[(4b+p)·16 + 8h + l] = a.D[(t0+2p+h)·n/256 + b] (l < 8).
func qx8PackK(bs []int16, dz []float32, a *quantizedActs, n, t0 int) {
	nb := n / qkK
	_ = bs[nb*128-1]
	_ = dz[nb*64-1]
	for t := range 8 {
		src := a.BSums[(t0+t)*n/16 : (t0+t+1)*n/16]
		d := a.D[(t0+t)*nb : (t0+t+1)*nb]
		p, h := t/2, t%2
		for b := range nb {
			copy(bs[(4*b+p)*32+16*h:(4*b+p)*32+16*h+16], src[16*b:16*b+16])
			o := (4*b+p)*16 + 8*h
			for l := range 8 {
				dz[o+l] = d[b]
			}
		}
	}
}

// dotQRowsKX8 sets dst[(t0+t)·ldd + r] = the row dot of row r of the
// weights w (type wt, row r at w[r·stride], n elements) and token t0+t of
// a, for rows [lo, hi) and t < 8, with the group's packed bsums and scales
// (qx8PackK). Requires useKx8(wt) and Q8_K activations.
func dotQRowsKX8(wt DType, dst []float32, ldd int, w []byte, stride, lo, hi, n int, a *quantizedActs, bs []int16, dz []float32, t0 int) {
	if hi <= lo {
		return
	}
	nb := n / qkK
	if n%qkK != 0 || nb == 0 || a.Format != Q8_K {
		panic("tensor: dotQRowsKX8: rows not whole super-blocks or activations not Q8_K")
	}
	_, bb := qBlock(wt)
	lb, ld := qx8PackKLen(n)
	_ = w[(hi-1)*stride+nb*bb-1]
	_ = a.Q[(t0+8)*n-1]
	_ = bs[lb-1]
	_ = dz[ld-1]
	_ = dst[(t0+7)*ldd+hi-1]
	pd, pw, st, pq, pb, pz, pn, pl := &dst[t0*ldd+lo], &w[lo*stride], uintptr(stride), &a.Q[t0*n], &bs[0], &dz[0], uintptr(n), uintptr(ldd*4)
	switch wt { // direct calls: the kernels are go:noescape
	case Q4_K:
		qdotQ4_Kx8Z(pd, hi-lo, pw, st, pq, pb, pz, nb, pn, pl)
	case Q5_K:
		qdotQ5_Kx8Z(pd, hi-lo, pw, st, pq, pb, pz, nb, pn, pl)
	case Q6_K:
		qdotQ6_Kx8Z(pd, hi-lo, pw, st, pq, pb, pz, nb, pn, pl)
	case IQ4_XS:
		qdotIQ4_XSx8Z(pd, hi-lo, pw, st, pq, pb, pz, nb, pn, pl)
	case IQ3_S:
		qdotIQ3_Sx8Z2(pd, hi-lo, pw, st, pq, pb, pz, nb, pn, pl)
	default:
		panic("tensor: dotQRowsKX8: " + wt.String())
	}
}
