// AVX-512 single-token row dots of the K-quants: qdotQ4_KSIMD
// (rowdot_quant_amd64.s) with the super-block's integer sums on 512-bit
// registers, selected by hasKZ (rowdot_kquant_avx512_amd64.go; AVX-512F,
// BW and VNNI). Same arguments, same contract, same bits: the int32 lanes
// are exact, so computing them in another way changes nothing, and every
// float step (K4FINISH, FOLD8) is the ymm kernel's instruction for
// instruction. So batch invariance needs no new canonical order: the
// multi-token kernels (qdotQ4_Kx4SIMD), which reproduce the ymm kernel,
// reproduce this one (TestKQuantZBitwise, TestMatMulBatchInvariant).
//
// The ymm kernel's integer part, per super-block: lane l (l = 0..7) of
// Y5 = Σ_j sc_j · Σ_{e=4l..4l+3} q_j[e]·a_j[e] over the eight 32-element
// sub-blocks j (q the unsigned nibbles, a the int8 activations), from
// VPMADDUBSW (pairs into int16) and VPMADDWD by the scale words. Here one
// zmm holds 64 elements, sub-blocks 2g and 2g+1 of group g (g = 0..3),
// which are the low and high nibbles of the same 32 bytes: the bytes are
// broadcast to both 256-bit halves (VBROADCASTI64X4), the upper half
// shifted right by 4 (VPSRLW under the word mask K2) and both masked to
// 0x0f — then elements 64g..64g+63 lie in activation order, and one
// VPMADDUBSW against the activations' 64 bytes and one VPDPWSSD (VNNI:
// int16 pairs × scale words added into int32) by [sc_2g ×16 | sc_2g+1
// ×16] add lane l (sub-block 2g) and lane 8+l (sub-block 2g+1). After the
// four groups, lanes l and 8+l are added: the ymm kernel's Y5, exactly.
// Half the ymm kernel's integer instructions per super-block. (qdotQ4_KZ
// itself pairs the sub-blocks differently, two registers per 64-byte load
// against activations permuted to match: see K4ZPNIB.) The scales
// and mins are unpacked on zmm too (K4ZSC: 9 instructions where K4SCALES,
// the scale broadcast and K4MIN took 17, the mins doubled so that their
// products with the bsums are one VPMADDWD).

#include "textflag.h"
#include "rowdot_amd64.h"

// KZPF is how far ahead the single-token kernels prefetch the row stream,
// into L2 (PREFETCHT1, a super-block's lines per step): 16 KB, four 4 KiB
// pages, so page walks and DRAM latency start early; the ymm kernels'
// PREFETCHT0 2 KB ahead measured no better than none on the Zen 5 VM (see
// rowdot_q8_avx512_amd64.s). TinyLlama Q4_K_M decode, tok/cpu-s: ~1.07×;
// 110M Q4_K_M ~1.08× (A/B interleaved, BenchmarkSynth). Alternated
// against this kernel every 8 tokens of TinyLlama Q4_K_M decode in one
// process (50-60 rounds, median ratio, 2026-12-06): 8 KB ahead 1.01, 32 KB
// 0.99; one PREFETCHT1 per super-block instead of one per line 0.76 (the
// hardware prefetchers do not carry the stream alone); qdotQ4_KZ unrolled
// to two super-blocks per iteration (five prefetches, one pointer update)
// 0.995. A knock-out that keeps only qdotQ4_KZ's loads and prefetches
// (wrong results, timing only) decodes 1.125× faster: the most any Q4_K
// kernel with this stream can gain here. The same knock-out of qdotQ6_KZ
// (loads only) measured 1.006 [0.98, 1.05]: the Q6_K kernel already runs
// at its stream's pace, so in Q4_K_M files only the Q4_K kernel has room.
#define KZPF 16384

// VPSHUFB masks, one 64-byte entry per group g: scale word 2g in the low
// 256 bits, word 2g+1 in the high 256 bits (the scales as words in every
// 128-bit lane of the source).
DATA k4zshuf<>+0(SB)/8, $0x0100010001000100
DATA k4zshuf<>+8(SB)/8, $0x0100010001000100
DATA k4zshuf<>+16(SB)/8, $0x0100010001000100
DATA k4zshuf<>+24(SB)/8, $0x0100010001000100
DATA k4zshuf<>+32(SB)/8, $0x0302030203020302
DATA k4zshuf<>+40(SB)/8, $0x0302030203020302
DATA k4zshuf<>+48(SB)/8, $0x0302030203020302
DATA k4zshuf<>+56(SB)/8, $0x0302030203020302
DATA k4zshuf<>+64(SB)/8, $0x0504050405040504
DATA k4zshuf<>+72(SB)/8, $0x0504050405040504
DATA k4zshuf<>+80(SB)/8, $0x0504050405040504
DATA k4zshuf<>+88(SB)/8, $0x0504050405040504
DATA k4zshuf<>+96(SB)/8, $0x0706070607060706
DATA k4zshuf<>+104(SB)/8, $0x0706070607060706
DATA k4zshuf<>+112(SB)/8, $0x0706070607060706
DATA k4zshuf<>+120(SB)/8, $0x0706070607060706
DATA k4zshuf<>+128(SB)/8, $0x0908090809080908
DATA k4zshuf<>+136(SB)/8, $0x0908090809080908
DATA k4zshuf<>+144(SB)/8, $0x0908090809080908
DATA k4zshuf<>+152(SB)/8, $0x0908090809080908
DATA k4zshuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zshuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zshuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zshuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zshuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zshuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zshuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zshuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zshuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zshuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zshuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zshuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k4zshuf<>(SB), RODATA|NOPTR, $256

