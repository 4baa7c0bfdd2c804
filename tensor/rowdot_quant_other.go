//go:build !amd64 && !arm64

package tensor

import "unsafe"

// Stubs: hasSIMD is false off amd64, so these are never called.

func qdotQ8_0SIMD(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ4_KSIMD(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ5_KSIMD(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}
func qdotQ6_KSIMD(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int) {
	panic("unreachable")
}

func dqQ8_0SIMD(*float32, *byte, int) { panic("unreachable") }
func dqQ4_0SIMD(*float32, *byte, int) { panic("unreachable") }
func dqQ4_1SIMD(*float32, *byte, int) { panic("unreachable") }
func dqQ5_0SIMD(*float32, *byte, int) { panic("unreachable") }
func dqQ5_1SIMD(*float32, *byte, int) { panic("unreachable") }
func dqQ4_KSIMD(*float32, *byte, int) { panic("unreachable") }
func dqQ5_KSIMD(*float32, *byte, int) { panic("unreachable") }
func dqQ6_KSIMD(*float32, *byte, int) { panic("unreachable") }

func qAbsMax32SIMD(*float32, int, *float32) bool           { panic("unreachable") }
func qVMax256SIMD(*float32, int, *float32) bool            { panic("unreachable") }
func qRound32SIMD(*float32, *float32, int, *int8)          { panic("unreachable") }
func qRound256SIMD(*float32, *float32, int, *int8, *int16) { panic("unreachable") }
