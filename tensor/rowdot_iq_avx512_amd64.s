// AVX-512 row dot of IQ4_XS: qdotIQ4_XSSIMD (rowdot_iq_amd64.s) with the
// super-block's integer lanes on 512-bit registers, selected by hasKZ
// (AVX-512F, BW, VNNI). The lanes are exact int32 sums and the float step
// (ACCLANES: VCVTDQ2PS, VMULPS by d·da, VADDPS) and the fold are the ymm
// kernel's instructions, so the results are its bits — and the Go
// reference's (rowdot_iq_ref.go), which the ymm kernel reproduces
// (TestKQuantZBitwise, TestIQRowDotsBitwise).
//
// A zmm holds the 64 values of sub-blocks 2g and 2g+1 in activation
// order: the 32 code bytes at 8+32g, 128-bit lanes [bytes 0-15, bytes
// 0-15, bytes 16-31, bytes 16-31] (VSHUFI64X2), lanes 1 and 3 shifted
// right by 4 (VPSRLW under K4), masked to 0x0f. VPSHUFB looks the codes up
// in a table of |level| (every level ≠ 0; codes 0-7 are the negative
// ones), the activations are negated where the code is < 8 (VPTESTNMB of
// 0x08, masked VPSUBB from zero: VPSIGNB's result, which AVX-512 lacks),
// VPMADDUBSW (|pair| ≤ 2·127·127) and VPDPWSSD by the sub-block scale
// words (ls−32, [ls_2g ×16 | ls_2g+1 ×16]) add dword j = elements
// 4j..4j+3 of the group: canonical lane j of sub-block 2g for j < 8, lane
// j−8 of sub-block 2g+1 above; lanes j and j+8 are added at the end.

#include "textflag.h"
#include "rowdot_amd64.h"

// |kIQ4NL| by code, in every 128-bit lane.
DATA iq4zabs<>+0(SB)/8, $0x0a1623314153687f
DATA iq4zabs<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4zabs<>(SB), RODATA|NOPTR, $16

// The scale words: VPSHUFB indices into the qword [h0 h1 l0 l1 l2 l3 . .]
// (bytes 2-9 of the super-block): word ib = scales_l byte ib/2 (xsli) and
// scales_h (xshi); then shifted right by 4·(ib%2) (xslc) and 2·ib (xshc).
DATA xsli<>+0(SB)/8, $0x8003800380028002
DATA xsli<>+8(SB)/8, $0x8005800580048004
GLOBL xsli<>(SB), RODATA|NOPTR, $16
DATA xshi<>+0(SB)/8, $0x0100010001000100
DATA xshi<>+8(SB)/8, $0x0100010001000100
GLOBL xshi<>(SB), RODATA|NOPTR, $16
DATA xslc<>+0(SB)/8, $0x0004000000040000
DATA xslc<>+8(SB)/8, $0x0004000000040000
GLOBL xslc<>(SB), RODATA|NOPTR, $16
DATA xshc<>+0(SB)/8, $0x0006000400020000
DATA xshc<>+8(SB)/8, $0x000e000c000a0008
GLOBL xshc<>(SB), RODATA|NOPTR, $16

// VPSHUFB masks, one 64-byte entry per group g: scale word 2g in the low
// 256 bits, word 2g+1 in the high 256 bits.
DATA xszshuf<>+0(SB)/8, $0x0100010001000100
DATA xszshuf<>+8(SB)/8, $0x0100010001000100
DATA xszshuf<>+16(SB)/8, $0x0100010001000100
DATA xszshuf<>+24(SB)/8, $0x0100010001000100
DATA xszshuf<>+32(SB)/8, $0x0302030203020302
DATA xszshuf<>+40(SB)/8, $0x0302030203020302
DATA xszshuf<>+48(SB)/8, $0x0302030203020302
DATA xszshuf<>+56(SB)/8, $0x0302030203020302
DATA xszshuf<>+64(SB)/8, $0x0504050405040504
DATA xszshuf<>+72(SB)/8, $0x0504050405040504
DATA xszshuf<>+80(SB)/8, $0x0504050405040504
DATA xszshuf<>+88(SB)/8, $0x0504050405040504
DATA xszshuf<>+96(SB)/8, $0x0706070607060706
DATA xszshuf<>+104(SB)/8, $0x0706070607060706
DATA xszshuf<>+112(SB)/8, $0x0706070607060706
DATA xszshuf<>+120(SB)/8, $0x0706070607060706
DATA xszshuf<>+128(SB)/8, $0x0908090809080908
DATA xszshuf<>+136(SB)/8, $0x0908090809080908
DATA xszshuf<>+144(SB)/8, $0x0908090809080908
DATA xszshuf<>+152(SB)/8, $0x0908090809080908
DATA xszshuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA xszshuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA xszshuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA xszshuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA xszshuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA xszshuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA xszshuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA xszshuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA xszshuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA xszshuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA xszshuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA xszshuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL xszshuf<>(SB), RODATA|NOPTR, $256

// XSZSCALES sets Z10 to the eight scale words ls−32 in every 128-bit lane
// (Z8, Z9 clobbered): Z16-Z19 the index and count tables, Z20 = 0x000f
// words, Z21 = 0x0003 words, Z22 = 32 (words).
#define XSZSCALES \
	VPBROADCASTQ 2(SI), Z9; \
	VPSHUFB      Z16, Z9, Z8; \
	VPSHUFB      Z17, Z9, Z9; \
	VPSRLVW      Z18, Z8, Z8; \
	VPSRLVW      Z19, Z9, Z9; \
	VPANDD       Z20, Z8, Z8; \
	VPANDD       Z21, Z9, Z9; \
	VPSLLW       $4, Z9, Z9; \
	VPORD        Z9, Z8, Z10; \
	VPSUBW       Z22, Z10, Z10

