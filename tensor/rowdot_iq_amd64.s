// AVX2 row dots of the table formats (dequant_iq.go) against 8-bit
// activations, bit for bit the canonical arithmetic of rowdot_iq_ref.go:
// eight float lanes, lane l taking the exact int32 sum of elements
// 4l..4l+3 of each 32-element (sub-)block, scaled (VMULPS) and added
// (VADDPS, never fused) block after block, folded by FOLD8.
//
// Signature as the kernels of rowdot_quant_amd64.s:
//
//	func qdotXxxSIMD(dst *float32, rows int, w *byte, stride uintptr,
//	                 q *int8, d *float32, aux unsafe.Pointer, nb int)
//
// aux: MXFP4's table of 2^(e−128) by e (e8m0HalfTab); unused otherwise.
//
// A block's 16 code bytes become 32 bytes (low nibbles, then high nibbles:
// element order) and VPSHUFB looks each code up in the level table, held in
// both 128-bit halves of Y13. The levels are signed: |level| (VPABSB) times
// a·sign(level) (VPSIGNB) feeds VPMADDUBSW (|pair| ≤ 2·127·127 < 2^15),
// VPMADDWD by ones (or by the sub-block's scale) sums four per lane.

#include "textflag.h"

#define ROWSTART \
	MOVQ R10, SI; \
	MOVQ q+32(FP), DI; \
	MOVQ d+40(FP), DX; \
	MOVQ aux+48(FP), BX; \
	MOVQ nb+56(FP), CX

#define ROWEND(label) \
	VMOVSS X0, (R8); \
	ADDQ   $4, R8; \
	ADDQ   stride+24(FP), R10; \
	DECQ   rows+8(FP); \
	JNZ    label; \
	VZEROUPPER; \
	RET

// FOLD8 folds Y (X its low half) into X's low float as
// ((y0+y1)+(y2+y3)) + ((y4+y5)+(y6+y7)); X9 is clobbered.
#define FOLD8(Y, X) \
	VEXTRACTF128 $1, Y, X9; \
	VHADDPS      X9, X, X; \
	VHADDPS      X, X, X; \
	VMOVSHDUP    X, X9; \
	VADDSS       X9, X, X

#define BCAST32(val, reg, xreg) \
	MOVL         val, AX; \
	VMOVD        AX, xreg; \
	VPBROADCASTD xreg, reg

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

// NLBLK: IQ4_NL block {d fp16; qs[16]} at off(SI), activations aoff(DI),
// their scale daoff(DX).
#define NLBLK(off, aoff, daoff) \
	LEVELS32(off+2); \
	LANES32(aoff, Y14); \
	VPBROADCASTW off(SI), X4; \
	VCVTPH2PS    X4, Y4; \
	VBROADCASTSS daoff(DX), Y5; \
	VMULPS       Y5, Y4, Y4; \
	ACCLANES

// MXBLK: MXFP4 block {e u8; qs[16]} at off(SI); 2^(e−128) from the table at BX.
#define MXBLK(off, aoff, daoff) \
	LEVELS32(off+1); \
	LANES32(aoff, Y14); \
	MOVBLZX      off(SI), AX; \
	VBROADCASTSS (BX)(AX*4), Y4; \
	VBROADCASTSS daoff(DX), Y5; \
	VMULPS       Y5, Y4, Y4; \
	ACCLANES

// func qdotIQ4_NLSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotIQ4_NLSIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x00010001, Y14, X14)
	VBROADCASTI128 iq4nlLevels<>(SB), Y13

nlrow:
	ROWSTART
	VXORPS Y0, Y0, Y0
	SUBQ   $4, CX
	JL     nltail

	PCALIGN $32

nlloop4:
	PREFETCHT0 2048(SI) // see qdotQ8_0SIMD
	PREFETCHT0 2112(SI)
	NLBLK(0, 0, 0)
	NLBLK(18, 32, 4)
	NLBLK(36, 64, 8)
	NLBLK(54, 96, 12)
	ADDQ $72, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  nlloop4

nltail:
	ADDQ $4, CX
	JZ   nlsum

nlloop1:
	NLBLK(0, 0, 0)
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  nlloop1

nlsum:
	FOLD8(Y0, X0)
	ROWEND(nlrow)

// func qdotMXFP4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotMXFP4SIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x00010001, Y14, X14)
	VBROADCASTI128 fp4Levels<>(SB), Y13

mxrow:
	ROWSTART
	VXORPS Y0, Y0, Y0
	SUBQ   $4, CX
	JL     mxtail

	PCALIGN $32

mxloop4:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	MXBLK(0, 0, 0)
	MXBLK(17, 32, 4)
	MXBLK(34, 64, 8)
	MXBLK(51, 96, 12)
	ADDQ $68, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  mxloop4

mxtail:
	ADDQ $4, CX
	JZ   mxsum

mxloop1:
	MXBLK(0, 0, 0)
	ADDQ $17, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  mxloop1

mxsum:
	FOLD8(Y0, X0)
	ROWEND(mxrow)

// ---------------------------------------------------------------- IQ4_XS

// XSSUB adds sub-block ib of the IQ4_XS super-block at SI (activations at
// DI) to the int32 lanes Y1: its levels times the activations, the
// int16-pair sums times its scale ls−32 (VPMADDWD by the broadcast word).
// ls: the nibble sh of scales_l byte sl, bits hs, hs+1 of scales_h on top.
#define XSSUB(ib, sl, sh, hs) \
	LEVELS32(8+16*ib); \
	MOVBLZX      sl(SI), AX; \
	SHRL         $sh, AX; \
	ANDL         $15, AX; \
	MOVWLZX      2(SI), R9; \
	SHRL         $hs, R9; \
	ANDL         $3, R9; \
	SHLL         $4, R9; \
	ORL          R9, AX; \
	SUBL         $32, AX; \
	VMOVD        AX, X4; \
	VPBROADCASTW X4, Y4; \
	LANES32(32*ib, Y4); \
	VPADDD       Y2, Y1, Y1

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
	XSSUB(0, 4, 0, 0)
	XSSUB(1, 4, 4, 2)
	XSSUB(2, 5, 0, 4)
	XSSUB(3, 5, 4, 6)
	XSSUB(4, 6, 0, 8)
	XSSUB(5, 6, 4, 10)
	XSSUB(6, 7, 0, 12)
	XSSUB(7, 7, 4, 14)
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
