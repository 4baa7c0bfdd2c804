package tensor

import "golang.org/x/sys/cpu"

// arm64 NEON kernels (kernels_float_arm64.s, rowdot_quant_arm64.s) behind the same Go
// wrappers as the amd64 AVX2 ones. The wrappers in kernels_float.go, rowdot_quant.go,
// dequant_simd.go and quantize_acts.go test one flag, hasSIMD, and call functions
// named …AVX2; on arm64 the flag means "the NEON kernel set is usable" and
// those names are thin shims (inlined) onto the NEON entry points below, or,
// for the kernels not yet written for NEON, onto pure-Go loops over the
// same buffers. Tests flip hasSIMD to compare against the reference, so the
// parity tests of the amd64 kernels cover these unchanged.
//
// Advanced SIMD (ASIMD) is part of every ARMv8-A core, half↔single
// conversion (FCVTL) included; SDOT needs the ARMv8.2 dot-product
// extension, which hasDotProd selects (Cortex-A55/A76 and later, Apple M1,
// Neoverse N1/V1; not Cortex-A53/A72).
var (
	hasSIMD    = cpu.ARM64.HasASIMD
	hasDotProd = cpu.ARM64.HasASIMDDP
)

// NEON entry points (kernels_float_arm64.s). Each needs n a multiple of 8
// (sumF32NEON: of 32) and n > 0; the wrappers in kernels_float.go ensure that.

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

func dot4F32SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, _ uintptr) {
	dot4F32NEON(w, lda, x, n, out)
}

func dot4F16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, _ uintptr) {
	dot4F16NEON(w, lda, x, n, out)
}

func dot4BF16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, _ uintptr) {
	dot4BF16NEON(w, lda, x, n, out)
}

func cvtF16SIMD(dst *float32, src *byte, n int)  { cvtF16NEON(dst, src, n) }
func cvtBF16SIMD(dst *float32, src *byte, n int) { cvtBF16NEON(dst, src, n) }
func sumF32SIMD(p *float32, n int) float32       { return sumF32NEON(p, n) }