// XSZGROUP adds group g (sub-blocks 2g, 2g+1) into the int32 accumulator
// ACC: codes at 8+32g(SI), activations at 64g(DI). V, A, S clobbered;
// Z15 = 0x0f bytes, Z14 = 0x08 bytes, Z13 = |levels|, Z12 = 0, K4 = word
// lanes 1 and 3.
#define XSZGROUP(g, V, A, S, ACC) \
	VMOVDQU64   8+32*g(SI), Y30; \
	VSHUFI64X2  $0x50, Z30, Z30, V; \
	VPSRLW      $4, V, K4, V; \
	VPANDD      Z15, V, V; \
	VPTESTNMB   Z14, V, K3; \
	VPSHUFB     V, Z13, V; \
	VMOVDQU64   64*g(DI), A; \
	VPSUBB      A, Z12, K3, A; \
	VPMADDUBSW  A, V, V; \
	VPSHUFB     xszshuf<>+64*g(SB), Z10, S; \
	VPDPWSSD    S, V, ACC

// func qdotIQ4_XSZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// Y0 the float accumulator (as qdotIQ4_XSSIMD), Z5 (groups 0, 2) and Z6
// (groups 1, 3) the int32 accumulators, Y2 their lanes, Y4 d·da.
TEXT ·qdotIQ4_XSZ(SB), NOSPLIT, $0-64
	MOVQ             dst+0(FP), R8
	MOVQ             w+16(FP), R10
	BCAST32($0x0f0f0f0f, Z15, X15)
	BCAST32($0x08080808, Z14, X14)
	VBROADCASTI32X4  iq4zabs<>(SB), Z13
	VPXORD           Z12, Z12, Z12
	VBROADCASTI32X4  xsli<>(SB), Z16
	VBROADCASTI32X4  xshi<>(SB), Z17
	VBROADCASTI32X4  xslc<>(SB), Z18
	VBROADCASTI32X4  xshc<>(SB), Z19
	BCAST32($0x000f000f, Z20, X20)
	BCAST32($0x00030003, Z21, X21)
	BCAST32($0x00200020, Z22, X22)
	MOVL             $0xff00ff00, AX
	KMOVD            AX, K4

xszrow:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $64

xszloop:
	PREFETCHT1 16384(SI) // as qdotQ4_KZ (KZPF, rowdot_kquant_avx512_amd64.s)
	PREFETCHT1 16448(SI)
	PREFETCHT1 16512(SI)
	XSZSCALES
	VPXORD     Z5, Z5, Z5
	VPXORD     Z6, Z6, Z6
	XSZGROUP(0, Z24, Z25, Z26, Z5)
	XSZGROUP(1, Z27, Z28, Z29, Z6)
	XSZGROUP(2, Z24, Z25, Z26, Z5)
	XSZGROUP(3, Z27, Z28, Z29, Z6)
	VPADDD        Z6, Z5, Z5
	VEXTRACTI64X4 $1, Z5, Y6
	VPADDD        Y6, Y5, Y2
	VPBROADCASTW  0(SI), X4
	VCVTPH2PS     X4, Y4
	VBROADCASTSS  (DX), Y5
	VMULPS        Y5, Y4, Y4
	VCVTDQ2PS     Y2, Y2
	VMULPS        Y4, Y2, Y2
	VADDPS        Y2, Y0, Y0
	ADDQ          $136, SI
	ADDQ          $256, DI
	ADDQ          $4, DX
	DECQ          CX
	JNZ           xszloop

	FOLD8(Y0, X0)
	ROWEND(xszrow)

// ---------------------------------------------------------------- eight tokens

// func qdotIQ4_XSx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
// IQ4_XS weights against eight consecutive tokens (prefill; see
// dotQRowsKX8, whose arguments and packed scales dz it shares — bs is
// unused): per row and super-block the four groups' |levels| (Z4-Z7),
// sign masks (K1, K2, K3, K5) and scale words (Z8-Z11) are unpacked once,
// and the tokens meet them two at a time: per token and group the
// activations are loaded, negated under the group's mask, VPMADDUBSW and
// VPDPWSSD into the token's int32 accumulator — qdotIQ4_XSZ's lanes —
// and a pair's two 8-lane sums share one zmm (lanes 0-7, 8-15) for the
// float step (VCVTDQ2PS, VMULPS by d·da, VADDPS into the pair's float
// accumulator): per (row, token) the row dot's bits (TestKQuantZx8). The
// row ends with X8STORE's fold and stores.

// XSZNIB sets V to group g's |levels| and K to its negative codes (Z30
// clobbered).
#define XSZNIB(g, V, K) \
	VMOVDQU64   8+32*g(SI), Y30; \
	VSHUFI64X2  $0x50, Z30, Z30, V; \
	VPSRLW      $4, V, K4, V; \
	VPANDD      Z15, V, V; \
	VPTESTNMB   Z14, V, K; \
	VPSHUFB     V, Z13, V

// XSX8TOK adds group values V (mask K, scale words S) times the token's
// activations at off A into ACC (Z26, Z27 clobbered).
#define XSX8TOK(off, A, V, K, S, ACC) \
	VMOVDQU64  off A, Z26; \
	VPSUBB     Z26, Z12, K, Z26; \
	VPMADDUBSW Z26, V, Z27; \
	VPDPWSSD   S, Z27, ACC

// XSX8PAIR runs the super-block for tokens A and B (activation addresses)
// with their scales at doff(DX) into the float accumulator F.
#define XSX8PAIR(A, B, doff, F) \
	VPXORD        Z24, Z24, Z24; \
	VPXORD        Z25, Z25, Z25; \
	XSX8TOK(0, A, Z4, K1, Z8, Z24); \
	XSX8TOK(0, B, Z4, K1, Z8, Z25); \
	XSX8TOK(64, A, Z5, K2, Z9, Z24); \
	XSX8TOK(64, B, Z5, K2, Z9, Z25); \
	XSX8TOK(128, A, Z6, K3, Z10, Z24); \
	XSX8TOK(128, B, Z6, K3, Z10, Z25); \
	XSX8TOK(192, A, Z7, K5, Z11, Z24); \
	XSX8TOK(192, B, Z7, K5, Z11, Z25); \
	VSHUFI64X2    $0x44, Z25, Z24, Z30; \
	VSHUFI64X2    $0xEE, Z25, Z24, Z31; \
	VPADDD        Z31, Z30, Z30; \
	VMULPS        doff(DX), Z23, Z31; \
	VCVTDQ2PS     Z30, Z30; \
	VMULPS        Z31, Z30, Z30; \
	VADDPS        Z30, F, F

