//go:build !amd64 && !arm64

package tensor

// No assembly on this architecture: the pure-Go kernels in kernels.go run.
var hasAVX2 = false

func dot4F32AVX2(w *byte, lda uintptr, x *float32, n int, out *[4]float32)  { panic("unreachable") }
func dot4F16AVX2(w *byte, lda uintptr, x *float32, n int, out *[4]float32)  { panic("unreachable") }
func dot4BF16AVX2(w *byte, lda uintptr, x *float32, n int, out *[4]float32) { panic("unreachable") }
func cvtF16AVX2(dst *float32, src *byte, n int)                             { panic("unreachable") }
func cvtBF16AVX2(dst *float32, src *byte, n int)                            { panic("unreachable") }
func gemm6x16AVX2(a *float32, lda uintptr, b *float32, c *float32, ldc uintptr, k int, accum int) {
	panic("unreachable")
}
func sumF32AVX2(p *float32, n int) float32 { panic("unreachable") }
