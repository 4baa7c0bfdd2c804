package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The zmm kernels of IQ4_NL and MXFP4 (rowdot_iq_nl_avx512_amd64.s) and
// IQ3_S (rowdot_iq_avx512_amd64.s).

// hasNLZV selects the zmm kernels of IQ4_NL and MXFP4 (qdotIQ4_NLZV,
// qdotMXFP4ZV and the tiles of rowdot_iq_tile.go): AVX-512 BW and VNNI
// (hasKZ) with VBMI (VPERMB); the ymm row dots otherwise. Both give the
// canonical bits of rowdot_iq_ref.go; tests flip it to compare them.
var hasNLZV = hasKZ && cpu.X86.HasAVX512VBMI

// qdotIQ4_NLZV and qdotMXFP4ZV take, besides the row dot's arguments, ns:
// the activations' per-block corrections −128·Σq (quantizedActs.NS from
// the row's first block), since they multiply biased levels level+128.
//
//go:noescape
func qdotIQ4_NLZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int, ns *int32)

//go:noescape
func qdotMXFP4ZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int, ns *int32)

//go:noescape
func qdotNLTileZ(dst *float32, ldd int, ws *byte, pk *byte, nb int, mask int)

//go:noescape
func nlUnpack4IQ4NL(ws *byte, w *byte, stride uintptr, nb int, aux unsafe.Pointer)

//go:noescape
func nlUnpack4MXFP4(ws *byte, w *byte, stride uintptr, nb int, aux unsafe.Pointer)
