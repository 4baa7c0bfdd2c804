package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasQ8Z selects the zmm single-token Q8_0 row dot (qdotQ8_0Z,
// rowdot_q8_avx512_amd64.s) over qdotQ8_0SIMD: AVX-512 F, BW, VL and
// VNNI. It gives the ymm kernel's bits (exact integer lanes, the same float
// steps in the same order), so the flag changes speed only; tests flip it
// to compare the two, and NANOSERVE_NOAVX512=1 turns it off (hasAVX512).
var hasQ8Z = hasSIMD && hasAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

//go:noescape
func qdotQ8_0Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
