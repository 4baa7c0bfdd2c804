package tensor

import "unsafe"

// The quantized row-dot kernels of quantdot_amd64.s; see dotQRows.

//go:noescape
func qdotQ8_0AVX2(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ4_0AVX2(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ4_1AVX2(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ5_0AVX2(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ5_1AVX2(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ4_KAVX2(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ5_KAVX2(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

//go:noescape
func qdotQ6_KAVX2(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

// The dequantizers of quantdeq_amd64.s; see dequantFast.

//go:noescape
func dqQ8_0AVX2(dst *float32, src *byte, nb int)

//go:noescape
func dqQ4_0AVX2(dst *float32, src *byte, nb int)

//go:noescape
func dqQ4_1AVX2(dst *float32, src *byte, nb int)

//go:noescape
func dqQ5_0AVX2(dst *float32, src *byte, nb int)

//go:noescape
func dqQ5_1AVX2(dst *float32, src *byte, nb int)

//go:noescape
func dqQ4_KAVX2(dst *float32, src *byte, nb int)

//go:noescape
func dqQ5_KAVX2(dst *float32, src *byte, nb int)

//go:noescape
func dqQ6_KAVX2(dst *float32, src *byte, nb int)

// The activation quantizers of quantacts_amd64.s; see quantizeBlocksAVX2.

//go:noescape
func qAbsMax32AVX2(x *float32, nb int, out *float32) (nan bool)

//go:noescape
func qVMax256AVX2(x *float32, nb int, out *float32) (nan bool)

//go:noescape
func qRound32AVX2(x *float32, id *float32, nb int, q *int8)

//go:noescape
func qRound256AVX2(x *float32, is *float32, nb int, q *int8, bsums *int16)
