//go:build !amd64

package tensor

import "unsafe"

// No zmm table-format kernels off amd64 (rowdot_iq_avx512_amd64.go):
// hasKZ is false and the stubs are never called.

var hasNLZV = false

func qdotNLTileZ(*float32, int, *byte, *byte, int, int) { panic("unreachable") }

func nlUnpack4IQ4NL(*byte, *byte, uintptr, int, unsafe.Pointer) { panic("unreachable") }

func nlUnpack4MXFP4(*byte, *byte, uintptr, int, unsafe.Pointer) { panic("unreachable") }
