package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasKZ selects the zmm K-quant row dots (rowdot_kquant_avx512_amd64.s)
// over the ymm ones of rowdot_quant_amd64.s: AVX-512F and BW for the
// 512-bit byte and word ops, VNNI for VPDPWSSD. They give the ymm kernels'
// bits (exact integer lanes, the same float steps), so the flag changes
// speed only; tests flip it to compare the two, and NANOSERVE_NOAVX512=1
// turns it off with the zmm float kernels (hasAVX512).
var hasKZ = hasSIMD && hasAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

// kzActs is hasKZ as detected at start-up: where it holds, quantizeActs
// also writes the Q8_K values in qdotQ4_KZ's sub-block pairing (QP,
// pairK4). Tests that flip hasKZ leave it alone, so the copy is there
// whenever the zmm kernel can be selected.
var kzActs = hasKZ

//go:noescape
func qdotQ4_KZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ4_Kx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)

//go:noescape
func qdotQ6_KZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ6_Kx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)

//go:noescape
func qdotQ5_KZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ5_Kx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)

// qdotIQ4_XSZ is qdotIQ4_XSSIMD on zmm (rowdot_iq_avx512_amd64.s), the same bits.
//
//go:noescape
func qdotIQ4_XSZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotIQ4_XSx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)

var kzPF0, kzPF1 = 2048, 0
