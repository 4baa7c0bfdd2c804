//go:build !amd64

package tensor

// No AVX-512 kernels off amd64 (kernels_float_amd64.go): the flag stays off
// and these stubs are never called.
var hasAVX512 = false

func dot4F32Z(w *byte, lda uintptr, x *float32, n int, out *[4]float32)  { panic("unreachable") }
func dot4F16Z(w *byte, lda uintptr, x *float32, n int, out *[4]float32)  { panic("unreachable") }
func dot4BF16Z(w *byte, lda uintptr, x *float32, n int, out *[4]float32) { panic("unreachable") }
func dotRowsF16Z(w *byte, stride uintptr, x *float32, n int, rows int, dst *float32) {
	panic("unreachable")
}
func dotRowsBF16Z(w *byte, stride uintptr, x *float32, n int, rows int, dst *float32) {
	panic("unreachable")
}
func tileF32x3Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
func tileF16x3Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
func tileBF16x3Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
func tileF32x6Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
func tileF16x6Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
func tileF16x6ZP(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, acc *float32, mode int) {
	panic("unreachable")
}
func tileBF16x6Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
func tileF32x2Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
func tileF16x2Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
func tileBF16x2Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
