package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// IQ3_S's zmm kernels without gathers (rowdot_iq3s_avx512_amd64.s).
//
// A super-block's 64 groups of four weights each take one of 512 grid
// entries. Fetched with VPGATHERDD, 16 entries per instruction (the
// first zmm kernels did), on AMD Zen 5 a 512-bit gather costs about as much as the
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
// instead of two gathers; with VBMI (hasIQ3V) VPERMT2B looks up all 64
// groups of a super-block per 128-byte piece of the low and high bytes.
// The lookup changes no arithmetic: the lanes are exact int32 sums, so the
// results are the ymm kernel's (qdotIQ3_SSIMD) and the reference's bits.

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

// qdotIQ3_SZP is qdotIQ3_SSIMD on zmm with the permute lookup: the same bits.
//
//go:noescape
func qdotIQ3_SZP(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

// qdotIQ3_Sx8ZP unpacks a super-block once for eight tokens (as
// qdotIQ4_XSx8Z does), per (row, token) the row dot's bits.
//
//go:noescape
func qdotIQ3_Sx8ZP(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)

// hasIQ3V selects the byte-permute kernels (AVX-512 VBMI: VPERMB,
// VPERMT2B), which look a super-block's 64 groups up with eight permutes
// where the word kernels need sixteen.
var hasIQ3V = hasKZ && cpu.X86.HasAVX512VBMI

// iq3sNibB is iq3sNib split into bytes: the low bytes of the 512 words,
// then the high bytes.
var iq3sNibB = func() (t [1024]byte) {
	for i, v := range iq3sNib {
		t[i], t[512+i] = byte(v), byte(v>>8)
	}
	return
}()

// qdotIQ3_SZV is qdotIQ3_SZP with the byte lookup (hasIQ3V): the same bits.
//
//go:noescape
func qdotIQ3_SZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)

// qdotIQ3_Sx8ZV is qdotIQ3_Sx8ZP with the byte lookup: the same bits.
//
//go:noescape
func qdotIQ3_Sx8ZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)

// qdotIQ3_SZ2 runs IQ3_S's zmm row dot: the byte lookup where the CPU has
// VBMI, else the word lookup.
func qdotIQ3_SZ2(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, nb int) {
	if hasIQ3V {
		qdotIQ3_SZV(dst, rows, w, stride, q, d, nil, nb)
	} else {
		qdotIQ3_SZP(dst, rows, w, stride, q, d, nil, nb)
	}
}

// qdotIQ3_Sx8Z2 runs IQ3_S's eight-token zmm kernel, chosen as
// qdotIQ3_SZ2's.
func qdotIQ3_Sx8Z2(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr) {
	if hasIQ3V {
		qdotIQ3_Sx8ZV(dst, rows, w, stride, q, bs, dz, nb, n, ldd)
	} else {
		qdotIQ3_Sx8ZP(dst, rows, w, stride, q, bs, dz, nb, n, ldd)
	}
}
