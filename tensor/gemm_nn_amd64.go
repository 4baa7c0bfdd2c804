package tensor

// hasGemmNNArch: the AVX2 GemmNN kernel exists on this architecture.
const hasGemmNNArch = true

// gemmNN4x32Z sets the (4, 32) block of dst (row stride ldd bytes) to rows
// 0-3 of a (stride lda bytes) times b's (k, 32) block (stride ldb bytes):
// 8 zmm accumulators, per k two loads of b, four broadcasts of a, eight
// FMAs (gemm_nn_amd64.s; AVX-512F).
//
//go:noescape
func gemmNN4x32Z(a *float32, lda uintptr, b *float32, ldb uintptr, k int, dst *float32, ldd uintptr)

// gemmNN4x16 is gemmNN4x32Z on ymm registers, a (4, 16) block (AVX2+FMA).
//
//go:noescape
func gemmNN4x16(a *float32, lda uintptr, b *float32, ldb uintptr, k int, dst *float32, ldd uintptr)