TEXT ·qdotIQ4_XSx8Z(SB), NOSPLIT, $0-80
	MOVQ             dst+0(FP), R8
	MOVQ             w+16(FP), R10
	MOVQ             n+64(FP), R11
	LEAQ             (R11)(R11*2), R12
	BCAST32($0x0f0f0f0f, Z15, X15)
	BCAST32($0x08080808, Z14, X14)
	VBROADCASTI32X4  iq4zabs<>(SB), Z13
	VPXORD           Z12, Z12, Z12
	VBROADCASTI32X4  xsli<>(SB), Z16
	VBROADCASTI32X4  xshi<>(SB), Z17
	VBROADCASTI32X4  xslc<>(SB), Z18
	VBROADCASTI32X4  xshc<>(SB), Z19
	BCAST32($0x000f000f, Z20, X20)
	BCAST32($0x00030003, Z21, X21)
	BCAST32($0x00200020, Z22, X22)
	MOVL             $0xff00ff00, AX
	KMOVD            AX, K4

xsx8row:
	MOVQ   R10, SI
	MOVQ   q+32(FP), DI
	LEAQ   (DI)(R11*4), R9
	MOVQ   dz+48(FP), DX
	MOVQ   nb+56(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	PCALIGN $64

xsx8loop:
	PREFETCHT0   2048(SI)
	PREFETCHT0   2112(SI)
	XSZSCALES
	VPSHUFB      xszshuf<>+0(SB), Z10, Z8
	VPSHUFB      xszshuf<>+64(SB), Z10, Z9
	VPSHUFB      xszshuf<>+192(SB), Z10, Z11
	VPSHUFB      xszshuf<>+128(SB), Z10, Z10
	XSZNIB(0, Z4, K1)
	XSZNIB(1, Z5, K2)
	XSZNIB(2, Z6, K3)
	XSZNIB(3, Z7, K5)
	VPBROADCASTW 0(SI), Y23
	VCVTPH2PS    Y23, Z23
	XSX8PAIR((DI), (DI)(R11*1), 0, Z0)
	XSX8PAIR((DI)(R11*2), (DI)(R12*1), 64, Z1)
	XSX8PAIR((R9), (R9)(R11*1), 128, Z2)
	XSX8PAIR((R9)(R11*2), (R9)(R12*1), 192, Z3)
	ADDQ $136, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $256, DX
	DECQ CX
	JNZ  xsx8loop

	X8STORE(xsx8row)

// ---------------------------------------------------------------- IQ4_NL, MXFP4

// The 32-element table formats on zmm, selected by hasKZ as qdotIQ4_XSZ:
// qdotIQ4_NLZ and qdotMXFP4Z are qdotIQ4_NLSIMD and qdotMXFP4SIMD
// (rowdot_iq_amd64.s) with two blocks per 512-bit register, and
// qdotIQ4_NLx8Z, qdotMXFP4x8Z run eight tokens per unpacked block. Every
// (row, token) keeps the ymm kernels' arithmetic: the int32 lane j of a
// block is the exact sum of its elements 4j..4j+3 (VPDPBUSD adds four
// byte products without saturating), then VCVTDQ2PS, VMULPS by the block's
// dw·da, VADDPS into the token's 8-lane accumulator in block order (never
// two blocks at once: the high half of a register waits for the low), and
// FOLD8 — so the results are the ymm kernels' bits and the Go reference's
// (TestIQRowDotsBitwise, TestIQZx8, TestMatMulBatchInvariant).

// |level| by code, in every 128-bit lane. IQ4_NL's negative levels are
// codes 0-7 (bit 3 clear), MXFP4's codes 8-15 (bit 3 set; code 8 is −0).
DATA mxzabs<>+0(SB)/8, $0x0c08060403020100
DATA mxzabs<>+8(SB)/8, $0x0c08060403020100
GLOBL mxzabs<>(SB), RODATA|NOPTR, $16

// The signed levels by code (the eight-token kernels multiply the tokens'
// biased activations by them), as iq4nlLevels, fp4Levels.
DATA iq4zlv<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4zlv<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4zlv<>(SB), RODATA|NOPTR, $16
DATA mxzlv<>+0(SB)/8, $0x0c08060403020100
DATA mxzlv<>+8(SB)/8, $0xf4f8fafcfdfeff00
GLOBL mxzlv<>(SB), RODATA|NOPTR, $16

// NZPAIR adds two blocks of bb bytes at off(SI) and off+bb(SI) (codes at
// +co) into Y0: activations at aoff(DI), their scales at daoff(DX). The
// 64 |levels| go in element order into Z2 (block off in the low 256 bits,
// as qdotIQ4_XSZ lays out a group), the activations are negated under
// the sign mask (TEST: VPTESTNMB for IQ4_NL, VPTESTMB for MXFP4), one
// VPDPBUSD from zero gives both blocks' eight lanes, scaled by
// [s_off ×8 | s_off+bb ×8] from DW(off, bb) (Z4) and added low half first.
// Z15 = 0x0f bytes, Z14 = 0x08 bytes, Z13 = |levels|, Z12 = 0, K4 = word
// lanes 1 and 3; Z1-Z6 clobbered.
#define NZPAIR(off, bb, co, aoff, daoff, TEST, DW) \
	VMOVDQU       off+co(SI), X2; \
	VINSERTI128   $1, off+bb+co(SI), Y2, Y2; \
	VSHUFI64X2    $0x50, Z2, Z2, Z2; \
	VPSRLW        $4, Z2, K4, Z2; \
	VPANDD        Z15, Z2, Z2; \
	TEST          Z14, Z2, K3; \
	VPSHUFB       Z2, Z13, Z2; \
	VMOVDQU64     aoff(DI), Z3; \
	VPSUBB        Z3, Z12, K3, Z3; \
	VPXORD        Z1, Z1, Z1; \
	VPDPBUSD      Z3, Z2, Z1; \
	DW(off, bb); \
	VBROADCASTSS  daoff(DX), Y5; \
	VBROADCASTSS  daoff+4(DX), Y6; \
	VINSERTF64X4  $1, Y6, Z5, Z5; \
	VMULPS        Z5, Z4, Z4; \
	VCVTDQ2PS     Z1, Z1; \
	VMULPS        Z4, Z1, Z1; \
	VADDPS        Y1, Y0, Y0; \
	VEXTRACTF64X4 $1, Z1, Y1; \
	VADDPS        Y1, Y0, Y0

// NZONE adds one block (the row's odd last) the same way on 256 bits.
#define NZONE(co, TEST, DW1) \
	VBROADCASTI128 co(SI), Y2; \
	VPSRLW         $4, Y2, K4, Y2; \
	VPANDD         Y15, Y2, Y2; \
	TEST           Y14, Y2, K3; \
	VPSHUFB        Y2, Y13, Y2; \
	VMOVDQU        (DI), Y3; \
	VPSUBB         Y3, Y12, K3, Y3; \
	VPXORD         Y1, Y1, Y1; \
	VPDPBUSD       Y3, Y2, Y1; \
	DW1; \
	VBROADCASTSS   (DX), Y5; \
	VMULPS         Y5, Y4, Y4; \
	VCVTDQ2PS      Y1, Y1; \
	VMULPS         Y4, Y1, Y1; \
	VADDPS         Y1, Y0, Y0

// The weight scales dw of two blocks into Z4, [dw_off ×8 | dw_off+bb ×8]:
// IQ4_NL's fp16 d, MXFP4's 2^(e−128) from the table at BX (AX clobbered);
// and of one block at 0(SI) into Y4.
#define NLDW(off, bb) \
	VPBROADCASTW off(SI), X4; \
	VPBROADCASTW off+bb(SI), X5; \
	VINSERTI128  $1, X5, Y4, Y4; \
	VCVTPH2PS    Y4, Z4

#define MXDW(off, bb) \
	MOVBLZX      off(SI), AX; \
	VBROADCASTSS (BX)(AX*4), Y4; \
	MOVBLZX      off+bb(SI), AX; \
	VBROADCASTSS (BX)(AX*4), Y5; \
	VINSERTF64X4 $1, Y5, Z4, Z4

#define NLDW1 \
	VPBROADCASTW 0(SI), X4; \
	VCVTPH2PS    X4, Y4

#define MXDW1 \
	MOVBLZX      0(SI), AX; \
	VBROADCASTSS (BX)(AX*4), Y4

// NZSETUP loads the constants of the single-token kernels, table tab.
#define NZSETUP(tab) \
	MOVQ            dst+0(FP), R8; \
	MOVQ            w+16(FP), R10; \
	BCAST32($0x0f0f0f0f, Z15, X15); \
	BCAST32($0x08080808, Z14, X14); \
	VBROADCASTI32X4 tab(SB), Z13; \
	VPXORD          Z12, Z12, Z12; \
	MOVL            $0xff00ff00, AX; \
	KMOVD           AX, K4

// func qdotIQ4_NLZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotIQ4_NLZ(SB), NOSPLIT, $0-64
	NZSETUP(iq4zabs<>)

nlzrow:
	ROWSTART
	VXORPS Y0, Y0, Y0
	SUBQ   $4, CX
	JL     nlztail

	PCALIGN $64

nlzloop4:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	NZPAIR(0, 18, 2, 0, 0, VPTESTNMB, NLDW)
	NZPAIR(36, 18, 2, 64, 8, VPTESTNMB, NLDW)
	ADDQ $72, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  nlzloop4

nlztail: // CX + 4 blocks left, 0 to 3
	ADDQ $4, CX
	CMPQ CX, $2
	JL   nlzone
	NZPAIR(0, 18, 2, 0, 0, VPTESTNMB, NLDW)
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX

nlzone:
	TESTQ CX, CX
	JZ    nlzsum
	NZONE(2, VPTESTNMB, NLDW1)

nlzsum:
	FOLD8(Y0, X0)
	ROWEND(nlzrow)

// func qdotMXFP4Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// aux: e8m0HalfTab.
TEXT ·qdotMXFP4Z(SB), NOSPLIT, $0-64
	NZSETUP(mxzabs<>)

mxzrow:
	ROWSTART
	VXORPS Y0, Y0, Y0
	SUBQ   $4, CX
	JL     mxztail

	PCALIGN $64

mxzloop4:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	NZPAIR(0, 17, 1, 0, 0, VPTESTMB, MXDW)
	NZPAIR(34, 17, 1, 64, 8, VPTESTMB, MXDW)
	ADDQ $68, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  mxzloop4

mxztail: // CX + 4 blocks left, 0 to 3
	ADDQ $4, CX
	CMPQ CX, $2
	JL   mxzone
	NZPAIR(0, 17, 1, 0, 0, VPTESTMB, MXDW)
	ADDQ $34, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX

mxzone:
	TESTQ CX, CX
	JZ    mxzsum
	NZONE(1, VPTESTMB, MXDW1)

mxzsum:
	FOLD8(Y0, X0)
	ROWEND(mxzrow)

// ---------------------------------------------------------------- IQ4_NL, MXFP4 eight tokens

// func qdotIQ4_NLx8Z(dst *float32, rows int, w *byte, stride uintptr, p *byte, dx *float32, aux unsafe.Pointer, nb int, ldd uintptr)
// IQ4_NL weights against eight consecutive tokens, two per 512-bit
// register as qdotQ8_0x8Z (whose packed activations p and scales dx,
// qx8Pack, it shares; see dotQRowsIQX8): per row and block the 32 signed
// levels are unpacked once into both halves of Z4, −128·Σ of each lane's
// four levels (Z12) is the bias correction, and each token pair takes one
// VPDPBUSD of its biased activations from Z12 — the exact int32 lanes of
// the row dot — then VCVTDQ2PS, VMULPS by its dw·da (VPERMPS of the
// block's eight products) and VADDPS into the pair's accumulator. dst
// receives token t, row i at dst + t·ldd + 4i (ldd in bytes).
// Registers: Z0-Z3 the pairs' accumulators; Z4 levels; Z6 the products
// dw·da; Z11 the signed level table; Z12 the correction; Z13 0x80 bytes;
// Z14 0; Z15 0x0f bytes; Z16-Z19 the pairs' VPERMPS indices; K4 word lanes
// 1 and 3; Z20-Z31 temporaries.

// NX8PAIR: pair k's activations at aoff(DI), index I, into F.
#define NX8PAIR(aoff, I, F, A, T, S) \
	VMOVDQU64 aoff(DI), A; \
	VMOVDQA64 Z12, T; \
	VPDPBUSD  Z4, A, T; \
	VCVTDQ2PS T, T; \
	VPERMPS   Z6, I, S; \
	VMULPS    S, T, T; \
	VADDPS    T, F, F

// NX8BLK runs the block at 0(SI) (codes at co(SI), weight scale by
// DW8 into Z6) for the eight tokens.
#define NX8BLK(co, DW8) \
	VBROADCASTI32X4 co(SI), Z4; \
	VPSRLW          $4, Z4, K4, Z4; \
	VPANDD          Z15, Z4, Z4; \
	VPSHUFB         Z4, Z11, Z4; \
	VPXORD          Z12, Z12, Z12; \
	VPDPBUSD        Z4, Z13, Z12; \
	VPSUBD          Z12, Z14, Z12; \
	DW8; \
	VBROADCASTF64X4 (CX), Z5; \
	VMULPS          Z5, Z6, Z6; \
	NX8PAIR(0, Z16, Z0, Z20, Z24, Z28); \
	NX8PAIR(64, Z17, Z1, Z21, Z25, Z29); \
	NX8PAIR(128, Z18, Z2, Z22, Z26, Z30); \
	NX8PAIR(192, Z19, Z3, Z23, Z27, Z31)

#define NLDW8 \
	VPBROADCASTW 0(SI), Y6; \
	VCVTPH2PS    Y6, Z6

#define MXDW8 \
	MOVBLZX      0(SI), AX; \
	VBROADCASTSS (BX)(AX*4), Z6

DATA nx8idx<>+0(SB)/8, $0x0000000000000000
DATA nx8idx<>+8(SB)/8, $0x0000000000000000
DATA nx8idx<>+16(SB)/8, $0x0000000000000000
DATA nx8idx<>+24(SB)/8, $0x0000000000000000
DATA nx8idx<>+32(SB)/8, $0x0000000100000001
DATA nx8idx<>+40(SB)/8, $0x0000000100000001
DATA nx8idx<>+48(SB)/8, $0x0000000100000001
DATA nx8idx<>+56(SB)/8, $0x0000000100000001
GLOBL nx8idx<>(SB), RODATA|NOPTR, $64

// NX8SETUP loads the constants, signed level table tab.
#define NX8SETUP(tab) \
	MOVQ            dst+0(FP), R8; \
	MOVQ            w+16(FP), R10; \
	MOVQ            ldd+64(FP), R11; \
	LEAQ            (R11)(R11*2), R12; \
	LEAQ            (R8)(R11*4), R9; \
	MOVQ            aux+48(FP), BX; \
	BCAST32($0x80808080, Z13, X13); \
	BCAST32($0x0f0f0f0f, Z15, X15); \
	VPXORD          Z14, Z14, Z14; \
	VBROADCASTI32X4 tab(SB), Z11; \
	MOVL            $0xff00ff00, AX; \
	KMOVD           AX, K4; \
	VMOVDQU64       nx8idx<>(SB), Z16; \
	BCAST32($2, Z10, X10); \
	VPADDD          Z10, Z16, Z17; \
	VPADDD          Z10, Z17, Z18; \
	VPADDD          Z10, Z18, Z19

// NX8ROW starts a row: walkers at its start, accumulators cleared.
#define NX8ROW \
	MOVQ   R10, SI; \
	MOVQ   p+32(FP), DI; \
	MOVQ   dx+40(FP), CX; \
	MOVQ   nb+56(FP), R13; \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3

// NX8END folds and stores the row's eight results and moves to the next
// row, jumping to label if any are left.
#define NX8END(label) \
	Q8ZFOLD(Z0, Y0, X0, Z1, Y1); \
	Q8ZFOLD(Z2, Y2, X2, Z3, Y3); \
	VMOVSS     X0, (R8); \
	VEXTRACTPS $1, X0, (R8)(R11*1); \
	VEXTRACTPS $2, X0, (R8)(R11*2); \
	VEXTRACTPS $3, X0, (R8)(R12*1); \
	VMOVSS     X2, (R9); \
	VEXTRACTPS $1, X2, (R9)(R11*1); \
	VEXTRACTPS $2, X2, (R9)(R11*2); \
	VEXTRACTPS $3, X2, (R9)(R12*1); \
	ADDQ       $4, R8; \
	ADDQ       $4, R9; \
	ADDQ       stride+24(FP), R10; \
	DECQ       rows+8(FP); \
	JNZ        label; \
	VZEROUPPER; \
	RET

TEXT ·qdotIQ4_NLx8Z(SB), NOSPLIT, $0-72
	NX8SETUP(iq4zlv<>)

nlx8row:
	NX8ROW

	PCALIGN $64

nlx8loop:
	PREFETCHT0 2048(SI)
	NX8BLK(2, NLDW8)
	ADDQ $18, SI
	ADDQ $256, DI
	ADDQ $32, CX
	DECQ R13
	JNZ  nlx8loop

	NX8END(nlx8row)

// func qdotMXFP4x8Z(dst *float32, rows int, w *byte, stride uintptr, p *byte, dx *float32, aux unsafe.Pointer, nb int, ldd uintptr)
// qdotIQ4_NLx8Z for MXFP4 blocks; aux: e8m0HalfTab.
TEXT ·qdotMXFP4x8Z(SB), NOSPLIT, $0-72
	NX8SETUP(mxzlv<>)

mxx8row:
	NX8ROW

	PCALIGN $64

mxx8loop:
	PREFETCHT0 2048(SI)
	NX8BLK(1, MXDW8)
	ADDQ $17, SI
	ADDQ $256, DI
	ADDQ $32, CX
	DECQ R13
	JNZ  mxx8loop

	NX8END(mxx8row)

// ---------------------------------------------------------------- IQ3_S

// qdotIQ3_SZ is qdotIQ3_SSIMD (rowdot_iq_amd64.s) with two sub-blocks per
// 512-bit register (sub-block 2k in the low 256 bits, 2k+1 in the high, as
// qdotIQ4_XSZ lays out a group): one VPGATHERDD fetches the 16 groups'
// grid entries (the 64 magnitudes in element order), the 64 sign bits are
// one mask register (KMOVQ: bit e of the sign bytes is element e) under
// which the activations are negated, VPMADDUBSW pairs them and VPDPWSSD
// adds the pairs times the sub-blocks' odd scales into the int32 lanes.
// Lanes j and j+8 are added at the super-block's end: the exact lane sums
// of the ymm kernel, then its float step and fold — its bits, and the
// reference's (TestIQRowDotsBitwise). qdotIQ3_Sx8Z unpacks a super-block
// once for eight tokens as qdotIQ4_XSx8Z does (its XSX8PAIR), per (row,
// token) the same bits (TestKQuantZx8).

// Dword lane indices 0..15 (the qh shift counts).
DATA s3zlane<>+0(SB)/8, $0x0000000100000000
DATA s3zlane<>+8(SB)/8, $0x0000000300000002
DATA s3zlane<>+16(SB)/8, $0x0000000500000004
DATA s3zlane<>+24(SB)/8, $0x0000000700000006
DATA s3zlane<>+32(SB)/8, $0x0000000900000008
DATA s3zlane<>+40(SB)/8, $0x0000000b0000000a
DATA s3zlane<>+48(SB)/8, $0x0000000d0000000c
DATA s3zlane<>+56(SB)/8, $0x0000000f0000000e
GLOBL s3zlane<>(SB), RODATA|NOPTR, $64

// S3ZGRID gathers the grid entries of sub-blocks 2k, 2k+1 of the
// super-block at SI into V: index qs byte | bit g of qh<<8, the qh word
// (qh[2k] | qh[2k+1]<<8) shifted left by 8 and right by the lane number
// (Z15) so that bit 8 is lane g's bit. Z14 = 0x100 (dwords), BX = grid;
// I, T, AX and the gather mask KG clobbered.
#define S3ZGRID(k, V, I, T, KG) \
	VPMOVZXBD    (2+16*k)(SI), I; \
	MOVWLZX      (66+2*k)(SI), AX; \
	SHLL         $8, AX; \
	VPBROADCASTD AX, T; \
	VPSRLVD      Z15, T, T; \
	VPANDD       Z14, T, T; \
	VPORD        T, I, I; \
	KXNORW       KG, KG, KG; \
	VPGATHERDD   (BX)(I*4), KG, V

// S3ZSCALE sets S to the scale words of sub-blocks 2k, 2k+1 (1+2s, the
// nibbles of scales byte k) in its low and high 256 bits; AX, R13, Y (S's
// upper half as a ymm) clobbered.
#define S3ZSCALE(k, S, YS, Y) \
	MOVBLZX      (106+k)(SI), AX; \
	MOVL         AX, R13; \
	ANDL         $15, AX; \
	SHRL         $4, R13; \
	LEAL         1(AX)(AX*1), AX; \
	LEAL         1(R13)(R13*1), R13; \
	VPBROADCASTW AX, YS; \
	VPBROADCASTW R13, Y; \
	VINSERTI64X4 $1, Y, S, S

// S3ZPAIR adds sub-blocks 2k, 2k+1 (activations at 64k(DI)) into the
// int32 lanes Z1; Z12 = 0.
#define S3ZPAIR(k) \
	S3ZGRID(k, Z5, Z2, Z3, K1); \
	KMOVQ      (74+8*k)(SI), K2; \
	VMOVDQU64  (64*k)(DI), Z3; \
	VPSUBB     Z3, Z12, K2, Z3; \
	VPMADDUBSW Z3, Z5, Z5; \
	S3ZSCALE(k, Z4, Y4, Y6); \
	VPDPWSSD   Z4, Z5, Z1

// func qdotIQ3_SZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// aux: &iq3sGrid[0].
TEXT ·qdotIQ3_SZ(SB), NOSPLIT, $0-64
	MOVQ      dst+0(FP), R8
	MOVQ      w+16(FP), R10
	VMOVDQU64 s3zlane<>(SB), Z15
	BCAST32($0x00000100, Z14, X14)
	VPXORD    Z12, Z12, Z12

s3zrow:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $64

s3zloop:
	PREFETCHT0    2048(SI)
	PREFETCHT0    2112(SI)
	VPXORD        Z1, Z1, Z1
	S3ZPAIR(0)
	S3ZPAIR(1)
	S3ZPAIR(2)
	S3ZPAIR(3)
	VEXTRACTI64X4 $1, Z1, Y2
	VPADDD        Y2, Y1, Y2
	VPBROADCASTW  0(SI), X4
	VCVTPH2PS     X4, Y4
	VBROADCASTSS  (DX), Y5
	VMULPS        Y5, Y4, Y4
	VCVTDQ2PS     Y2, Y2
	VMULPS        Y4, Y2, Y2
	VADDPS        Y2, Y0, Y0
	ADDQ          $110, SI
	ADDQ          $256, DI
	ADDQ          $4, DX
	DECQ          CX
	JNZ           s3zloop

	FOLD8(Y0, X0)
	ROWEND(s3zrow)

// func qdotIQ3_Sx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
// IQ3_S weights against eight consecutive tokens, as qdotIQ4_XSx8Z (see
// dotQRowsKX8; bs unused): per row and super-block the four pairs' grid
// magnitudes (Z4-Z7), sign masks (K1, K2, K3, K5) and scale words
// (Z8-Z11) are unpacked once, then XSX8PAIR runs each token pair.
TEXT ·qdotIQ3_Sx8Z(SB), NOSPLIT, $0-80
	MOVQ      dst+0(FP), R8
	MOVQ      w+16(FP), R10
	MOVQ      n+64(FP), R11
	LEAQ      (R11)(R11*2), R12
	LEAQ      ·iq3sGrid(SB), BX
	VMOVDQU64 s3zlane<>(SB), Z15
	BCAST32($0x00000100, Z14, X14)
	VPXORD    Z12, Z12, Z12

s3x8row:
	MOVQ   R10, SI
	MOVQ   q+32(FP), DI
	LEAQ   (DI)(R11*4), R9
	MOVQ   dz+48(FP), DX
	MOVQ   nb+56(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	PCALIGN $64

s3x8loop:
	PREFETCHT0   2048(SI)
	PREFETCHT0   2112(SI)
	S3ZGRID(0, Z4, Z24, Z25, K6)
	S3ZGRID(1, Z5, Z24, Z25, K6)
	S3ZGRID(2, Z6, Z24, Z25, K6)
	S3ZGRID(3, Z7, Z24, Z25, K6)
	KMOVQ        74(SI), K1
	KMOVQ        82(SI), K2
	KMOVQ        90(SI), K3
	KMOVQ        98(SI), K5
	S3ZSCALE(0, Z8, Y8, Y30)
	S3ZSCALE(1, Z9, Y9, Y30)
	S3ZSCALE(2, Z10, Y10, Y30)
	S3ZSCALE(3, Z11, Y11, Y30)
	VPBROADCASTW 0(SI), Y23
	VCVTPH2PS    Y23, Z23
	XSX8PAIR((DI), (DI)(R11*1), 0, Z0)
	XSX8PAIR((DI)(R11*2), (DI)(R12*1), 64, Z1)
	XSX8PAIR((R9), (R9)(R11*1), 128, Z2)
	XSX8PAIR((R9)(R11*2), (R9)(R12*1), 192, Z3)
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $256, DX
	DECQ CX
	JNZ  s3x8loop

	X8STORE(s3x8row)

// ---------------------------------------------------------------- IQ4_NL, MXFP4 single token, VBMI

// qdotIQ4_NLZV and qdotMXFP4ZV are qdotIQ4_NLZ and qdotMXFP4Z (the same
// lanes, float steps and order, so the same bits: TestIQRowDotsBitwise)
// with fewer instructions per pair of blocks, for hosts with AVX-512 VBMI
// (hasNLZV). A decode from DRAM ran the older kernels at ~12-13 GB/s per
// CPU-second on the Zen 5 VM, in L2 no faster: compute-bound. Per pair:
//
//   - one masked load of the two blocks' 2·bb bytes (no fault past the
//     row) and one VPERMB into the code layout [bytes 0-15, 0-15, 16-31,
//     16-31] (was a load, VINSERTI128 and VSHUFI64X2);
//   - the lookup by VPERMB from a 64-byte table (the 16 |levels| four
//     times): it reads the low 6 bits of each byte, so the high nibble's
//     neighbour bits left by VPSRLW need no VPANDD; the sign test reads
//     bit 3 only;
//   - the scales dw·da formed for the two blocks in one xmm (IQ4_NL's fp16
//     d by one VPERMB and VCVTPH2PS, MXFP4's from the table; da by one
//     VMOVQ; one VMULPS) and spread by one VPERMPS to [s_b ×8 | s_b+1 ×8]
//     (was two broadcasts and an insert each for dw and da and a 16-lane
//     VMULPS). Each product is the same single rounding of dw·da.
//
// A far PREFETCHT1 covers every line of the row as in qdotQ8_0Z.
// Registers: Z0 accumulates (Y0); Z1 the pair's integer lanes; Z2 the raw
// bytes; Z3 the levels; Z4 the scales; Z13 the 64-byte |level| table; Z14
// 0x08 bytes; Z15 0x0f bytes (NZONE); Z12 0; Z16 the VPERMB code index;
// Z17 the VPERMB index of the two d (IQ4_NL); Z18 the VPERMPS index
// [0 ×8 | 1 ×8]; K4 word lanes 1 and 3; K5 the low 2·bb bytes.

#define NZVPF 16384

// The VPERMB code indices: [co..co+15, co..co+15, bb+co..bb+co+15 twice].
DATA nzvnl<>+0(SB)/8, $0x0908070605040302
DATA nzvnl<>+8(SB)/8, $0x11100f0e0d0c0b0a
DATA nzvnl<>+16(SB)/8, $0x0908070605040302
DATA nzvnl<>+24(SB)/8, $0x11100f0e0d0c0b0a
DATA nzvnl<>+32(SB)/8, $0x1b1a191817161514
DATA nzvnl<>+40(SB)/8, $0x232221201f1e1d1c
DATA nzvnl<>+48(SB)/8, $0x1b1a191817161514
DATA nzvnl<>+56(SB)/8, $0x232221201f1e1d1c
GLOBL nzvnl<>(SB), RODATA|NOPTR, $64

DATA nzvmx<>+0(SB)/8, $0x0807060504030201
DATA nzvmx<>+8(SB)/8, $0x100f0e0d0c0b0a09
DATA nzvmx<>+16(SB)/8, $0x0807060504030201
DATA nzvmx<>+24(SB)/8, $0x100f0e0d0c0b0a09
DATA nzvmx<>+32(SB)/8, $0x1918171615141312
DATA nzvmx<>+40(SB)/8, $0x21201f1e1d1c1b1a
DATA nzvmx<>+48(SB)/8, $0x1918171615141312
DATA nzvmx<>+56(SB)/8, $0x21201f1e1d1c1b1a
GLOBL nzvmx<>(SB), RODATA|NOPTR, $64

// The VPERMB index of IQ4_NL's two d (bytes 0-1 and 18-19).
DATA nzvdw<>+0(SB)/8, $0x0000000013120100
DATA nzvdw<>+8(SB)/8, $0x0000000000000000
GLOBL nzvdw<>(SB), RODATA|NOPTR, $16

// The VPERMPS index [0 ×8 | 1 ×8].
DATA nzvsp<>+0(SB)/8, $0x0000000000000000
DATA nzvsp<>+8(SB)/8, $0x0000000000000000
DATA nzvsp<>+16(SB)/8, $0x0000000000000000
DATA nzvsp<>+24(SB)/8, $0x0000000000000000
DATA nzvsp<>+32(SB)/8, $0x0000000100000001
DATA nzvsp<>+40(SB)/8, $0x0000000100000001
DATA nzvsp<>+48(SB)/8, $0x0000000100000001
DATA nzvsp<>+56(SB)/8, $0x0000000100000001
GLOBL nzvsp<>(SB), RODATA|NOPTR, $64

// NZVPAIR adds the two blocks at off(SI) into Y0 (activations at
// aoff(DI), their scales at daoff(DX)); TEST and DW as NZPAIR's.
#define NZVPAIR(off, aoff, daoff, TEST, DW) \
	VMOVDQU8.Z  off(SI), K5, Z2; \
	VPERMB      Z2, Z16, Z3; \
	VPSRLW      $4, Z3, K4, Z3; \
	TEST        Z14, Z3, K3; \
	VPERMB      Z13, Z3, Z3; \
	VMOVDQU64   aoff(DI), Z1; \
	VPSUBB      Z1, Z12, K3, Z1; \
	VPXORD      Z5, Z5, Z5; \
	VPDPBUSD    Z1, Z3, Z5; \
	DW(off); \
	VMOVQ       daoff(DX), X6; \
	VMULPS      X6, X4, X4; \
	VPERMPS     Z4, Z18, Z4; \
	VCVTDQ2PS   Z5, Z5; \
	VMULPS      Z4, Z5, Z5; \
	VADDPS      Y5, Y0, Y0; \
	VEXTRACTF64X4 $1, Z5, Y5; \
	VADDPS      Y5, Y0, Y0

// The two blocks' weight scales in X4's low floats: IQ4_NL's fp16 d
// (bytes 0-1 and 18-19 of Z2), MXFP4's from the table at BX (AX clobbered).
#define NLDWV(off) \
	VPERMB    Z2, Z17, Z4; \
	VCVTPH2PS X4, X4

#define MXDWV(off) \
	MOVBLZX   off(SI), AX; \
	VMOVSS    (BX)(AX*4), X4; \
	MOVBLZX   off+17(SI), AX; \
	VINSERTPS $0x10, (BX)(AX*4), X4, X4

// NZVSETUP loads the constants: |level| table tab (16 bytes, replicated),
// code index idx, pair bytes mask.
#define NZVSETUP(tab, idx, mask) \
	MOVQ            dst+0(FP), R8; \
	MOVQ            w+16(FP), R10; \
	BCAST32($0x0f0f0f0f, Z15, X15); \
	BCAST32($0x08080808, Z14, X14); \
	VBROADCASTI32X4 tab(SB), Z13; \
	VPXORD          Z12, Z12, Z12; \
	MOVL            $0xff00ff00, AX; \
	KMOVD           AX, K4; \
	MOVQ            mask, AX; \
	KMOVQ           AX, K5; \
	VMOVDQU64       idx(SB), Z16; \
	VBROADCASTI32X4 nzvdw<>(SB), Z17; \
	VMOVDQU64       nzvsp<>(SB), Z18

// func qdotIQ4_NLZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotIQ4_NLZV(SB), NOSPLIT, $0-64
	NZVSETUP(iq4zabs<>, nzvnl<>, $0xfffffffff)

nlzvrow:
	ROWSTART
	VXORPS Y0, Y0, Y0
	SUBQ   $4, CX
	JL     nlzvtail

	PCALIGN $64

nlzvloop4:
	PREFETCHT1 NZVPF(SI)
	PREFETCHT1 NZVPF+64(SI)
	NZVPAIR(0, 0, 0, VPTESTNMB, NLDWV)
	NZVPAIR(36, 64, 8, VPTESTNMB, NLDWV)
	ADDQ $72, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  nlzvloop4

nlzvtail: // CX + 4 blocks left, 0 to 3
	ADDQ $4, CX
	CMPQ CX, $2
	JL   nlzvone
	NZVPAIR(0, 0, 0, VPTESTNMB, NLDWV)
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX

nlzvone:
	TESTQ CX, CX
	JZ    nlzvsum
	NZONE(2, VPTESTNMB, NLDW1)

nlzvsum:
	FOLD8(Y0, X0)
	ROWEND(nlzvrow)

// func qdotMXFP4ZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// aux: e8m0HalfTab.
TEXT ·qdotMXFP4ZV(SB), NOSPLIT, $0-64
	NZVSETUP(mxzabs<>, nzvmx<>, $0x3ffffffff)

mxzvrow:
	ROWSTART
	VXORPS Y0, Y0, Y0
	SUBQ   $4, CX
	JL     mxzvtail

	PCALIGN $64

mxzvloop4:
	PREFETCHT1 NZVPF(SI)
	PREFETCHT1 NZVPF+64(SI)
	NZVPAIR(0, 0, 0, VPTESTMB, MXDWV)
	NZVPAIR(34, 64, 8, VPTESTMB, MXDWV)
	ADDQ $68, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  mxzvloop4

mxzvtail: // CX + 4 blocks left, 0 to 3
	ADDQ $4, CX
	CMPQ CX, $2
	JL   mxzvone
	NZVPAIR(0, 0, 0, VPTESTMB, MXDWV)
	ADDQ $34, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX

mxzvone:
	TESTQ CX, CX
	JZ    mxzvsum
	NZONE(1, VPTESTMB, MXDW1)

mxzvsum:
	FOLD8(Y0, X0)
	ROWEND(mxzvrow)
