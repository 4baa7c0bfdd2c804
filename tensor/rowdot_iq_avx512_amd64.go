package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The zmm kernels of the 32-element table formats
// (rowdot_iq_avx512_amd64.s), selected by hasKZ like qdotIQ4_XSZ: the
// ymm kernels' bits, one row dot or eight tokens per unpacked block.

//go:noescape
func qdotIQ4_NLZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotMXFP4Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

// hasNLZV selects qdotIQ4_NLZV and qdotMXFP4ZV over qdotIQ4_NLZ and
// qdotMXFP4Z: the same bits with fewer instructions, on hosts whose
// AVX-512 has VBMI (VPERMB). Tests flip it to compare the two.
var hasNLZV = hasKZ && cpu.X86.HasAVX512VBMI

//go:noescape
func qdotIQ4_NLZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotMXFP4ZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotIQ4_NLx8Z(dst *float32, rows int, w *byte, stride uintptr, p *byte, dx *float32, aux unsafe.Pointer, nb int, ldd uintptr)

//go:noescape
func qdotMXFP4x8Z(dst *float32, rows int, w *byte, stride uintptr, p *byte, dx *float32, aux unsafe.Pointer, nb int, ldd uintptr)

// qdotIQ3_SZ is qdotIQ3_SSIMD on zmm, the same bits.
//
//go:noescape
func qdotIQ3_SZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotIQ3_Sx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
