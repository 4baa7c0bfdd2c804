package tensor

// Eight-token Q8_0 row dots on 512-bit registers (AVX-512 VNNI).
//
// A decode step of 8 sequences multiplies each Q8_0 weight matrix by 8
// tokens. On the four-token kernels (qdotQ8_0x4VNNI) that is two passes
// over every chunk of rows, and per block and token six vector
// instructions on 256-bit registers (bias XOR, copy, VPDPBUSD, convert,
// permute, FMA) for 32 multiply-adds, plus eight per block for the shared
// weight load and scale: ~8 instructions per 64 int8 operations. The
// kernel qdotQ8_0x8Z holds two tokens per 512-bit register (lanes 0-7 one
// token, 8-15 the next: the per-token 8-lane accumulator of the canonical
// arithmetic, never mixed with the other token), reads each weight block
// once for all eight tokens and takes the activations from a buffer packed
// once per MatMul (qx8Pack: biased by 0x80 for VPDPBUSD, token pairs
// side by side), so a pair of tokens costs a copy, VPDPBUSD, convert,
// permute and FMA: ~5.5 instructions per 128 int8 operations. Each
// (row, token) is still qdotQ8_0SIMD's arithmetic bit for bit — exact
// int32 lane sums of four products, one product dw·da, VCVTDQ2PS and a
// VFMADD231PS into the token's own 8 lanes in block order, the same fold —
// so a token's result does not depend on whether it ran in a group of
// eight, four, two or alone (TestDotQRowsX8, TestMatMulBatchInvariant).

// hasQ8x8 selects the eight-token kernel for Q8_0 (AVX-512F and VNNI);
// tests flip it to run the four-token kernels instead.
var hasQ8x8 = hasVNNI

// useQ8x8 reports whether MatMul takes qdotQ8_0x8Z for weights wt.
func useQ8x8(wt DType) bool { return wt == Q8_0 && hasVNNI && hasQ8x8 && hasQdotX4(wt) }

// qx8PackLen is the length in bytes of one group's packed activations for
// rows of n elements: per block of 32, four token pairs of 64 bytes.
func qx8PackLen(n int) int { return n / 32 * 256 }

// qx8Pack fills p (qx8PackLen(n) bytes) and dx ((n/32, 8) floats) for the
// eight tokens t0..t0+7 of the Q8_0 activations a (rows of n elements):
// p[b·256 + k·64 + h·32 + i] = a.Q[(t0+2k+h)·n + 32b + i] XOR 0x80 (the
// VPDPBUSD bias), dx[b·8 + t] = a.D[(t0+t)·(n/32) + b].
func qx8Pack(p []byte, dx []float32, a *quantizedActs, n, t0 int) {
	nb := n / 32
	_ = p[nb*256-1]
	_ = dx[nb*8-1]
	for t := range 8 {
		q := a.Q[(t0+t)*n : (t0+t+1)*n]
		d := a.D[(t0+t)*nb : (t0+t+1)*nb]
		k, h := t/2, t%2
		for b := range nb {
			dst := p[b*256+k*64+h*32 : b*256+k*64+h*32+32]
			src := q[b*32 : b*32+32]
			for i := range 32 {
				dst[i] = byte(src[i]) ^ 0x80
			}
			dx[b*8+t] = d[b]
		}
	}
}

// dotQRowsX8 sets dst[(t0+t)·ldd + r] = the row dot of Q8_0 row r (at
// w[r·stride], n elements) and token t0+t, for rows [lo, hi) and t < 8,
// from the group's packed activations p and scales dx (qx8Pack).
// Requires useQ8x8(Q8_0).
func dotQRowsX8(dst []float32, ldd int, w []byte, stride, lo, hi, n int, p []byte, dx []float32, t0 int) {
	if hi <= lo {
		return
	}
	nb := n / 32
	if n%32 != 0 || nb == 0 {
		panic("tensor: dotQRowsX8: rows not whole Q8_0 blocks")
	}
	_ = w[(hi-1)*stride+nb*34-1]
	_ = p[nb*256-1]
	_ = dx[nb*8-1]
	_ = dst[(t0+7)*ldd+hi-1]
	qdotQ8_0x8Z(&dst[t0*ldd+lo], hi-lo, &w[lo*stride], uintptr(stride), &p[0], &dx[0], nb, uintptr(ldd*4))
}
