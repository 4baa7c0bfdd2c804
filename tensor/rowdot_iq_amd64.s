// AVX2 row dots of the table formats (dequant_iq.go) against 8-bit
// activations, bit for bit the canonical arithmetic of rowdot_iq_ref.go:
// for IQ4_XS and IQ3_S eight float lanes, lane l taking the exact int32
// sum of elements 4l..4l+3 of each 32-element sub-block, scaled (VMULPS)
// and added (VADDPS, never fused) super-block after super-block, folded
// by FOLD8; for IQ4_NL and MXFP4 one float step per block (below).
//
// Signature as the kernels of rowdot_quant_amd64.s:
//
//	func qdotXxxSIMD(dst *float32, rows int, w *byte, stride uintptr,
//	                 q *int8, d *float32, aux unsafe.Pointer, nb int)
//
// aux: IQ4_NL's and MXFP4's paired activations (quantizedActs.QN from the
// row's first block) or nil; unused otherwise.
//
// A block's 16 code bytes become 32 bytes (low nibbles, then high nibbles:
// element order) and VPSHUFB looks each code up in the level table, held in
// both 128-bit halves of Y13. The levels are signed: |level| (VPABSB) times
// a·sign(level) (VPSIGNB) feeds VPMADDUBSW (|pair| ≤ 2·127·127 < 2^15),
// VPMADDWD by ones (or by the sub-block's scale) sums four per lane.

#include "textflag.h"
#include "rowdot_amd64.h"

// LEVELS32 turns the 16 code bytes at off(SI) into the 32 levels of the
// block in Y2 (X3 clobbered). Y15 = 0x0F bytes, Y13 = the level table.
#define LEVELS32(off) \
	VMOVDQU     off(SI), X2; \
	VPSRLW      $4, X2, X3; \
	VINSERTI128 $1, X3, Y2, Y2; \
	VPAND       Y15, Y2, Y2; \
	VPSHUFB     Y2, Y13, Y2

// LANES32 multiplies the levels in Y2 by the 32 activations at aoff(DI)
// and leaves the eight int16-pair sums times the words of mul in Y2 as
// int32 lanes (Y3 clobbered).
#define LANES32(aoff, mul) \
	VMOVDQU    aoff(DI), Y3; \
	VPSIGNB    Y2, Y3, Y3; \
	VPABSB     Y2, Y2; \
	VPMADDUBSW Y3, Y2, Y2; \
	VPMADDWD   mul, Y2, Y2

// ACCLANES: Y0 += float(Y2) · Y4 (the block scale, broadcast).
#define ACCLANES \
	VCVTDQ2PS Y2, Y2; \
	VMULPS    Y4, Y2, Y2; \
	VADDPS    Y2, Y0, Y0

// ---------------------------------------------------------------- IQ4_NL, MXFP4

DATA iq4nlLevels<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4nlLevels<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4nlLevels<>(SB), RODATA|NOPTR, $16

DATA fp4Levels<>+0(SB)/8, $0x0c08060403020100
DATA fp4Levels<>+8(SB)/8, $0xf4f8fafcfdfeff00
GLOBL fp4Levels<>(SB), RODATA|NOPTR, $16

// IQ4_NL and MXFP4 take one float step per block (rowdot_iq_ref.go): the
// block's eight int32 lanes are summed to its exact dot P_b, and
// acc ← acc + float32(s_b·float32(P_b)) in block order, s_b = dw·da.
// Four blocks at a time: three VPHADDD and one VPADDD reduce their lanes
// to [P_0 P_1 P_2 P_3] in one xmm, one VCVTDQ2PS, one VMULPS by the four
// dw (gathered into an xmm) times the four da, one VMULPS, then four
// VADDSS in block order into X0.

// NLINT4(bb, co): the int32 lanes of the four blocks at 0, bb, 2bb, 3bb(SI)
// (codes at +co; activations at 0(DI)) reduced to [P_0 P_1 P_2 P_3] in X6
// (Y2, Y3, Y7, Y8 clobbered).
#define NLINT4(bb, co) \
	LEVELS32(co); \
	LANES32(0, Y14); \
	VMOVDQA      Y2, Y6; \
	LEVELS32(bb+co); \
	LANES32(32, Y14); \
	VMOVDQA      Y2, Y7; \
	LEVELS32(2*bb+co); \
	LANES32(64, Y14); \
	VMOVDQA      Y2, Y8; \
	LEVELS32(3*bb+co); \
	LANES32(96, Y14); \
	VPHADDD      Y7, Y6, Y6; \
	VPHADDD      Y2, Y8, Y8; \
	VPHADDD      Y8, Y6, Y6; \
	VEXTRACTI128 $1, Y6, X7; \
	VPADDD       X7, X6, X6

