package tensor

// Rows of float32 encoded to F16 — what an F16 KV cache stores for every
// token of every layer (kvcache.Store → QuantizeRow), serially between the
// K/V projections and the attention. F32ToF16 one value at a time costs
// ~10 ns a value in Go; at a 512-token prefill of the 110M shape that was
// a tenth of the CPU time and a fifth of the wall time (the other core
// idles meanwhile). The assembly (encode_f16_amd64.s, F16C's VCVTPS2PH,
// round to nearest even) gives F32ToF16's bits for every input: IEEE
// rounding, overflow to ±Inf and half subnormals are the hardware's, and
// NaNs — whose payload the instruction would keep — are first replaced by
// the quiet NaN of their sign, which F32ToF16 returns for every NaN.

// encodeF16Row sets dst[2i:2i+2] = F32ToF16(src[i]) (little endian) for
// i < len(src); len(dst) ≥ 2·len(src).
func encodeF16Row(dst []byte, src []float32) {
	n := len(src)
	if n == 0 {
		return
	}
	_ = dst[2*n-1]
	n8 := 0
	if hasEncF16 {
		n8 = n &^ 7
		if n8 > 0 {
			encF16SIMD(&dst[0], &src[0], n8)
		}
	}
	for i := n8; i < n; i++ {
		h := F32ToF16(src[i])
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
}
