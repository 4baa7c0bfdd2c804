//go:build !amd64

package tensor

import "unsafe"

// No zmm table-format kernels off amd64 (rowdot_iq_avx512_amd64.go):
// hasKZ is false and the stubs are never called.

var hasNLZV = false

func qdotIQ4_NLx8Z(*float32, int, *byte, uintptr, *byte, *float32, unsafe.Pointer, int, uintptr) {
	panic("unreachable")
}

func qdotMXFP4x8Z(*float32, int, *byte, uintptr, *byte, *float32, unsafe.Pointer, int, uintptr) {
	panic("unreachable")
}

func qdotIQ3_Sx8Z(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, uintptr, uintptr) {
	panic("unreachable")
}