// ADDSEQ4(x): X0 += the four floats of x in order (X7 clobbered).
#define ADDSEQ4(x) \
	VADDSS    x, X0, X0; \
	VMOVSHDUP x, X7; \
	VADDSS    X7, X0, X0; \
	VMOVHLPS  x, X7, X7; \
	VADDSS    X7, X0, X0; \
	VPERMILPS $0xff, x, X7; \
	VADDSS    X7, X0, X0

// ACC4: X0 += the four blocks' float32(s·float32(P)) in order, from the
// dots X6 and the weight scales X4 (activation scales at 0(DX)).
#define ACC4 \
	VCVTDQ2PS X6, X6; \
	VMULPS    (DX), X4, X4; \
	VMULPS    X4, X6, X6; \
	ADDSEQ4(X6)

// NLDW4, MXDW4: the four blocks' dw in X4 (AX clobbered).
#define NLDW4 \
	MOVWLZX (SI), AX; \
	VMOVD   AX, X4; \
	VPINSRW $1, 18(SI), X4, X4; \
	VPINSRW $2, 36(SI), X4, X4; \
	VPINSRW $3, 54(SI), X4, X4; \
	VCVTPH2PS X4, X4

#define MXDW4 MXDW4AT(0, X4)

// MXDW4AT(off, x): the dw of the four MXFP4 blocks at off(SI) in x
// (R12: e8m0HalfTab).
#define MXDW4AT(off, x) \
	MOVBLZX   off(SI), AX; \
	VMOVSS    (R12)(AX*4), x; \
	MOVBLZX   off+17(SI), AX; \
	VINSERTPS $0x10, (R12)(AX*4), x, x; \
	MOVBLZX   off+34(SI), AX; \
	VINSERTPS $0x20, (R12)(AX*4), x, x; \
	MOVBLZX   off+51(SI), AX; \
	VINSERTPS $0x30, (R12)(AX*4), x, x

// NLINT1(co): one block's dot P in X2's low lane (Y3 clobbered).
#define NLINT1(co) \
	LEVELS32(co); \
	LANES32(0, Y14); \
	VEXTRACTI128 $1, Y2, X3; \
	VPADDD       X3, X2, X2; \
	VPHADDD      X2, X2, X2; \
	VPHADDD      X2, X2, X2

// ACC1: X0 += float32(s·float32(P)) of one block, P in X2, dw in X4.
#define ACC1 \
	VCVTDQ2PS X2, X2; \
	VMULSS    (DX), X4, X4; \
	VMULSS    X4, X2, X2; \
	VADDSS    X2, X0, X0

#define NLDW1Y \
	MOVWLZX   (SI), AX; \
	VMOVD     AX, X4; \
	VCVTPH2PS X4, X4

#define MXDW1Y \
	MOVBLZX (SI), AX; \
	VMOVSS  (R12)(AX*4), X4

// Eight blocks per step where aux holds the activations paired as
// quantizedActs.QN lays them out (pairNL; nil: none, the four-block steps
// do all): the code bytes of blocks b and b+4 (b = 0..3 of the group)
// share one register, the low nibbles of both in Y2 and the high in Y3,
// each a VPSHUFB from the level table; the levels take the activations'
// signs (VPSIGNB) and meet |q| in VPMADDUBSW, so a pair costs 15 vector
// instructions where two single blocks cost 20 (LEVELS32, LANES32). Three
// VPHADDD reduce the four pairs' lanes to [P_0..P_3 | P_4..P_7], one
// VCVTDQ2PS, VMULPS (dw·da) and VMULPS give the eight block products, and
// eight VADDSS add them in block order (ADDSEQ4): the canonical steps.

// PAIRDOTS(j, bb, co): the int16 pair sums of blocks j (low half) and j+4
// (high half) of the group at SI (blocks of bb bytes, codes at +co;
// paired activations at BX), the low nibbles' in Y2 and the high ones' in
// Y3 (Y4, Y5 clobbered).
#define PAIRDOTS(j, bb, co) \
	VMOVDQU     co+bb*j(SI), X2; \
	VINSERTI128 $1, co+bb*j+4*bb(SI), Y2, Y2; \
	VPSRLW      $4, Y2, Y3; \
	VPAND       Y15, Y2, Y2; \
	VPAND       Y15, Y3, Y3; \
	VPSHUFB     Y2, Y13, Y2; \
	VPSHUFB     Y3, Y13, Y3; \
	VPSIGNB     128*j(BX), Y2, Y2; \
	VPSIGNB     128*j+32(BX), Y3, Y3; \
	VMOVDQU     128*j+64(BX), Y4; \
	VMOVDQU     128*j+96(BX), Y5; \
	VPMADDUBSW  Y2, Y4, Y2; \
	VPMADDUBSW  Y3, Y5, Y3

