//go:build !amd64

package tensor

import "unsafe"

// No ymm tiles of IQ4_NL and MXFP4 off amd64 (rowdot_iq_tile_amd64.go).
var hasNLTileY = false

func qdotNLTileY(*float32, *byte, *byte, int)                    { panic("unreachable") }
func qdotNLTileYMX(*float32, *byte, *byte, int)                  { panic("unreachable") }
func nlUnpack4IQ4NLY(*byte, *byte, uintptr, int, unsafe.Pointer) { panic("unreachable") }
func nlUnpack4MXFP4Y(*byte, *byte, uintptr, int, unsafe.Pointer) { panic("unreachable") }

var hasXSTileY = false

func qdotXSTileK(*float32, *byte, uintptr, *int8, uintptr, *float32, uintptr, int) {
	panic("unreachable")
}
func xsUnpackLevels(*byte, *byte, int)          { panic("unreachable") }
func xsUnpackIQ3S(*byte, *byte, int)            { panic("unreachable") }
func qdotXSTileY3S(*float32, *byte, *byte, int) { panic("unreachable") }
