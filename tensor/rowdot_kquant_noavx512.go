//go:build !amd64

package tensor

import "unsafe"

// No zmm K-quant row dots off amd64 (rowdot_kquant_avx512_amd64.go): the
// flag stays off and the stubs are never called.
var hasKZ = false

// kzActs is off too: quantizeActs fills no paired copy (QP).
const kzActs = false

func qdotQ4_KZ(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}

func qdotQ4_Kx8Z(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, uintptr, uintptr) {
	panic("unreachable")
}

func qdotQ6_KZ(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}

func qdotQ6_Kx8Z(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, uintptr, uintptr) {
	panic("unreachable")
}

func qdotQ5_KZ(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}

func qdotQ5_Kx8Z(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, uintptr, uintptr) {
	panic("unreachable")
}

func qdotIQ4_XSZ(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}

func qdotIQ4_XSx8Z(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, uintptr, uintptr) {
	panic("unreachable")
}

// No zmm Q8_0 row dot off amd64 (rowdot_q8_avx512_amd64.go).
var hasQ8Z = false

func qdotQ8_0Z(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
