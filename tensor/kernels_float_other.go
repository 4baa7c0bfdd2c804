//go:build !amd64 && !arm64

package tensor

// No assembly on this architecture: the pure-Go kernels in kernels_float.go run.
var hasSIMD = false

func dot4F32SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, pf uintptr) {
	panic("unreachable")
}
func dot4F16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, pf uintptr) {
	panic("unreachable")
}
func dot4BF16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, pf uintptr) {
	panic("unreachable")
}
func cvtF16SIMD(dst *float32, src *byte, n int)  { panic("unreachable") }
func cvtBF16SIMD(dst *float32, src *byte, n int) { panic("unreachable") }

func sumF32SIMD(p *float32, n int) float32 { panic("unreachable") }