// NLPAIR(j, bb, co, v): the int32 lanes of the pair (PAIRDOTS) in v.
#define NLPAIR(j, bb, co, v) \
	PAIRDOTS(j, bb, co); \
	VPMADDWD Y14, Y2, Y2; \
	VPMADDWD Y14, Y3, Y3; \
	VPADDD   Y3, Y2, v

// MXPAIR is NLPAIR for MXFP4, whose |level| ≤ 12: the two halves' int16
// pair sums (≤ 2·12·127 each) add exactly in int16 before one VPMADDWD.
#define MXPAIR(j, v) \
	PAIRDOTS(j, 17, 1); \
	VPADDW   Y3, Y2, Y2; \
	VPMADDWD Y14, Y2, v

// GROUPINT: the four pairs' lanes Y6-Y9 reduced to the eight block dots
// [P_0 P_1 P_2 P_3 | P_4 P_5 P_6 P_7] in Y6, as float32 (exact: |P| <
// 2^24).
#define GROUPINT \
	VPHADDD   Y7, Y6, Y6; \
	VPHADDD   Y9, Y8, Y8; \
	VPHADDD   Y8, Y6, Y6; \
	VCVTDQ2PS Y6, Y6

// GROUPACC: X0 += float32(s_b·P_b) for the group's eight blocks in order,
// P in Y6 (float), dw in Y10; the activation scales at 0(DX).
#define GROUPACC \
	VMULPS       (DX), Y10, Y10; \
	VMULPS       Y10, Y6, Y6; \
	ADDSEQ4(X6); \
	VEXTRACTF128 $1, Y6, X6; \
	ADDSEQ4(X6)

// NLDW8: the eight IQ4_NL blocks' dw (fp16 at 0, 18, .., 126(SI)) in Y10.
#define NLDW8 \
	MOVWLZX   (SI), AX; \
	VMOVD     AX, X10; \
	VPINSRW   $1, 18(SI), X10, X10; \
	VPINSRW   $2, 36(SI), X10, X10; \
	VPINSRW   $3, 54(SI), X10, X10; \
	VPINSRW   $4, 72(SI), X10, X10; \
	VPINSRW   $5, 90(SI), X10, X10; \
	VPINSRW   $6, 108(SI), X10, X10; \
	VPINSRW   $7, 126(SI), X10, X10; \
	VCVTPH2PS X10, Y10

// MXDW8: the eight MXFP4 blocks' dw in Y10 (X11 clobbered).
#define MXDW8 \
	MXDW4AT(0, X10); \
	MXDW4AT(68, X11); \
	VINSERTF128 $1, X11, Y10, Y10

// NLSETUP loads the constants, level table tab.
#define NLSETUP(tab) \
	MOVQ dst+0(FP), R8; \
	MOVQ w+16(FP), R10; \
	BCAST32($0x0f0f0f0f, Y15, X15); \
	BCAST32($0x00010001, Y14, X14); \
	VBROADCASTI128 tab(SB), Y13

// func qdotIQ4_NLSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotIQ4_NLSIMD(SB), NOSPLIT, $0-64
	NLSETUP(iq4nlLevels<>)

nlrow:
	ROWSTART
	VXORPS Y0, Y0, Y0
	TESTQ  BX, BX
	JZ     nlquad
	MOVQ   CX, R9
	ANDQ   $7, CX
	SHRQ   $3, R9 // whole groups of eight blocks (R9), the rest (CX) below
	JZ     nlquad
	PCALIGN $32

nlloop8:
	PREFETCHT0 2048(SI) // see qdotQ8_0SIMD
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	NLPAIR(0, 18, 2, Y6)
	NLPAIR(1, 18, 2, Y7)
	NLPAIR(2, 18, 2, Y8)
	NLPAIR(3, 18, 2, Y9)
	GROUPINT
	NLDW8
	GROUPACC
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $512, BX
	DECQ R9
	JNZ  nlloop8

nlquad:
	SUBQ   $4, CX
	JL     nltail

	PCALIGN $32

nlloop4:
	PREFETCHT0 2048(SI) // see qdotQ8_0SIMD
	PREFETCHT0 2112(SI)
	NLINT4(18, 2)
	NLDW4
	ACC4
	ADDQ $72, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  nlloop4

nltail:
	ADDQ $4, CX
	JZ   nlsum

nlloop1:
	NLINT1(2)
	NLDW1Y
	ACC1
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  nlloop1

