//go:build !amd64 && !arm64

package tensor

import "unsafe"

// Stubs: hasAVX2 is false off amd64, so these are never called.

func qdotQ8_0AVX2(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ4_0AVX2(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ4_1AVX2(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ5_0AVX2(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ5_1AVX2(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ4_KAVX2(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ5_KAVX2(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ6_KAVX2(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}

func dqQ8_0AVX2(*float32, *byte, int) { panic("unreachable") }
func dqQ4_0AVX2(*float32, *byte, int) { panic("unreachable") }
func dqQ4_1AVX2(*float32, *byte, int) { panic("unreachable") }
func dqQ5_0AVX2(*float32, *byte, int) { panic("unreachable") }
func dqQ5_1AVX2(*float32, *byte, int) { panic("unreachable") }
func dqQ4_KAVX2(*float32, *byte, int) { panic("unreachable") }
func dqQ5_KAVX2(*float32, *byte, int) { panic("unreachable") }
func dqQ6_KAVX2(*float32, *byte, int) { panic("unreachable") }

func qAbsMax32AVX2(*float32, int, *float32) bool           { panic("unreachable") }
func qVMax256AVX2(*float32, int, *float32) bool            { panic("unreachable") }
func qRound32AVX2(*float32, *float32, int, *int8)          { panic("unreachable") }
func qRound256AVX2(*float32, *float32, int, *int8, *int16) { panic("unreachable") }
