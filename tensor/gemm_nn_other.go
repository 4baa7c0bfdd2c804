//go:build !amd64

package tensor

// No GemmNN kernels off amd64: its Go loop runs, and these are never called.
const hasGemmNNArch = false

func gemmNN4x32Z(a *float32, lda uintptr, b *float32, ldb uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}

func gemmNN4x16(a *float32, lda uintptr, b *float32, ldb uintptr, k int, dst *float32, ldd uintptr) {
	panic("unreachable")
}