nlsum:
	ROWEND(nlrow)

// func qdotMXFP4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotMXFP4SIMD(SB), NOSPLIT, $0-64
	NLSETUP(fp4Levels<>)
	LEAQ ·e8m0HalfTab(SB), R12

mxrow:
	ROWSTART
	VXORPS Y0, Y0, Y0
	TESTQ  BX, BX
	JZ     mxquad
	MOVQ   CX, R9
	ANDQ   $7, CX
	SHRQ   $3, R9 // whole groups of eight blocks (R9), the rest (CX) below
	JZ     mxquad
	PCALIGN $32

mxloop8:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	MXPAIR(0, Y6)
	MXPAIR(1, Y7)
	MXPAIR(2, Y8)
	MXPAIR(3, Y9)
	GROUPINT
	MXDW8
	GROUPACC
	ADDQ $136, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $512, BX
	DECQ R9
	JNZ  mxloop8

mxquad:
	SUBQ   $4, CX
	JL     mxtail

	PCALIGN $32

mxloop4:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	NLINT4(17, 1)
	MXDW4
	ACC4
	ADDQ $68, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  mxloop4

mxtail:
	ADDQ $4, CX
	JZ   mxsum

mxloop1:
	NLINT1(1)
	MXDW1Y
	ACC1
	ADDQ $17, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  mxloop1

mxsum:
	ROWEND(mxrow)

// ---------------------------------------------------------------- IQ4_XS

// XSSCALES: the super-block at SI's eight sub-block scales ls−32 as words
// in both 128-bit halves of Y6, for XSSUB's VPSHUFB by wbc (Y7, Y8, X9
// clobbered). ls: the low nibbles are the scales_l bytes' nibbles, low
// first (split as S3SCALES splits them); bits 2ib, 2ib+1 of scales_h go on
// top: the dword d | scales_h<<16 shifted right by 12+2ib and masked to
// 0x30 (VPSRLVD, per dword), packed to words. Once per super-block in
// vector registers instead of eleven scalar steps per sub-block (on a Zen
// 3 host, one thread from DRAM, interleaved x2: 2048x2048 7.9-9.5 ->
// 9.6-9.8 GB/s, 1024x5632 8.6-8.7 -> 10.2-10.5; TinyLlama-shaped IQ4_XS
// decode on 2 threads, x3: median 29.7 -> 33.1 tok/s).
#define XSSCALES \
	VMOVD        4(SI), X6; \
	VPSRLW       $4, X6, X7; \
	VPUNPCKLBW   X7, X6, X6; \
	VPAND        X15, X6, X6; \
	VPMOVZXBW    X6, X6; \
	VPBROADCASTD 0(SI), Y7; \
	VPSRLVD      xsHShift<>(SB), Y7, Y7; \
	VPAND        xsHMask<>(SB), Y7, Y7; \
	VEXTRACTI128 $1, Y7, X8; \
	VPACKUSDW    X8, X7, X7; \
	VPOR         X7, X6, X6; \
	VPSUBW       xs32<>(SB), X6, X6; \
	VPERMQ       $0x44, Y6, Y6

// XSSUB adds sub-block ib of the IQ4_XS super-block at SI (activations at
// DI) to the int32 lanes Y1: its levels times the activations, the
// int16-pair sums times its scale ls−32 (VPMADDWD by word ib of Y6,
// XSSCALES, broadcast).
#define XSSUB(ib) \
	LEVELS32(8+16*ib); \
	VPSHUFB      wbc<>+(32*ib)(SB), Y6, Y4; \
	LANES32(32*ib, Y4); \
	VPADDD       Y2, Y1, Y1

DATA xsHShift<>+0(SB)/8, $0x0000000e0000000c
DATA xsHShift<>+8(SB)/8, $0x0000001200000010
DATA xsHShift<>+16(SB)/8, $0x0000001600000014
DATA xsHShift<>+24(SB)/8, $0x0000001a00000018
GLOBL xsHShift<>(SB), RODATA|NOPTR, $32

DATA xsHMask<>+0(SB)/8, $0x0000003000000030
DATA xsHMask<>+8(SB)/8, $0x0000003000000030
DATA xsHMask<>+16(SB)/8, $0x0000003000000030
DATA xsHMask<>+24(SB)/8, $0x0000003000000030
GLOBL xsHMask<>(SB), RODATA|NOPTR, $32

DATA xs32<>+0(SB)/8, $0x0020002000200020
DATA xs32<>+8(SB)/8, $0x0020002000200020
GLOBL xs32<>(SB), RODATA|NOPTR, $16

