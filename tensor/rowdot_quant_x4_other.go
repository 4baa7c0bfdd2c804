//go:build !amd64

package tensor

// Stubs: hasQdotX4 is false off amd64, so these are never called.

func qdotQ4_Kx4SIMD(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}
func qdotQ5_Kx4SIMD(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}
func qdotQ6_Kx4SIMD(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}

const qdotX4Arch = false

func qdotQ4_Kx2SIMD(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}
func qdotQ5_Kx2SIMD(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}
func qdotQ6_Kx2SIMD(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}
func qdotQ8_0x4SIMD(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}
func qdotQ8_0x2SIMD(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}

var hasVNNI = false

func qdotQ8_0x4VNNI(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}
func qdotQ8_0x2VNNI(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, *qx4Offs) {
	panic("unreachable")
}

func qdotQ8_0x8Z(*float32, int, *byte, uintptr, *byte, *float32, int, uintptr) {
	panic("unreachable")
}