// K4ZSETUP sets the constants: Z15 = 0x0f bytes, Z14 = ones (words), Y13
// = 0x3f, Y12 = 0x30 bytes (K4SCALES), K2 = the upper 16 words.
#define K4ZSETUP \
	BCAST32($0x0f0f0f0f, Z15, X15); \
	BCAST32($0x00010001, Z14, X14); \
	BCAST32($0x3f3f3f3f, Y13, X13); \
	BCAST32($0x30303030, Y12, X12); \
	MOVL  $0xffff0000, AX; \
	KMOVD AX, K2

// K4ZNIB loads group g's 64 values (32 bytes at off(SI): low nibbles then
// high nibbles) into V in element order.
#define K4ZNIB(off, V) \
	VBROADCASTI64X4 off(SI), V; \
	VPSRLW          $4, V, K2, V; \
	VPANDD          Z15, V, V

// K4ZDOT adds group g's scaled products (values in V, activations at
// aoff(DI), scale words of every 128-bit lane in Z10) into the int32
// accumulator ACC. T is clobbered.
#define K4ZDOT(g, aoff, V, T, ACC) \
	VPMADDUBSW aoff(DI), V, V; \
	VPSHUFB    k4zshuf<>+64*g(SB), Z10, T; \
	VPDPWSSD   T, V, ACC

// K4ZSUM sets Y5 to the ymm kernel's integer lanes from the accumulators
// Z5 (groups 0, 2) and Z6 (groups 1, 3).
#define K4ZSUM \
	VPADDD        Z6, Z5, Z5; \
	VEXTRACTI64X4 $1, Z5, Y6; \
	VPADDD        Y6, Y5, Y5

// The single-token kernels' scales and mins (qdotQ4_KZ, qdotQ5_KZ): one
// 512-bit pass over the 12 packed bytes b[0..11] at 4(SI) instead of
// K4SCALES' xmm steps (scaleMinK4's formulas, the values are the same).
// VPSHUFB (the bytes in every 128-bit lane, VBROADCASTI32X4) forms words
// w = b[x] | b[y]<<8 and each word becomes ((w >> s1) & m1) | ((w >> s2)
// & m2), per-word shifts (VPSRLVW) and masks from the table k4zsc:
//
//	words 0-7 (and 8-15):  sc_j, j < 4: w = b[j],                 w & 0x3f
//	                             j ≥ 4: w = b[j+4] | b[j-4]<<8,   (w & 0x0f) | ((w >> 10) & 0x30)
//	words 16-23: m_j twice, j < 4:      w = b[j+4],               w & 0x3f
//	words 24-31: m_j twice, j ≥ 4:      w = b[j+4] | b[j]<<8,     ((w >> 4) & 0x0f) | ((w >> 10) & 0x30)
//
// The doubled mins make the min products one VPMADDWD against the bsums:
// lane j = m_j·bsum_2j + m_j·bsum_2j+1, the integer K4MIN computes as
// m_j·(bsum_2j + bsum_2j+1) — exact int32 either way, so the float steps
// that follow see the same values (TestKQuantZBitwise).
//
// Table: the VPSHUFB indexes (0x80: a zero byte), s1, s2, m2, m1; 64
// bytes each, loaded into Z24-Z28 by K4ZSCSETUP.
DATA k4zsc<>+0(SB)/8, $0x8003800280018000
DATA k4zsc<>+8(SB)/8, $0x030b020a01090008
DATA k4zsc<>+16(SB)/8, $0x8003800280018000
DATA k4zsc<>+24(SB)/8, $0x030b020a01090008
DATA k4zsc<>+32(SB)/8, $0x8005800580048004
DATA k4zsc<>+40(SB)/8, $0x8007800780068006
DATA k4zsc<>+48(SB)/8, $0x0509050904080408
DATA k4zsc<>+56(SB)/8, $0x070b070b060a060a
DATA k4zsc<>+64(SB)/8, $0x0000000000000000
DATA k4zsc<>+72(SB)/8, $0x0000000000000000
DATA k4zsc<>+80(SB)/8, $0x0000000000000000
DATA k4zsc<>+88(SB)/8, $0x0000000000000000
DATA k4zsc<>+96(SB)/8, $0x0000000000000000
DATA k4zsc<>+104(SB)/8, $0x0000000000000000
DATA k4zsc<>+112(SB)/8, $0x0004000400040004
DATA k4zsc<>+120(SB)/8, $0x0004000400040004
DATA k4zsc<>+128(SB)/8, $0x0000000000000000
DATA k4zsc<>+136(SB)/8, $0x000a000a000a000a
DATA k4zsc<>+144(SB)/8, $0x0000000000000000
DATA k4zsc<>+152(SB)/8, $0x000a000a000a000a
DATA k4zsc<>+160(SB)/8, $0x0000000000000000
DATA k4zsc<>+168(SB)/8, $0x0000000000000000
DATA k4zsc<>+176(SB)/8, $0x000a000a000a000a
DATA k4zsc<>+184(SB)/8, $0x000a000a000a000a
DATA k4zsc<>+192(SB)/8, $0x0000000000000000
DATA k4zsc<>+200(SB)/8, $0x0030003000300030
DATA k4zsc<>+208(SB)/8, $0x0000000000000000
DATA k4zsc<>+216(SB)/8, $0x0030003000300030
DATA k4zsc<>+224(SB)/8, $0x0000000000000000
DATA k4zsc<>+232(SB)/8, $0x0000000000000000
DATA k4zsc<>+240(SB)/8, $0x0030003000300030
DATA k4zsc<>+248(SB)/8, $0x0030003000300030
DATA k4zsc<>+256(SB)/8, $0x003f003f003f003f
DATA k4zsc<>+264(SB)/8, $0x000f000f000f000f
DATA k4zsc<>+272(SB)/8, $0x003f003f003f003f
DATA k4zsc<>+280(SB)/8, $0x000f000f000f000f
DATA k4zsc<>+288(SB)/8, $0x003f003f003f003f
DATA k4zsc<>+296(SB)/8, $0x003f003f003f003f
DATA k4zsc<>+304(SB)/8, $0x000f000f000f000f
DATA k4zsc<>+312(SB)/8, $0x000f000f000f000f
GLOBL k4zsc<>(SB), RODATA|NOPTR, $320

