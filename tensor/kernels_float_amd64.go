package tensor

import (
	"os"

	"golang.org/x/sys/cpu"
)

// hasSIMD selects the assembly kernels of kernels_float_amd64.s: AVX2 integer and
// float ops, FMA3, and F16C's VCVTPH2PS. x/sys/cpu reports AVX/AVX2 only
// when the OS saves YMM state (XGETBV), so the flag is safe to trust. Tests
// flip it to exercise the pure-Go kernels on the same machine.
//
// The arm64 NEON kernels and the AVX-512 ones below slot in the same way:
// another flag, another set of TEXT symbols, the same Go wrappers.
var hasSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// hasAVX512 selects, where hasSIMD is set, the zmm variants of the float
// row dots and tiles (kernels_float_avx512_amd64.s; AVX-512F only, which
// x/sys/cpu reports only when the OS saves the ZMM state). They reduce in
// another canonical order than the ymm kernels (16 lanes, see matmul.go),
// so each path is batch-invariant on its own and they agree to rounding.
// Tests flip it to run the ymm kernels on an AVX-512 machine; so does the
// environment variable NANOSERVE_NOAVX512=1 (for A/B runs of whole
// programs: bench, the model and engine invariance tests).
var hasAVX512 = cpu.X86.HasAVX512F && os.Getenv("NANOSERVE_NOAVX512") == ""

// The zmm kernels (kernels_float_avx512_amd64.s): same arguments and
// contracts as the ymm ones of the same name without the Z.
//
//go:noescape
func dot4F32Z(w *byte, lda uintptr, x *float32, n int, out *[4]float32)

//go:noescape
func dot4F16Z(w *byte, lda uintptr, x *float32, n int, out *[4]float32)

// dotRowsF16Z and dotRowsBF16Z are dot4F16Z's and dot4BF16Z's arithmetic
// for rows one at a time (the decode kernels; see dotRowsHalf): dst[i] =
// row i · x over n columns (a positive multiple of 8), rows ≥ 1.
//
//go:noescape
func dotRowsF16Z(w *byte, stride uintptr, x *float32, n int, rows int, dst *float32)

//go:noescape
func dotRowsBF16Z(w *byte, stride uintptr, x *float32, n int, rows int, dst *float32)

//go:noescape
func dot4BF16Z(w *byte, lda uintptr, x *float32, n int, out *[4]float32)

//go:noescape
func tileF32x3Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileF16x3Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileBF16x3Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileF32x6Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileF16x6Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

// tileF16x6ZP is tileF16x6Z over one panel of k columns, the 24
// accumulators loaded from acc (mode&1) and, unless the panel is the
// row's last (mode&2: remainder, folds, dst as tileF16x6Z), stored back
// to acc unfolded (tileF16Panels).
//
//go:noescape
func tileF16x6ZP(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, acc *float32, mode int)

//go:noescape
func tileBF16x6Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileF32x2Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileF16x2Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func tileBF16x2Z(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr)

//go:noescape
func dot4F32SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, pf uintptr)

//go:noescape
func dot4F16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, pf uintptr)

//go:noescape
func dot4BF16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, pf uintptr)

//go:noescape
func cvtF16SIMD(dst *float32, src *byte, n int)

//go:noescape
func cvtBF16SIMD(dst *float32, src *byte, n int)

// The float GEMM tiles (4 rows × 3 or 2 tokens), see tileKernel.
//
//go:noescape
func tileF32x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)

//go:noescape
func tileF16x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)

//go:noescape
func tileBF16x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)

//go:noescape
func tileF32x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)

//go:noescape
func tileF16x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)

//go:noescape
func tileBF16x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)

// The four-token ymm tiles (pairs of rows × 4 tokens), see tileKernel.
//
//go:noescape
func tileF32x4SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)

//go:noescape
func tileF16x4SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)

//go:noescape
func tileBF16x4SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)

// hasTileArch: the tile kernels exist on this architecture.
const hasTileArch = true

//go:noescape
func sumF32SIMD(p *float32, n int) float32
