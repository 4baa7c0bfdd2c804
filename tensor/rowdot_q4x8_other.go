//go:build !amd64

package tensor

// Stubs: q4x8Arch is false off amd64, so these are never called.

const q4x8Arch = false

func qdotQ4_0x8T1(*float32, int, *byte, *int8, *float32, *int32, int) { panic("unreachable") }

func qdotQ4_0x8T4(*float32, int, *byte, *byte, int, *[4]uintptr) { panic("unreachable") }

func qdotIQ4_NLx8T1(*float32, int, *byte, *int8, *float32, *int32, int) { panic("unreachable") }

func qdotMXFP4x8T1(*float32, int, *byte, *int8, *float32, *int32, int) { panic("unreachable") }

func q4x8DepackY(*byte, uintptr, *byte, int, int, uintptr) { panic("unreachable") }

func qdotQ5_0x8T1(*float32, int, *byte, *int8, *float32, *int32, int) { panic("unreachable") }

func qdotQ5_0x8T4(*float32, int, *byte, *byte, int, *[4]uintptr) { panic("unreachable") }

func qdotQ4_1x8T1(*float32, int, *byte, *int8, *float32, *float32, int) { panic("unreachable") }

func qdotQ5_1x8T1(*float32, int, *byte, *int8, *float32, *float32, int) { panic("unreachable") }

func qdotQ4_1x8T4(*float32, int, *byte, *byte, int, *[4]uintptr) { panic("unreachable") }

func qdotQ5_1x8T4(*float32, int, *byte, *byte, int, *[4]uintptr) { panic("unreachable") }

func qdotMXFP4x8T4(*float32, int, *byte, *byte, int, *[4]uintptr) { panic("unreachable") }

func qdotQ8_0x8T1(*float32, int, *byte, *int8, *float32, *int32, int) { panic("unreachable") }

func qdotQ8_0x8T4(*float32, int, *byte, *byte, int, *[4]uintptr) { panic("unreachable") }

func qdotIQ4_NLx8T4(*float32, int, *byte, *byte, int, *[4]uintptr) { panic("unreachable") }