// func qdotIQ4_XSSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotIQ4_XSSIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x0f0f0f0f, Y15, X15)
	VBROADCASTI128 iq4nlLevels<>(SB), Y13

xsrow:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $32

xsloop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	VPXOR Y1, Y1, Y1
	XSSCALES
	XSSUB(0)
	XSSUB(1)
	XSSUB(2)
	XSSUB(3)
	XSSUB(4)
	XSSUB(5)
	XSSUB(6)
	XSSUB(7)
	VMOVDQA      Y1, Y2
	VPBROADCASTW 0(SI), X4
	VCVTPH2PS    X4, Y4
	VBROADCASTSS (DX), Y5
	VMULPS       Y5, Y4, Y4
	ACCLANES
	ADDQ $136, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  xsloop

	FOLD8(Y0, X0)
	ROWEND(xsrow)

// ---------------------------------------------------------------- IQ3_S

// Bit g and the multiplier 2^(8−g) of word g (grid bit 8 from bit g of
// qh), the bit of each byte within its sign byte, and the sign-byte
// broadcast pattern.
DATA iq3sBit<>+0(SB)/8, $0x0008000400020001
DATA iq3sBit<>+8(SB)/8, $0x0080004000200010
GLOBL iq3sBit<>(SB), RODATA|NOPTR, $16

DATA iq3sMul<>+0(SB)/8, $0x0020004000800100
DATA iq3sMul<>+8(SB)/8, $0x0002000400080010
GLOBL iq3sMul<>(SB), RODATA|NOPTR, $16

DATA bitsel<>+0(SB)/8, $0x8040201008040201
DATA bitsel<>+8(SB)/8, $0x8040201008040201
DATA bitsel<>+16(SB)/8, $0x8040201008040201
DATA bitsel<>+24(SB)/8, $0x8040201008040201
GLOBL bitsel<>(SB), RODATA|NOPTR, $32

DATA signshuf<>+0(SB)/8, $0x0000000000000000
DATA signshuf<>+8(SB)/8, $0x0101010101010101
DATA signshuf<>+16(SB)/8, $0x0202020202020202
DATA signshuf<>+24(SB)/8, $0x0303030303030303
GLOBL signshuf<>(SB), RODATA|NOPTR, $32

// S3SUB adds sub-block ib of the IQ3_S super-block at SI (activations at
// DI, the grid at BX) to the int32 lanes Y1: the magnitudes by S3GRID
// (VMOVD, VPINSRD: on a Zen 3 host 1.3-1.5x faster than VPGATHERDD, which
// took ~60% of the kernel's time); the 32 sign bits become 0xFF bytes that
// negate the activations ((a XOR m) − m); the int16-pair sums are weighted
// by the odd scale 1+2s of the sub-block (S3SCALES).
// S3LOOK4(r, x): the grid entries of the four index words in r (low word
// first) in x's dwords (r, AX clobbered).
#define S3LOOK4(r, x) \
	MOVWLZX r, AX; \
	VMOVD   (BX)(AX*4), x; \
	SHRQ    $16, r; \
	MOVWLZX r, AX; \
	VPINSRD $1, (BX)(AX*4), x, x; \
	SHRQ    $16, r; \
	MOVWLZX r, AX; \
	VPINSRD $2, (BX)(AX*4), x, x; \
	SHRQ    $16, r; \
	VPINSRD $3, (BX)(r*4), x, x

// S3GRID(ib): the 32 magnitudes of sub-block ib of the IQ3_S super-block
// at SI (the grid at BX) in element order in Y5 (X2-X4, AX, R9, R14
// clobbered): the eight 9-bit indices (qs byte | bit g of qh<<8) built as
// words in X2, moved to two general registers and looked up one by one.
#define S3GRID(ib) \
	VPMOVZXBW    (2+8*ib)(SI), X2; \
	VPBROADCASTW (66+ib)(SI), X3; \
	VPAND        X15, X3, X3; \
	VPMULLW      X14, X3, X3; \
	VPOR         X3, X2, X2; \
	VMOVQ        X2, R9; \
	VPEXTRQ      $1, X2, R14; \
	S3LOOK4(R9, X5); \
	S3LOOK4(R14, X4); \
	VINSERTI128  $1, X4, Y5, Y5

// S3SIGNS(ib): the sign bits of sub-block ib as 0xFF bytes in Y3.
#define S3SIGNS(ib) \
	VPBROADCASTD (74+4*ib)(SI), Y3; \
	VPSHUFB      Y13, Y3, Y3; \
	VPAND        Y12, Y3, Y3; \
	VPCMPEQB     Y12, Y3, Y3

