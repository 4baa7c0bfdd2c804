package tensor

import "unsafe"

// IQ3_S's zmm kernels without gathers (rowdot_iq3s_avx512_amd64.s).
//
// A super-block's 64 groups of four weights each take one of 512 grid
// entries. qdotIQ3_SZ fetches them with VPGATHERDD, 16 entries per
// instruction; on AMD Zen 5 a 512-bit gather costs about as much as the
// rest of the super-block's work together, and a super-block needs four,
// so decode stayed far below what the bytes allow and prefill (eight
// tokens per unpacked super-block) still spent ~40% of its time in them.
//
// The permute kernels look the entries up in registers instead: every
// grid magnitude is odd and at most 15, so an entry fits in one word as
// four nibbles (iq3sNib), and the 512 words are eight 64-word pieces of
// 128 bytes — one VPERMT2W each looks up 32 indices in a piece, and a
// three-level VPBLENDMW tree picks the piece by the index's top three
// bits. 32 groups (128 weights) cost eight permutes and seven blends
// instead of two gathers. The lookup changes no arithmetic: the lanes are
// exact int32 sums, so the results are qdotIQ3_SZ's bits.

// iq3sNib is iq3sGrid with each magnitude in a nibble: entry i's
// magnitude j at bits 4j..4j+3.
var iq3sNib = func() (t [512]uint16) {
	for i, c := range iq3sCodes {
		for j := range 4 {
			t[i] |= uint16(2*(c>>(3*j)&7)+1) << (4 * j)
		}
	}
	return
}()

// qdotIQ3_SZP is qdotIQ3_SZ with the permute lookup: the same bits.
//
//go:noescape
func qdotIQ3_SZP(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

// qdotIQ3_Sx8ZP is qdotIQ3_Sx8Z with the permute lookup: the same bits.
//
//go:noescape
func qdotIQ3_Sx8ZP(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
