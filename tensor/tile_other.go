//go:build !amd64

package tensor

// The batch-invariant GEMM tiles (tileKernel) exist only as amd64
// assembly; elsewhere (arm64 included: no NEON tile yet) every n takes the
// row dots (dot4), whose arithmetic a tile would have to copy bit for bit.
const hasTileArch = false

func tileF32x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int) {
	panic("unreachable")
}
func tileF16x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int) {
	panic("unreachable")
}
func tileBF16x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int) {
	panic("unreachable")
}
func tileF32x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int) {
	panic("unreachable")
}
func tileF16x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int) {
	panic("unreachable")
}
func tileBF16x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int) {
	panic("unreachable")
}
func tileF32x4SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int) {
	panic("unreachable")
}
func tileF16x4SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int) {
	panic("unreachable")
}
func tileBF16x4SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int) {
	panic("unreachable")
}