#define S3SUB(ib) \
	S3GRID(ib); \
	S3SIGNS(ib); \
	VMOVDQU      (32*ib)(DI), Y2; \
	VPXOR        Y3, Y2, Y2; \
	VPSUBB       Y3, Y2, Y2; \
	VPMADDUBSW   Y2, Y5, Y5; \
	VPSHUFB      wbc<>+(32*ib)(SB), Y6, Y4; \
	VPMADDWD     Y4, Y5, Y5; \
	VPADDD       Y5, Y1, Y1

// S3SCALES: the super-block's eight odd scales 1+2s (s: the nibbles of
// the scales bytes at 106(SI), low nibble first) as words in both 128-bit
// halves of Y6, for S3SUB's VPSHUFB by wbc (X7 clobbered).
#define S3SCALES \
	VMOVD        106(SI), X6; \
	VPSRLW       $4, X6, X7; \
	VPUNPCKLBW   X7, X6, X6; \
	VPAND        X11, X6, X6; \
	VPMOVZXBW    X6, X6; \
	VPADDW       X6, X6, X6; \
	VPADDW       X10, X6, X6; \
	VPERMQ       $0x44, Y6, Y6

// func qdotIQ3_SSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// aux: &iq3sGrid[0].
TEXT ·qdotIQ3_SSIMD(SB), NOSPLIT, $0-64
	MOVQ    dst+0(FP), R8
	MOVQ    w+16(FP), R10
	VMOVDQU iq3sBit<>(SB), X15
	VMOVDQU iq3sMul<>(SB), X14
	BCAST32($0x0f0f0f0f, Y11, X11)
	BCAST32($0x00010001, Y10, X10)
	VMOVDQU signshuf<>(SB), Y13
	VMOVDQU bitsel<>(SB), Y12

s3row:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $32

s3loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	VPXOR Y1, Y1, Y1
	S3SCALES
	S3SUB(0)
	S3SUB(1)
	S3SUB(2)
	S3SUB(3)
	S3SUB(4)
	S3SUB(5)
	S3SUB(6)
	S3SUB(7)
	VMOVDQA      Y1, Y2
	VPBROADCASTW 0(SI), X4
	VCVTPH2PS    X4, Y4
	VBROADCASTSS (DX), Y5
	VMULPS       Y5, Y4, Y4
	ACCLANES
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  s3loop

	FOLD8(Y0, X0)
	ROWEND(s3row)

// S3UNPACK(ib): sub-block ib's magnitudes to 32ib(DI) and its signed
// levels, (x XOR m) − m, to 256+32ib(DI).
#define S3UNPACK(ib) \
	S3GRID(ib); \
	VMOVDQU Y5, (32*ib)(DI); \
	S3SIGNS(ib); \
	VPXOR   Y3, Y5, Y5; \
	VPSUBB  Y3, Y5, Y5; \
	VMOVDQU Y5, (256+32*ib)(DI)

// S3UNPACKB(ib) is S3UNPACK adding to Y9 the sub-block's lane sums of its
// signed levels times its scale (Y8 = 0x01 bytes, scale words in Y6).
#define S3UNPACKB(ib) \
	S3UNPACK(ib); \
	VPMADDUBSW Y5, Y8, Y4; \
	VPSHUFB    wbc<>+(32*ib)(SB), Y6, Y3; \
	VPMADDWD   Y3, Y4, Y4; \
	VPADDD     Y4, Y9, Y9

// func xsUnpackIQ3S(ws *byte, w *byte, nb int)
// One IQ3_S row's nb super-blocks (110 bytes each at w) into ws in
// the XS tiles' layout (576 bytes each, see xsUnpack): magnitudes at 32 to
// 255 and signed levels at 256 in element order, the eight odd scales as
// word pairs at 512, dw as float32 at 544, and at 0 the eight lanes' bias
// corrections of qdotXSTileY3S, −128·Σ_ib sc_ib·(the sum of the lane's
// four signed levels in sub-block ib).
TEXT ·xsUnpackIQ3S(SB), NOSPLIT, $0-24
	MOVQ    ws+0(FP), DI
	MOVQ    w+8(FP), SI
	MOVQ    nb+16(FP), CX
	LEAQ    ·iq3sGrid(SB), BX
	VMOVDQU iq3sBit<>(SB), X15
	VMOVDQU iq3sMul<>(SB), X14
	VMOVDQU signshuf<>(SB), Y13
	VMOVDQU bitsel<>(SB), Y12
	BCAST32($0x0f0f0f0f, Y11, X11)
	BCAST32($0x00010001, Y10, X10)
	BCAST32($0x01010101, Y8, X8)