#define K4ZSCSETUP \
	VMOVDQU64 k4zsc<>+0(SB), Z24; \
	VMOVDQU64 k4zsc<>+64(SB), Z25; \
	VMOVDQU64 k4zsc<>+128(SB), Z26; \
	VMOVDQU64 k4zsc<>+192(SB), Z27; \
	VMOVDQU64 k4zsc<>+256(SB), Z28

// K4ZSC sets Z10 to the super-block's eight scale words in every 128-bit
// lane (for K4ZDOT) and Y4 to the min products (K4MIN's lanes), from the
// scales at 4(SI) and the bsums at (BX). Z8, Z9, Y3 clobbered.
#define K4ZSC \
	VBROADCASTI32X4 4(SI), Z8; \
	VPSHUFB         Z24, Z8, Z8; \
	VPSRLVW         Z25, Z8, Z9; \
	VPSRLVW         Z26, Z8, Z8; \
	VPANDD          Z27, Z8, Z8; \
	VPTERNLOGD      $0xEA, Z8, Z28, Z9; \
	VSHUFI64X2      $0, Z9, Z9, Z10; \
	VEXTRACTI64X4   $1, Z9, Y3; \
	VPMADDWD        (BX), Y3, Y4

// The single-token Q4_K kernel reads its nibbles 64 bytes at a time: the
// packed bytes of groups h and h+1 (h = 0, 2) hold sub-blocks 2h, 2h+2 in
// their low nibbles and 2h+1, 2h+3 in their high ones, so one load, one
// VPANDD for the low nibbles and a VPSRLW+VPANDD for the high ones give
// two registers of 64 values — [sub-block 2h | 2h+2] and [2h+1 | 2h+3] —
// where K4ZNIB's broadcasts give one register per load. The activations
// come paired to match (quantizedActs.QP, pairK4: sub-blocks 0, 2, 1, 3,
// 4, 6, 5, 7), and the scale words too (k4zpshuf: register p of the
// super-block takes [sc_a ×16 | sc_b ×16] for its pair (a, b) = (0, 2),
// (1, 3), (4, 6), (5, 7)). Lane l of the register's VPDPWSSD still adds
// sc_a·(its four products), lane 8+l sc_b·(its four), so after K4ZSUM
// lane l holds the same exact int32 as before.
DATA k4zpshuf<>+0(SB)/8, $0x0100010001000100
DATA k4zpshuf<>+8(SB)/8, $0x0100010001000100
DATA k4zpshuf<>+16(SB)/8, $0x0100010001000100
DATA k4zpshuf<>+24(SB)/8, $0x0100010001000100
DATA k4zpshuf<>+32(SB)/8, $0x0504050405040504
DATA k4zpshuf<>+40(SB)/8, $0x0504050405040504
DATA k4zpshuf<>+48(SB)/8, $0x0504050405040504
DATA k4zpshuf<>+56(SB)/8, $0x0504050405040504
DATA k4zpshuf<>+64(SB)/8, $0x0302030203020302
DATA k4zpshuf<>+72(SB)/8, $0x0302030203020302
DATA k4zpshuf<>+80(SB)/8, $0x0302030203020302
DATA k4zpshuf<>+88(SB)/8, $0x0302030203020302
DATA k4zpshuf<>+96(SB)/8, $0x0706070607060706
DATA k4zpshuf<>+104(SB)/8, $0x0706070607060706
DATA k4zpshuf<>+112(SB)/8, $0x0706070607060706
DATA k4zpshuf<>+120(SB)/8, $0x0706070607060706
DATA k4zpshuf<>+128(SB)/8, $0x0908090809080908
DATA k4zpshuf<>+136(SB)/8, $0x0908090809080908
DATA k4zpshuf<>+144(SB)/8, $0x0908090809080908
DATA k4zpshuf<>+152(SB)/8, $0x0908090809080908
DATA k4zpshuf<>+160(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zpshuf<>+168(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zpshuf<>+176(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zpshuf<>+184(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zpshuf<>+192(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zpshuf<>+200(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zpshuf<>+208(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zpshuf<>+216(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zpshuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zpshuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zpshuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zpshuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k4zpshuf<>(SB), RODATA|NOPTR, $256

// K4ZPNIB loads the 64 packed bytes at off(SI) and sets LO to their low
// nibbles, HI to their high nibbles.
#define K4ZPNIB(off, LO, HI) \
	VMOVDQU64 off(SI), HI; \
	VPANDD    Z15, HI, LO; \
	VPSRLW    $4, HI, HI; \
	VPANDD    Z15, HI, HI

// K4ZPDOT is K4ZDOT for register p of the pairing (k4zpshuf).
#define K4ZPDOT(p, aoff, V, T, ACC) \
	VPMADDUBSW aoff(DI), V, V; \
	VPSHUFB    k4zpshuf<>+64*p(SB), Z10, T; \
	VPDPWSSD   T, V, ACC

// func qdotQ4_KZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// Y0 the float accumulator, Z10 the scale words, Y4 the min products, Y5
// the integer sums (qdotQ4_KSIMD's roles); Z24-Z28 K4ZSC's table.
TEXT ·qdotQ4_KZ(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	K4ZSETUP
	K4ZSCSETUP

q4kzrow:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $64

q4kzloop:
	PREFETCHT1 KZPF(SI)
	PREFETCHT1 KZPF+64(SI)
	PREFETCHT1 KZPF+128(SI)
	K4ZSC
	VPXORD     Z5, Z5, Z5
	VPXORD     Z6, Z6, Z6
	K4ZPNIB(16, Z16, Z17)
	K4ZPNIB(80, Z18, Z19)
	K4ZPDOT(0, 0, Z16, Z20, Z5)
	K4ZPDOT(1, 64, Z17, Z21, Z6)
	K4ZPDOT(2, 128, Z18, Z22, Z5)
	K4ZPDOT(3, 192, Z19, Z23, Z6)
	K4ZSUM
	K4FINISH
	ADDQ    $144, SI
	ADDQ    $256, DI
	ADDQ    $4, DX
	ADDQ    $32, BX
	DECQ    CX
	JNZ     q4kzloop

	FOLD8(Y0, X0)
	ROWEND(q4kzrow)

// ---------------------------------------------------------------- eight tokens

// func qdotQ4_Kx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
// Q4_K weights against eight consecutive tokens (a prefill chunk or a
// decode step of eight or more sequences; see dotQRowsKX8): per row and
// super-block the weights are unpacked once — the four 64-element groups
// (K4ZNIB) and their scale words, the mins, d and dmin — and meet the
// tokens two at a time. Token t's activations are at q + t·n (bytes, n the
// row length), its packed bsums and scales at bs and dz (qx8PackK: per
// super-block and pair of tokens 2p, 2p+1, their 2 × 16 bsums side by side
// and [da_2p ×8 | da_2p+1 ×8]). Per token the int32 accumulator of a
// super-block is that of qdotQ4_KZ (one VPMADDUBSW and one VPDPWSSD per
// group, lanes l and 8+l added); the pair's two 8-lane sums share one
// zmm (lanes 0-7 token 2p, 8-15 token 2p+1), and so do its min products,
// and the float steps of K4FINISH run on both halves at once into the
// pair's float accumulator — lane by lane the single-token kernel's
// operations, so each (row, token) gets its bits (TestKQuantZx8,
// TestMatMulBatchInvariant). The row ends with Q8ZFOLD (= FOLD8 per
// token). dst[t·ldd/4 + i] receives token t, row i (ldd in bytes).
//
// Registers: Z0-Z3 the pairs' float accumulators; Z4-Z7 the groups'
// values; Z8-Z11 their scale words; Z16 the scale words in every 128-bit
// lane, Z17 the mins [m | m]; Z18, Z19 d and dmin; Z20, Z21 a pair's
// int32 accumulators, Z22-Z29 temporaries; Z12-Z15, K2 as K4ZSETUP. DI
// walks tokens 0-3 (R9 = DI + 4n: tokens 4-7), R11 = n, R12 = 3n; BX the
// packed bsums, DX the packed scales, CX counts super-blocks.

// K4X8PAIR runs the super-block for tokens A and B (activation addresses
// without the group offset) into the float accumulator F, with their
// bsums at boff(BX) and scales at doff(DX).
#define K4X8PAIR(A, B, boff, doff, F) \
	VPXORD        Z20, Z20, Z20; \
	VPXORD        Z21, Z21, Z21; \
	VPMADDUBSW    A, Z4, Z22; \
	VPMADDUBSW    B, Z4, Z23; \
	VPDPWSSD      Z8, Z22, Z20; \
	VPDPWSSD      Z8, Z23, Z21; \
	VPMADDUBSW    64 A, Z5, Z24; \
	VPMADDUBSW    64 B, Z5, Z25; \
	VPDPWSSD      Z9, Z24, Z20; \
	VPDPWSSD      Z9, Z25, Z21; \
	VPMADDUBSW    128 A, Z6, Z22; \
	VPMADDUBSW    128 B, Z6, Z23; \
	VPDPWSSD      Z10, Z22, Z20; \
	VPDPWSSD      Z10, Z23, Z21; \
	VPMADDUBSW    192 A, Z7, Z24; \
	VPMADDUBSW    192 B, Z7, Z25; \
	VPDPWSSD      Z11, Z24, Z20; \
	VPDPWSSD      Z11, Z25, Z21; \
	VSHUFI64X2    $0x44, Z21, Z20, Z26; \
	VSHUFI64X2    $0xEE, Z21, Z20, Z27; \
	VPADDD        Z27, Z26, Z26; \
	VPMADDWD      boff(BX), Z14, Z28; \
	VPMULLD       Z17, Z28, Z28; \
	VCVTDQ2PS     Z26, Z26; \
	VCVTDQ2PS     Z28, Z28; \
	VMULPS        Z18, Z26, Z26; \
	VFNMADD231PS  Z19, Z28, Z26; \
	VMOVUPS       doff(DX), Z29; \
	VFMADD231PS   Z29, Z26, F

TEXT ·qdotQ4_Kx8Z(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	MOVQ n+64(FP), R11
	LEAQ (R11)(R11*2), R12
	K4ZSETUP

q4kx8row:
	MOVQ   R10, SI
	MOVQ   q+32(FP), DI
	LEAQ   (DI)(R11*4), R9
	MOVQ   bs+40(FP), BX
	MOVQ   dz+48(FP), DX
	MOVQ   nb+56(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	PCALIGN $64

q4kx8loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	K4SCALES(SI, Y8, X8, Y9, X9, X10, X11)
	VSHUFI64X2   $0, Z8, Z8, Z16
	VSHUFI64X2   $0x44, Z9, Z9, Z17
	VPSHUFB      k4zshuf<>+0(SB), Z16, Z8
	VPSHUFB      k4zshuf<>+64(SB), Z16, Z9
	VPSHUFB      k4zshuf<>+128(SB), Z16, Z10
	VPSHUFB      k4zshuf<>+192(SB), Z16, Z11
	K4ZNIB(16, Z4)
	K4ZNIB(48, Z5)
	K4ZNIB(80, Z6)
	K4ZNIB(112, Z7)
	VPBROADCASTW (SI), Y18
	VCVTPH2PS    Y18, Z18
	VPBROADCASTW 2(SI), Y19
	VCVTPH2PS    Y19, Z19
	K4X8PAIR((DI), (DI)(R11*1), 0, 0, Z0)
	K4X8PAIR((DI)(R11*2), (DI)(R12*1), 64, 64, Z1)
	K4X8PAIR((R9), (R9)(R11*1), 128, 128, Z2)
	K4X8PAIR((R9)(R11*2), (R9)(R12*1), 192, 192, Z3)
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $256, BX
	ADDQ $256, DX
	DECQ CX
	JNZ  q4kx8loop

	X8STORE(q4kx8row)

// ---------------------------------------------------------------- Q5_K

// Q5_K is Q4_K with a fifth bit per value: bit 2g of qh[l] for the low
// nibble of group g, bit 2g+1 for the high one (qh: 32 bytes at 16, qs at
// 48). K5ZHIGH adds it to group g's values V as in qdotQ5_KSIMD's
// integers: VPTESTMB of qh (broadcast to both halves, Z30) against
// [1<<2g ×32 | 1<<(2g+1) ×32] gives a byte mask, and a masked VPADDB of
// 0x10 (Z31) sets bit 4 where the bit is set. The rest is the Q4_K
// kernels' (K4SCALES, K4ZDOT, K4ZSUM, K4FINISH; the x8 pairs).

DATA k5zbit<>+0(SB)/8, $0x0101010101010101
DATA k5zbit<>+8(SB)/8, $0x0101010101010101
DATA k5zbit<>+16(SB)/8, $0x0101010101010101
DATA k5zbit<>+24(SB)/8, $0x0101010101010101
DATA k5zbit<>+32(SB)/8, $0x0202020202020202
DATA k5zbit<>+40(SB)/8, $0x0202020202020202
DATA k5zbit<>+48(SB)/8, $0x0202020202020202
DATA k5zbit<>+56(SB)/8, $0x0202020202020202
DATA k5zbit<>+64(SB)/8, $0x0404040404040404
DATA k5zbit<>+72(SB)/8, $0x0404040404040404
DATA k5zbit<>+80(SB)/8, $0x0404040404040404
DATA k5zbit<>+88(SB)/8, $0x0404040404040404
DATA k5zbit<>+96(SB)/8, $0x0808080808080808
DATA k5zbit<>+104(SB)/8, $0x0808080808080808
DATA k5zbit<>+112(SB)/8, $0x0808080808080808
DATA k5zbit<>+120(SB)/8, $0x0808080808080808
DATA k5zbit<>+128(SB)/8, $0x1010101010101010
DATA k5zbit<>+136(SB)/8, $0x1010101010101010
DATA k5zbit<>+144(SB)/8, $0x1010101010101010
DATA k5zbit<>+152(SB)/8, $0x1010101010101010
DATA k5zbit<>+160(SB)/8, $0x2020202020202020
DATA k5zbit<>+168(SB)/8, $0x2020202020202020
DATA k5zbit<>+176(SB)/8, $0x2020202020202020
DATA k5zbit<>+184(SB)/8, $0x2020202020202020
DATA k5zbit<>+192(SB)/8, $0x4040404040404040
DATA k5zbit<>+200(SB)/8, $0x4040404040404040
DATA k5zbit<>+208(SB)/8, $0x4040404040404040
DATA k5zbit<>+216(SB)/8, $0x4040404040404040
DATA k5zbit<>+224(SB)/8, $0x8080808080808080
DATA k5zbit<>+232(SB)/8, $0x8080808080808080
DATA k5zbit<>+240(SB)/8, $0x8080808080808080
DATA k5zbit<>+248(SB)/8, $0x8080808080808080
GLOBL k5zbit<>(SB), RODATA|NOPTR, $256

// K5ZSETUP: K4ZSETUP, plus Z31 = 0x10 bytes.
#define K5ZSETUP \
	K4ZSETUP; \
	BCAST32($0x10101010, Z31, X31)

// K5ZHIGH adds group g's fifth bits to its values V (qh in Z30).
#define K5ZHIGH(g, V) \
	VPTESTMB k5zbit<>+64*g(SB), Z30, K3; \
	VPADDB   Z31, V, K3, V

// func qdotQ5_KZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// qdotQ4_KZ for Q5_K (176-byte super-blocks).
TEXT ·qdotQ5_KZ(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	K5ZSETUP
	K4ZSCSETUP

q5kzrow:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $64

q5kzloop:
	PREFETCHT1 KZPF(SI)
	PREFETCHT1 KZPF+64(SI)
	PREFETCHT1 KZPF+128(SI)
	K4ZSC
	VPXORD          Z5, Z5, Z5
	VPXORD          Z6, Z6, Z6
	VBROADCASTI64X4 16(SI), Z30
	K4ZNIB(48, Z16)
	K4ZNIB(80, Z17)
	K4ZNIB(112, Z18)
	K4ZNIB(144, Z19)
	K5ZHIGH(0, Z16)
	K5ZHIGH(1, Z17)
	K5ZHIGH(2, Z18)
	K5ZHIGH(3, Z19)
	K4ZDOT(0, 0, Z16, Z20, Z5)
	K4ZDOT(1, 64, Z17, Z21, Z6)
	K4ZDOT(2, 128, Z18, Z22, Z5)
	K4ZDOT(3, 192, Z19, Z23, Z6)
	K4ZSUM
	K4FINISH
	ADDQ    $176, SI
	ADDQ    $256, DI
	ADDQ    $4, DX
	ADDQ    $32, BX
	DECQ    CX
	JNZ     q5kzloop

	FOLD8(Y0, X0)
	ROWEND(q5kzrow)

// func qdotQ5_Kx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
// qdotQ4_Kx8Z for Q5_K.
TEXT ·qdotQ5_Kx8Z(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	MOVQ n+64(FP), R11
	LEAQ (R11)(R11*2), R12
	K5ZSETUP

q5kx8row:
	MOVQ   R10, SI
	MOVQ   q+32(FP), DI
	LEAQ   (DI)(R11*4), R9
	MOVQ   bs+40(FP), BX
	MOVQ   dz+48(FP), DX
	MOVQ   nb+56(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	PCALIGN $64

q5kx8loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	K4SCALES(SI, Y8, X8, Y9, X9, X10, X11)
	VSHUFI64X2      $0, Z8, Z8, Z16
	VSHUFI64X2      $0x44, Z9, Z9, Z17
	VPSHUFB         k4zshuf<>+0(SB), Z16, Z8
	VPSHUFB         k4zshuf<>+64(SB), Z16, Z9
	VPSHUFB         k4zshuf<>+128(SB), Z16, Z10
	VPSHUFB         k4zshuf<>+192(SB), Z16, Z11
	VBROADCASTI64X4 16(SI), Z30
	K4ZNIB(48, Z4)
	K4ZNIB(80, Z5)
	K4ZNIB(112, Z6)
	K4ZNIB(144, Z7)
	K5ZHIGH(0, Z4)
	K5ZHIGH(1, Z5)
	K5ZHIGH(2, Z6)
	K5ZHIGH(3, Z7)
	VPBROADCASTW    (SI), Y18
	VCVTPH2PS       Y18, Z18
	VPBROADCASTW    2(SI), Y19
	VCVTPH2PS       Y19, Z19
	K4X8PAIR((DI), (DI)(R11*1), 0, 0, Z0)
	K4X8PAIR((DI)(R11*2), (DI)(R12*1), 64, 64, Z1)
	K4X8PAIR((R9), (R9)(R11*1), 128, 128, Z2)
	K4X8PAIR((R9)(R11*2), (R9)(R12*1), 192, 192, Z3)
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $256, BX
	ADDQ $256, DX
	DECQ CX
	JNZ  q5kx8loop

	X8STORE(q5kx8row)

// ---------------------------------------------------------------- Q6_K

// Q6_K on zmm, as Q4_K: qdotQ6_KSIMD's integer lanes — lane l (l < 8) =
// Σ over the eight 32-element quarters of sc·q·a over elements 4l..4l+3
// of the quarter, minus 32·(sc_2l·bsum_2l + sc_2l+1·bsum_2l+1) — and its
// float steps, instruction for instruction. A 512-bit register holds the
// 64 values of group G = 2n + h (elements 64G..64G+63, quarters 2G and
// 2G+1, half n of the super-block): the low (h = 0) or high (h = 1)
// nibbles of the 64 bytes ql[64n..], OR-ed with bits 4-5 taken from the
// 32 bytes qh[32n..] broadcast to both halves and shifted per half by
// VPSLLVW / VPSRLVW (h = 0: left 4 | left 2; h = 1: right 0 | right 2,
// then & 0x30), so the values lie in activation order; VPMADDUBSW against
// the activations and VPDPWSSD by the sub-block scale words (one 16-element
// sub-block per 128-bit lane: words 4G..4G+3, by VPSHUFB from the scales
// broadcast per lane) add lane l (quarter 2G) and lane 8+l (quarter
// 2G+1); lanes l and 8+l are added at the end of the super-block.

// Per-word shift counts: q6zsl = [4 ×16 | 2 ×16], q6zsr = [0 ×16 | 2 ×16].
DATA q6zsl<>+0(SB)/8, $0x0004000400040004
DATA q6zsl<>+8(SB)/8, $0x0004000400040004
DATA q6zsl<>+16(SB)/8, $0x0004000400040004
DATA q6zsl<>+24(SB)/8, $0x0004000400040004
DATA q6zsl<>+32(SB)/8, $0x0002000200020002
DATA q6zsl<>+40(SB)/8, $0x0002000200020002
DATA q6zsl<>+48(SB)/8, $0x0002000200020002
DATA q6zsl<>+56(SB)/8, $0x0002000200020002
GLOBL q6zsl<>(SB), RODATA|NOPTR, $64
DATA q6zsr<>+0(SB)/8, $0
DATA q6zsr<>+8(SB)/8, $0
DATA q6zsr<>+16(SB)/8, $0
DATA q6zsr<>+24(SB)/8, $0
DATA q6zsr<>+32(SB)/8, $0x0002000200020002
DATA q6zsr<>+40(SB)/8, $0x0002000200020002
DATA q6zsr<>+48(SB)/8, $0x0002000200020002
DATA q6zsr<>+56(SB)/8, $0x0002000200020002
GLOBL q6zsr<>(SB), RODATA|NOPTR, $64

// VPSHUFB masks: 128-bit lane i takes word i (even groups) or 4+i (odd
// groups) of the eight scale words in that lane.
DATA q6zshuf<>+0(SB)/8, $0x0100010001000100
DATA q6zshuf<>+8(SB)/8, $0x0100010001000100
DATA q6zshuf<>+16(SB)/8, $0x0302030203020302
DATA q6zshuf<>+24(SB)/8, $0x0302030203020302
DATA q6zshuf<>+32(SB)/8, $0x0504050405040504
DATA q6zshuf<>+40(SB)/8, $0x0504050405040504
DATA q6zshuf<>+48(SB)/8, $0x0706070607060706
DATA q6zshuf<>+56(SB)/8, $0x0706070607060706
DATA q6zshuf<>+64(SB)/8, $0x0908090809080908
DATA q6zshuf<>+72(SB)/8, $0x0908090809080908
DATA q6zshuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6zshuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6zshuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6zshuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6zshuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6zshuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6zshuf<>(SB), RODATA|NOPTR, $128

// Q6ZSETUP: Z15 = 0x0f, Z13 = 0x30 bytes, Z28, Z29 the shift counts.
#define Q6ZSETUP \
	BCAST32($0x0f0f0f0f, Z15, X15); \
	BCAST32($0x30303030, Z13, X13); \
	VMOVDQU64 q6zsl<>(SB), Z28; \
	VMOVDQU64 q6zsr<>(SB), Z29

// Q6ZNIB sets Vlo, Vhi to the values of groups 2n, 2n+1 (ql at qloff(SI),
// qh at qhoff(SI)); Z18, Z19 clobbered.
#define Q6ZNIB(qloff, qhoff, Vlo, Vhi) \
	VMOVDQU64       qloff(SI), Z18; \
	VBROADCASTI64X4 qhoff(SI), Z19; \
	VPANDD          Z15, Z18, Vlo; \
	VPSRLW          $4, Z18, Vhi; \
	VPANDD          Z15, Vhi, Vhi; \
	VPSLLVW         Z28, Z19, Z18; \
	VPSRLVW         Z29, Z19, Z19; \
	VPTERNLOGD      $0xF8, Z13, Z18, Vlo; \
	VPTERNLOGD      $0xF8, Z13, Z19, Vhi

// Q6ZSCALES sets Z8-Z11 to the scale words of groups 0-3 from the 16
// int8 scales at 192(SI), Y (Z its zmm) to the scales as words; Z16, Z17
// clobbered.
#define Q6ZSCALES(Y, Z) \
	VPMOVSXBW  192(SI), Y; \
	VSHUFI64X2 $0x00, Z, Z, Z16; \
	VSHUFI64X2 $0x55, Z, Z, Z17; \
	VPSHUFB    q6zshuf<>+0(SB), Z16, Z8; \
	VPSHUFB    q6zshuf<>+64(SB), Z16, Z9; \
	VPSHUFB    q6zshuf<>+0(SB), Z17, Z10; \
	VPSHUFB    q6zshuf<>+64(SB), Z17, Z11

// func qdotQ6_KZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// Y0 the float accumulator, Y3 the bsum term, Z5 (groups 0, 2) and Z6
// (groups 1, 3) the int32 accumulators, Z4, Z7, Z20-Z23 group values.
TEXT ·qdotQ6_KZ(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	Q6ZSETUP

q6kzrow:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $64

q6kzloop:
	PREFETCHT1 KZPF(SI)
	PREFETCHT1 KZPF+64(SI)
	PREFETCHT1 KZPF+128(SI)
	PREFETCHT1 KZPF+192(SI)
	Q6ZSCALES(Y2, Z2)
	VPMADDWD   (BX), Y2, Y3
	VPSLLD     $5, Y3, Y3
	Q6ZNIB(0, 128, Z4, Z7)
	Q6ZNIB(64, 160, Z20, Z21)
	VPXORD     Z5, Z5, Z5
	VPXORD     Z6, Z6, Z6
	VPMADDUBSW 0(DI), Z4, Z4
	VPDPWSSD   Z8, Z4, Z5
	VPMADDUBSW 64(DI), Z7, Z7
	VPDPWSSD   Z9, Z7, Z6
	VPMADDUBSW 128(DI), Z20, Z20
	VPDPWSSD   Z10, Z20, Z5
	VPMADDUBSW 192(DI), Z21, Z21
	VPDPWSSD   Z11, Z21, Z6
	K4ZSUM
	VPSUBD     Y3, Y5, Y5

	VBROADCASTSS (DX), Y10
	VPBROADCASTW 208(SI), X11
	VCVTPH2PS    X11, Y11
	VMULPS       Y10, Y11, Y11
	VCVTDQ2PS    Y5, Y5
	VFMADD231PS  Y11, Y5, Y0

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q6kzloop

	FOLD8(Y0, X0)
	ROWEND(q6kzrow)

// func qdotQ6_Kx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
// qdotQ4_Kx8Z for Q6_K: per row and super-block the four groups (Z4-Z7)
// and their scale words (Z8-Z11) are unpacked once (Q6ZNIB, Q6ZSCALES),
// the scales as words in both halves of Z16 (for the pairs' bsum terms)
// and d in every lane of Z17 (Z30 the scale words); per pair of tokens the int32 lanes of
// qdotQ6_KZ, minus 32·(bsums · scales), then the float steps of
// qdotQ6_KSIMD (d·da, VCVTDQ2PS, VFMADD231PS) on both halves at once.

// Q6X8PAIR: tokens A and B (activation addresses without the group
// offset), their bsums at boff(BX), scales at doff(DX), into F.
#define Q6X8PAIR(A, B, boff, doff, F) \
	VPXORD        Z20, Z20, Z20; \
	VPXORD        Z21, Z21, Z21; \
	VPMADDUBSW    A, Z4, Z22; \
	VPMADDUBSW    B, Z4, Z23; \
	VPDPWSSD      Z8, Z22, Z20; \
	VPDPWSSD      Z8, Z23, Z21; \
	VPMADDUBSW    64 A, Z5, Z24; \
	VPMADDUBSW    64 B, Z5, Z25; \
	VPDPWSSD      Z9, Z24, Z20; \
	VPDPWSSD      Z9, Z25, Z21; \
	VPMADDUBSW    128 A, Z6, Z22; \
	VPMADDUBSW    128 B, Z6, Z23; \
	VPDPWSSD      Z10, Z22, Z20; \
	VPDPWSSD      Z10, Z23, Z21; \
	VPMADDUBSW    192 A, Z7, Z24; \
	VPMADDUBSW    192 B, Z7, Z25; \
	VPDPWSSD      Z11, Z24, Z20; \
	VPDPWSSD      Z11, Z25, Z21; \
	VSHUFI64X2    $0x44, Z21, Z20, Z26; \
	VSHUFI64X2    $0xEE, Z21, Z20, Z27; \
	VPADDD        Z27, Z26, Z26; \
	VPMADDWD      boff(BX), Z16, Z27; \
	VPSLLD        $5, Z27, Z27; \
	VPSUBD        Z27, Z26, Z26; \
	VMULPS        doff(DX), Z17, Z27; \
	VCVTDQ2PS     Z26, Z26; \
	VFMADD231PS   Z27, Z26, F

TEXT ·qdotQ6_Kx8Z(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	MOVQ n+64(FP), R11
	LEAQ (R11)(R11*2), R12
	Q6ZSETUP

q6kx8row:
	MOVQ   R10, SI
	MOVQ   q+32(FP), DI
	LEAQ   (DI)(R11*4), R9
	MOVQ   bs+40(FP), BX
	MOVQ   dz+48(FP), DX
	MOVQ   nb+56(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	PCALIGN $64

q6kx8loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	Q6ZSCALES(Y30, Z30)
	VSHUFI64X2   $0x44, Z30, Z30, Z16
	VPBROADCASTW 208(SI), Y17
	VCVTPH2PS    Y17, Z17
	Q6ZNIB(0, 128, Z4, Z5)
	Q6ZNIB(64, 160, Z6, Z7)
	Q6X8PAIR((DI), (DI)(R11*1), 0, 0, Z0)
	Q6X8PAIR((DI)(R11*2), (DI)(R12*1), 64, 64, Z1)
	Q6X8PAIR((R9), (R9)(R11*1), 128, 128, Z2)
	Q6X8PAIR((R9)(R11*2), (R9)(R12*1), 192, 192, Z3)
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $256, BX
	ADDQ $256, DX
	DECQ CX
	JNZ  q6kx8loop

	X8STORE(q6kx8row)
