package tensor

import "unsafe"

// hasNLTileY selects the ymm tiles of IQ4_NL and MXFP4
// (rowdot_iq_nl_amd64.s: AVX2, 4 rows × 8 tokens) where the zmm ones
// (hasNLZV) are not taken; both give the row dots' bits.
var hasNLTileY = hasSIMD

// qdotNLTileY sets out[8r + t] (r < 4, t < 8) to the dots of the four rows
// unpacked in ws (nlUnpack4…Y) and the eight tokens of the packed half at
// pk (nlPack's group, +32 bytes for tokens 8-15), over nb blocks.
//
//go:noescape
func qdotNLTileY(out *float32, ws *byte, pk *byte, nb int)

// qdotNLTileYMX is qdotNLTileY for MXFP4 rows (levels of at most 12 in
// magnitude), the same results.
//
//go:noescape
func qdotNLTileYMX(out *float32, ws *byte, pk *byte, nb int)

//go:noescape
func nlUnpack4IQ4NLY(ws *byte, w *byte, stride uintptr, nb int, aux unsafe.Pointer)

//go:noescape
func nlUnpack4MXFP4Y(ws *byte, w *byte, stride uintptr, nb int, aux unsafe.Pointer)

// hasXSTileY selects the ymm tiles of IQ4_XS and IQ3_S
// (rowdot_iq_xs_amd64.s) where the zmm eight-token kernels (useKx8) are not
// taken.
var hasXSTileY = hasSIMD

// qdotXSTileK sets out[4r+t] (r < 2, t < 4) to the dot of row r, unpacked
// (xsUnpack) at ws + r·wsl, and token t, its Q8_K activations at q + t·ldq
// and super-block scales at d + t·ldd bytes, over nb super-blocks.
//
//go:noescape
func qdotXSTileK(out *float32, ws *byte, wsl uintptr, q *int8, ldq uintptr, d *float32, ldd uintptr, nb int)

// qdotXSTileY3S sets out[t] (t < 8) to the dot of the IQ3_S row unpacked
// in ws (xsUnpackIQ3S: the lanes' bias corrections at 0) and token t of the
// group packed at pk (xsPack: biased activations), over nb super-blocks.
//
//go:noescape
func qdotXSTileY3S(out *float32, ws *byte, pk *byte, nb int)

//go:noescape
func xsUnpackLevels(ws *byte, w *byte, nb int)

// xsUnpackIQ3S writes one IQ3_S row's nb super-blocks at w into ws in
// the tiles' layout (xsUnpack): magnitudes, signed levels, the odd
// scales as word pairs and dw (rowdot_iq_amd64.s).
//
//go:noescape
func xsUnpackIQ3S(ws *byte, w *byte, nb int)