xs3loop:
	S3SCALES
	VPXOR Y9, Y9, Y9
	S3UNPACKB(0)
	S3UNPACKB(1)
	S3UNPACKB(2)
	S3UNPACKB(3)
	S3UNPACKB(4)
	S3UNPACKB(5)
	S3UNPACKB(6)
	S3UNPACKB(7)
	VPSLLD       $7, Y9, Y9
	VPXOR        Y4, Y4, Y4
	VPSUBD       Y9, Y4, Y9
	VMOVDQU      Y9, (DI)
	VPUNPCKLWD   X6, X6, X7
	VPUNPCKHWD   X6, X6, X3
	VMOVDQU      X7, 512(DI)
	VMOVDQU      X3, 528(DI)
	VPBROADCASTW (SI), X9
	VCVTPH2PS    X9, X9
	VMOVSS       X9, 544(DI)
	ADDQ         $110, SI
	ADDQ         $576, DI
	DECQ         CX
	JNZ          xs3loop
	VZEROUPPER
	RET

// ---------------------------------------------------------------- Q2_K, Q3_K

// The K-quants of 2 and 3 bits take the same lane arithmetic (see dotQ2_K
// in rowdot_quant_ref.go). A super-block is eight chunks of 32 elements,
// chunk c holding bits 2(c%4) of the 32 bytes qs[32(c/4)…]: shifted and
// masked, they are the chunk's levels in element order. The 16 sub-block
// scales are widened to words with the even ones in the low 128-bit half
// and the odd ones in the high half (evenodd), so VPSHUFB by wbc+32c puts
// sub-block 2c's scale in every word of the low half and 2c+1's in the high
// half: VPMADDWD weights each chunk's int16 pairs by their sub-block scale.

DATA evenodd<>+0(SB)/8, $0x0e0c0a0806040200
DATA evenodd<>+8(SB)/8, $0x0f0d0b0907050301
GLOBL evenodd<>(SB), RODATA|NOPTR, $16

DATA bits8<>+0(SB)/8, $0x8040201008040201
GLOBL bits8<>(SB), RODATA|NOPTR, $8

#define WBC(c, pat) \
	DATA wbc<>+(32*c)(SB)/8, $pat; \
	DATA wbc<>+(32*c+8)(SB)/8, $pat; \
	DATA wbc<>+(32*c+16)(SB)/8, $pat; \
	DATA wbc<>+(32*c+24)(SB)/8, $pat

WBC(0, 0x0100010001000100)
WBC(1, 0x0302030203020302)
WBC(2, 0x0504050405040504)
WBC(3, 0x0706070607060706)
WBC(4, 0x0908090809080908)
WBC(5, 0x0b0a0b0a0b0a0b0a)
WBC(6, 0x0d0c0d0c0d0c0d0c)
WBC(7, 0x0f0e0f0e0f0e0f0e)
GLOBL wbc<>(SB), RODATA|NOPTR, $256

// Q2CHUNK adds chunk c (qs half n, shift sh) to the int32 lanes Y1; Y7 =
// the scale words, Y12 = 0x03 bytes.
#define Q2CHUNK(c, n, sh) \
	VMOVDQU    (16+32*n)(SI), Y2; \
	VPSRLW     $sh, Y2, Y2; \
	VPAND      Y12, Y2, Y2; \
	VPMADDUBSW (32*c)(DI), Y2, Y2; \
	VPSHUFB    wbc<>+(32*c)(SB), Y7, Y3; \
	VPMADDWD   Y3, Y2, Y2; \
	VPADDD     Y2, Y1, Y1

// func qdotQ2_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// aux: the Q8_K bsums.
TEXT ·qdotQ2_KSIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x03030303, Y12, X12)
	BCAST32($0x000f000f, Y11, X11)

q2row:
	ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS X10, X10, X10

	PCALIGN $32

q2loop:
	PREFETCHT0 2048(SI)
	VMOVDQU    0(SI), X6
	VPSHUFB    evenodd<>(SB), X6, X6
	VPMOVZXBW  X6, Y7
	VPAND      Y11, Y7, Y7
	// m ← m + dmin·Σ_j (scale_j>>4)·bsum_j
	VPMOVZXBW    0(SI), Y8
	VPSRLW       $4, Y8, Y8
	VPMADDWD     (BX), Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDD       X9, X8, X8
	VPSHUFD      $0x4e, X8, X9
	VPADDD       X9, X8, X8
	VPSHUFD      $0xb1, X8, X9
	VPADDD       X9, X8, X8
	VCVTDQ2PS    X8, X8
	VPBROADCASTW 82(SI), X4
	VCVTPH2PS    X4, X4
	VMULSS       (DX), X4, X4
	VMULSS       X4, X8, X8
	VADDSS       X8, X10, X10
	VPXOR        Y1, Y1, Y1
	Q2CHUNK(0, 0, 0)
	Q2CHUNK(1, 0, 2)
	Q2CHUNK(2, 0, 4)
	Q2CHUNK(3, 0, 6)
	Q2CHUNK(4, 1, 0)
	Q2CHUNK(5, 1, 2)
	Q2CHUNK(6, 1, 4)
	Q2CHUNK(7, 1, 6)
	VMOVDQA      Y1, Y2
	VPBROADCASTW 80(SI), X4
	VCVTPH2PS    X4, Y4
	VBROADCASTSS (DX), Y5
	VMULPS       Y5, Y4, Y4
	ACCLANES
	ADDQ $84, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q2loop

	FOLD8(Y0, X0)
	VSUBSS X10, X0, X0
	ROWEND(q2row)

