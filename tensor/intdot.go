package tensor

// IntegerDot reports whether MatMul multiplies weights of type t by
// integer dot products against activations quantized to 8 bits (the
// block-quantized types with an activation format: Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K…Q6_K). Other types run as float multiply-adds (F32, F16,
// BF16, or rows dequantized to float).
func IntegerDot(t DType) bool {
	_, ok := actsFormat(t)
	return ok
}
