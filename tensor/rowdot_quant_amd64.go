package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The quantized row-dot kernels of rowdot_quant_amd64.s; see dotQRows.

//go:noescape
func qdotQ8_0SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ4_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ5_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ6_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

// The dequantizers of dequant_amd64.s; see dequantFast.

//go:noescape
func dqQ8_0SIMD(dst *float32, src *byte, nb int)

//go:noescape
func dqQ4_0SIMD(dst *float32, src *byte, nb int)

//go:noescape
func dqQ4_1SIMD(dst *float32, src *byte, nb int)

//go:noescape
func dqQ5_0SIMD(dst *float32, src *byte, nb int)

//go:noescape
func dqQ5_1SIMD(dst *float32, src *byte, nb int)

//go:noescape
func dqQ4_KSIMD(dst *float32, src *byte, nb int)

//go:noescape
func dqQ5_KSIMD(dst *float32, src *byte, nb int)

//go:noescape
func dqQ6_KSIMD(dst *float32, src *byte, nb int)

// The activation quantizers of quantize_acts_amd64.s; see quantizeBlocksSIMD.

//go:noescape
func qAbsMax32SIMD(x *float32, nb int, out *float32) (nan bool)

//go:noescape
func qVMax256SIMD(x *float32, nb int, out *float32) (nan bool)

//go:noescape
func qRound32SIMD(x *float32, id *float32, nb int, q *int8)

//go:noescape
func qRound256SIMD(x *float32, is *float32, nb int, q *int8, bsums *int16)

// The multi-token K-quant row dots of rowdot_quant_amd64.s; see dotQRowsX4.

//go:noescape
func qdotQ4_Kx4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

//go:noescape
func qdotQ5_Kx4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

//go:noescape
func qdotQ6_Kx4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

// qdotX4Arch: the multi-token kernels exist on this architecture.
const qdotX4Arch = true

//go:noescape
func qdotQ4_Kx2SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

//go:noescape
func qdotQ5_Kx2SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

//go:noescape
func qdotQ6_Kx2SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

//go:noescape
func qdotQ8_0x4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

//go:noescape
func qdotQ8_0x2SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

//go:noescape
func qdotQ8_0x4VNNI(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

//go:noescape
func qdotQ8_0x2VNNI(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)

// hasVNNI selects the AVX-512 VNNI variants of the Q8_0 multi-token
// kernels (qdotQ8_0x4VNNI): VPDPBUSD on 256-bit registers needs
// AVX512_VNNI and AVX512VL, and x/sys/cpu reports AVX-512 features only
// when the OS saves their state. Tests flip it to run both variants.
var hasVNNI = cpu.X86.HasAVX512 && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

// qdotQ8_0x8Z is the eight-token Q8_0 kernel on 512-bit registers (AVX-512
// VNNI); see dotQRowsX8.
//
//go:noescape
func qdotQ8_0x8Z(dst *float32, rows int, w *byte, stride uintptr, p *byte, dx *float32, nb int, ldd uintptr)