// Q3CHUNK adds chunk c (qs half n, shift sh) to Y1: levels v = q − 4 where
// bit c of hmask (Y9) is clear, signed, by the sign trick. Y13 = 0x04
// bytes, Y14 = 0.
#define Q3CHUNK(c, n, sh) \
	VMOVDQU      (32+32*n)(SI), Y2; \
	VPSRLW       $sh, Y2, Y2; \
	VPAND        Y12, Y2, Y2; \
	VPBROADCASTB bits8<>+c(SB), Y4; \
	VPAND        Y9, Y4, Y4; \
	VPCMPEQB     Y14, Y4, Y4; \
	VPAND        Y13, Y4, Y4; \
	VPSUBB       Y4, Y2, Y2; \
	VMOVDQU      (32*c)(DI), Y3; \
	VPSIGNB      Y2, Y3, Y3; \
	VPABSB       Y2, Y2; \
	VPMADDUBSW   Y3, Y2, Y2; \
	VPSHUFB      wbc<>+(32*c)(SB), Y7, Y3; \
	VPMADDWD     Y3, Y2, Y2; \
	VPADDD       Y2, Y1, Y1

// func qdotQ3_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotQ3_KSIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x03030303, Y12, X12)
	BCAST32($0x04040404, Y13, X13)
	BCAST32($0x20202020, Y11, X11)
	VPXOR Y14, Y14, Y14

q3row:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $32

q3loop:
	PREFETCHT0 2048(SI)
	// The sixteen 6-bit scales (q3Scales), four bytes at a time: low
	// nibbles from bytes 0-7, top bits from bytes 8-11.
	MOVL    96(SI), AX
	MOVL    100(SI), R9
	MOVL    104(SI), R11
	MOVL    AX, R12
	ANDL    $0x0f0f0f0f, R12
	MOVL    R11, R13
	ANDL    $0x03030303, R13
	SHLL    $4, R13
	ORL     R13, R12
	VMOVD   R12, X6
	MOVL    R9, R12
	ANDL    $0x0f0f0f0f, R12
	MOVL    R11, R13
	SHRL    $2, R13
	ANDL    $0x03030303, R13
	SHLL    $4, R13
	ORL     R13, R12
	VPINSRD $1, R12, X6, X6
	MOVL    AX, R12
	SHRL    $4, R12
	ANDL    $0x0f0f0f0f, R12
	MOVL    R11, R13
	SHRL    $4, R13
	ANDL    $0x03030303, R13
	SHLL    $4, R13
	ORL     R13, R12
	VPINSRD $2, R12, X6, X6
	MOVL    R9, R12
	SHRL    $4, R12
	ANDL    $0x0f0f0f0f, R12
	MOVL    R11, R13
	SHRL    $6, R13
	ANDL    $0x03030303, R13
	SHLL    $4, R13
	ORL     R13, R12
	VPINSRD $3, R12, X6, X6
	VPSUBB  X11, X6, X6
	VPSHUFB evenodd<>(SB), X6, X6
	VPMOVSXBW X6, Y7
	VMOVDQU 0(SI), Y9
	VPXOR   Y1, Y1, Y1
	Q3CHUNK(0, 0, 0)
	Q3CHUNK(1, 0, 2)
	Q3CHUNK(2, 0, 4)
	Q3CHUNK(3, 0, 6)
	Q3CHUNK(4, 1, 0)
	Q3CHUNK(5, 1, 2)
	Q3CHUNK(6, 1, 4)
	Q3CHUNK(7, 1, 6)
	VMOVDQA      Y1, Y2
	VPBROADCASTW 108(SI), X4
	VCVTPH2PS    X4, Y4
	VBROADCASTSS (DX), Y5
	VMULPS       Y5, Y4, Y4
	ACCLANES
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q3loop

	FOLD8(Y0, X0)
	ROWEND(q3row)
