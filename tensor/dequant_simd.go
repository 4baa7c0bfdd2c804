package tensor

// dequantFast is DequantizeRow for block-quantized types, using the AVX2
// decoders of dequant_amd64.s (bit-identical to the reference ones) for
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K. len(dst) must be a
// whole number of blocks.
func dequantFast(dst []float32, t DType, src []byte) {
	if hasSIMD {
		bs, bb := qBlock(t)
		if nb := len(dst) / bs; nb > 0 && nb*bs == len(dst) {
			_ = src[nb*bb-1]
			switch t {
			case Q8_0:
				dqQ8_0SIMD(&dst[0], &src[0], nb)
				return
			case Q4_0:
				dqQ4_0SIMD(&dst[0], &src[0], nb)
				return
			case Q4_1:
				dqQ4_1SIMD(&dst[0], &src[0], nb)
				return
			case Q5_0:
				dqQ5_0SIMD(&dst[0], &src[0], nb)
				return
			case Q5_1:
				dqQ5_1SIMD(&dst[0], &src[0], nb)
				return
			case Q4_K:
				dqQ4_KSIMD(&dst[0], &src[0], nb)
				return
			case Q5_K:
				dqQ5_KSIMD(&dst[0], &src[0], nb)
				return
			case Q6_K:
				dqQ6_KSIMD(&dst[0], &src[0], nb)
				return
			}
		}
	}
	DequantizeRow(dst, t, src)
}

// DequantizeBlocks is DequantizeRow for a whole number of blocks of a
// block-quantized type, with the AVX2 decoders where the CPU has them
// (bit-identical to DequantizeRow). The KV cache's Q8_0 tiles use it.
func DequantizeBlocks(dst []float32, t DType, src []byte) { dequantFast(dst, t, src) }
