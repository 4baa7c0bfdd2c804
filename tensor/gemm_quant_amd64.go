package tensor

// hasQgemm reports whether the integer GEMM kernels of gemm_quant_amd64.s run
// here (AVX2; tests flip hasSIMD to take the float GEMM instead).
func hasQgemm() bool { return hasSIMD }

//go:noescape
func qgemmK2x4SIMD(a *byte, lda uintptr, x *int8, xs uintptr, bs *int16, bss uintptr, dxv *float32, nsb int, c *float32, ldc uintptr)

//go:noescape
func qgemmQ8x8SIMD(w *byte, ldw uintptr, dw *float32, xm *int8, dxv *float32, nb int, c *float32, ldc uintptr)
