package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// arm64 NEON kernels (kernels_arm64.s, quantdot_arm64.s) behind the same Go
// wrappers as the amd64 AVX2 ones. The wrappers in kernels.go, quantdot.go,
// quantdeq.go and quantacts.go test one flag, hasAVX2, and call functions
// named …AVX2; on arm64 the flag means "the NEON kernel set is usable" and
// those names are thin shims (inlined) onto the NEON entry points below, or,
// for the kernels not yet written for NEON, onto pure-Go loops over the
// same buffers. Tests flip hasAVX2 to compare against the reference, so the
// parity tests of the amd64 kernels cover these unchanged.
//
// Advanced SIMD (ASIMD) is part of every ARMv8-A core, half↔single
// conversion (FCVTL) included; SDOT needs the ARMv8.2 dot-product
// extension, which hasDotProd selects (Cortex-A55/A76 and later, Apple M1,
// Neoverse N1/V1; not Cortex-A53/A72).
var (
	hasAVX2    = cpu.ARM64.HasASIMD
	hasDotProd = cpu.ARM64.HasASIMDDP
)

// NEON entry points (kernels_arm64.s). Each needs n a multiple of 8
// (sumF32NEON: of 32) and n > 0; the wrappers in kernels.go ensure that.

//go:noescape
func dot4F32NEON(w *byte, lda uintptr, x *float32, n int, out *[4]float32)

//go:noescape
func dot4F16NEON(w *byte, lda uintptr, x *float32, n int, out *[4]float32)

//go:noescape
func dot4BF16NEON(w *byte, lda uintptr, x *float32, n int, out *[4]float32)

//go:noescape
func cvtF16NEON(dst *float32, src *byte, n int)

//go:noescape
func cvtBF16NEON(dst *float32, src *byte, n int)

//go:noescape
func sumF32NEON(p *float32, n int) float32

func dot4F32AVX2(w *byte, lda uintptr, x *float32, n int, out *[4]float32) {
	dot4F32NEON(w, lda, x, n, out)
}

func dot4F16AVX2(w *byte, lda uintptr, x *float32, n int, out *[4]float32) {
	dot4F16NEON(w, lda, x, n, out)
}

func dot4BF16AVX2(w *byte, lda uintptr, x *float32, n int, out *[4]float32) {
	dot4BF16NEON(w, lda, x, n, out)
}

func cvtF16AVX2(dst *float32, src *byte, n int)  { cvtF16NEON(dst, src, n) }
func cvtBF16AVX2(dst *float32, src *byte, n int) { cvtBF16NEON(dst, src, n) }
func sumF32AVX2(p *float32, n int) float32       { return sumF32NEON(p, n) }

// gemm6x16AVX2 is the (6, 16) GEMM micro-tile of gemmTile in Go (no NEON
// tile yet): c[i*ldc+j] (+)= Σ_{p<k} a[i*lda+p]·b[p*16+j], lda and ldc in
// bytes.
func gemm6x16AVX2(a *float32, lda uintptr, b *float32, c *float32, ldc uintptr, k int, accum int) {
	la, lc := int(lda/4), int(ldc/4)
	as := unsafe.Slice(a, 5*la+k)
	bs := unsafe.Slice(b, 16*k)
	cs := unsafe.Slice(c, 5*lc+16)
	var t [gemmMR][gemmNR]float32
	for i := range gemmMR {
		ti := &t[i]
		for p, av := range as[i*la : i*la+k] {
			bp := bs[p*16 : p*16+16]
			for j := range gemmNR {
				ti[j] += av * bp[j]
			}
		}
	}
	for i := range gemmMR {
		ci := cs[i*lc : i*lc+16]
		if accum != 0 {
			for j := range ci {
				ci[j] += t[i][j]
			}
		} else {
			copy(ci, t[i][:])
		}
	}
}
