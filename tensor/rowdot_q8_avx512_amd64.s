#include "textflag.h"
#include "rowdot_amd64.h"

// The single-token Q8_0 row dot on 512-bit registers (AVX-512 F, BW, VL and
// VNNI): qdotQ8_0SIMD's arithmetic, bit for bit, with half its integer
// instructions and a far prefetch.
//
// The canonical Q8_0 arithmetic (matmul.go) is one float chain per row: an
// 8-lane accumulator, acc = fma(dw·da, float(int32 lane sums), acc) block
// after block, folded by FOLD8. This kernel keeps the chain and changes
// only what feeds it:
//
//   - the integer sums of two blocks in one VPDPBUSD: a zmm holds blocks b
//     and b+1 of the row (lanes 0-7 and 8-15, each lane the exact int32
//     sum of four consecutive products — the ymm kernel's
//     VPMADDUBSW+VPMADDWD lanes); the weights are made unsigned by adding
//     128 (XOR 0x80) and the lane starts at −128·Σa over its four
//     activations, so it ends at Σ w·a exactly;
//   - one VCVTDQ2PS for both blocks, lanes 8-15 moved down (VEXTRACTF64X4)
//     for block b+1's FMA, after block b's.
//
// Measured on the 2-CPU Zen 5 VM (BenchmarkQ8Z, TinyLlama's (5632, 2048)
// from DRAM, 2 threads): what limits a decode there is not arithmetic but
// how the stream is fetched. The ymm kernel's PREFETCHT0 2 KB ahead is
// worse than no prefetch at all; PREFETCHT1 (into L2) 16-64 KB ahead,
// several 4 KiB pages, lifts the rate per CPU-second by ~1.3× (page walks
// and DRAM latency start that much earlier; L1 is not flooded). Running
// two rows at once (two FMA chains: 1.85× the in-cache rate) lost ~25%
// from DRAM with any prefetch — the two interleaved streams again, as the
// ymm kernel's notes found — so rows go one at a time: one chain, at
// ~30 GB/s per core in L2 (4 cycles of FMA latency per 34-byte block),
// above a core's share of DRAM.
//
// Registers: SI walks the row, DI the activations, DX their scales, CX
// counts blocks, R9 the rows left, R10 the row's start, BX the stride. Y0
// accumulates; Z2 the activations of a block pair, Z3 their −128·Σa lanes,
// Y6/Y7 their scales; Z13 0x80 bytes, Z14 zero; Z16-Z25 temporaries.

// Q8ZPF is the prefetch distance in bytes (see the top): 32 KB, mid-range
// of the measured plateau. Each 136-byte step prefetches three lines, so
// every line of the stream is covered: one line per step ran at half the
// rate, two (94% of the lines) ~2% below three.
#define Q8ZPF 32768

// Q8ZACTS loads the activations of blocks b, b+1 at aoff(DI) with their
// −128·Σa lanes and broadcasts their scales at doff(DX).
#define Q8ZACTS(aoff, doff) \
	VMOVDQU64    aoff(DI), Z2; \
	VPXORD       Z3, Z3, Z3; \
	VPDPBUSD     Z2, Z13, Z3; \
	VPSUBD       Z3, Z14, Z3; \
	VBROADCASTSS doff(DX), Y6; \
	VBROADCASTSS doff+4(DX), Y7

// Q8ZROW adds blocks b, b+1 of the row at off(P) into ACC: W, I (Y forms
// YW, YI) the weights and integer lanes, H the upper lanes, S/T (XS/XT)
// the two blocks' scales dw·da.
#define Q8ZROW(P, off, W, YW, I, YI, H, S, XS, T, XT, ACC) \
	VMOVDQU64     off+2(P), YW; \
	VINSERTI64X4  $1, off+36(P), W, W; \
	VPXORD        Z13, W, W; \
	VMOVDQA64     Z3, I; \
	VPDPBUSD      Z2, W, I; \
	VCVTDQ2PS     I, I; \
	VEXTRACTF64X4 $1, I, H; \
	VPBROADCASTW  off(P), XS; \
	VCVTPH2PS     XS, S; \
	VMULPS        Y6, S, S; \
	VPBROADCASTW  off+34(P), XT; \
	VCVTPH2PS     XT, T; \
	VMULPS        Y7, T, T; \
	VFMADD231PS   S, YI, ACC; \
	VFMADD231PS   T, H, ACC

// Q8ZACTS1 and Q8ZROW1: the same for a row's last block when nb is odd,
// on 256-bit registers.
#define Q8ZACTS1 \
	VMOVDQU      (DI), Y2; \
	VPXORD       Y3, Y3, Y3; \
	VPDPBUSD     Y2, Y13, Y3; \
	VPSUBD       Y3, Y14, Y3; \
	VBROADCASTSS (DX), Y6

#define Q8ZROW1(P, YW, YI, S, XS, ACC) \
	VMOVDQU64    2(P), YW; \
	VPXORD       Y13, YW, YW; \
	VMOVDQA64    Y3, YI; \
	VPDPBUSD     Y2, YW, YI; \
	VCVTDQ2PS    YI, YI; \
	VPBROADCASTW (P), XS; \
	VCVTPH2PS    XS, S; \
	VMULPS       Y6, S, S; \
	VFMADD231PS  S, YI, ACC


// func qdotQ8_0Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotQ8_0Z(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ rows+8(FP), R9
	MOVQ w+16(FP), R10
	MOVQ stride+24(FP), BX
	BCAST32($0x80808080, Z13, X13)
	VPXORD Z14, Z14, Z14

q80zrow:
	MOVQ R10, SI
	MOVQ q+32(FP), DI
	MOVQ d+40(FP), DX
	MOVQ nb+56(FP), CX
	VXORPS Y0, Y0, Y0
	SUBQ $4, CX
	JL   q80ztail

	PCALIGN $64

q80zloop4:
	PREFETCHT1 Q8ZPF(SI)
	PREFETCHT1 Q8ZPF+64(SI)
	PREFETCHT1 Q8ZPF+128(SI)
	Q8ZACTS(0, 0)
	Q8ZROW(SI, 0, Z16, Y16, Z17, Y17, Y18, Y19, X19, Y20, X20, Y0)
	Q8ZACTS(64, 8)
	Q8ZROW(SI, 68, Z21, Y21, Z22, Y22, Y23, Y24, X24, Y25, X25, Y0)
	ADDQ $136, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  q80zloop4

q80ztail:
	ADDQ $4, CX
	CMPQ CX, $2
	JL   q80ztail1
	Q8ZACTS(0, 0)
	Q8ZROW(SI, 0, Z16, Y16, Z17, Y17, Y18, Y19, X19, Y20, X20, Y0)
	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX

q80ztail1:
	TESTQ CX, CX
	JZ    q80zsum
	Q8ZACTS1
	Q8ZROW1(SI, Y16, Y17, Y19, X19, Y0)

q80zsum:
	FOLD8(Y0, X0)
	VMOVSS X0, (R8)
	ADDQ   $4, R8
	ADDQ   BX, R10
	DECQ   R9
	JNZ    q80zrow
	VZEROUPPER
	RET
