//go:build !amd64

package tensor

// No zmm IQ3_S kernels off amd64 (rowdot_iq3s_avx512_amd64.go): hasKZ is
// false and the stub is never called.

func qdotIQ3_Sx8Z2(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, uintptr, uintptr) {
	panic("unreachable")
}
