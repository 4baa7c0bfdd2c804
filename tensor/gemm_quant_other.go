//go:build !amd64

package tensor

// hasQgemm is false off amd64: prefill of quantized weights takes the
// float GEMM (dequantize, then FMA tiles), and these stubs are never called.
func hasQgemm() bool { return false }

func qgemmK2x4SIMD(*byte, uintptr, *int8, uintptr, *int16, uintptr, *float32, int, *float32, uintptr) {
	panic("unreachable")
}

func qgemmQ8x8SIMD(*byte, uintptr, *float32, *int8, *float32, int, *float32, uintptr) {
	panic("unreachable")
}
