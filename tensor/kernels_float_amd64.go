package tensor

import "golang.org/x/sys/cpu"

// hasSIMD selects the assembly kernels of kernels_float_amd64.s: AVX2 integer and
// float ops, FMA3, and F16C's VCVTPH2PS. x/sys/cpu reports AVX/AVX2 only
// when the OS saves YMM state (XGETBV), so the flag is safe to trust. Tests
// flip it to exercise the pure-Go kernels on the same machine.
//
// AVX-512 (and arm64 NEON) kernels would slot in the same way: another
// flag, another set of TEXT symbols, the same Go wrappers.
var hasSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

//go:noescape
func dot4F32SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32)

//go:noescape
func dot4F16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32)

//go:noescape
func dot4BF16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32)

//go:noescape
func cvtF16SIMD(dst *float32, src *byte, n int)

//go:noescape
func cvtBF16SIMD(dst *float32, src *byte, n int)

// The float GEMM tiles (4 rows × 3 or 2 tokens), see tileKernel.
//
//go:noescape
func tileF32x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileF16x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileBF16x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileF32x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileF16x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileBF16x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

// hasTileArch: the tile kernels exist on this architecture.
const hasTileArch = true

//go:noescape
func sumF32SIMD(p *float32, n int) float32
