// Macros shared by the amd64 row-dot kernels (rowdot_quant_amd64.s,
// rowdot_iq_amd64.s). Both take the arguments
// (dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32,
// aux unsafe.Pointer, nb int), with R10 walking the weight rows and R8 dst.

// ROWSTART points the walkers at the start of the current row.
#define ROWSTART \
	MOVQ R10, SI; \
	MOVQ q+32(FP), DI; \
	MOVQ d+40(FP), DX; \
	MOVQ aux+48(FP), BX; \
	MOVQ nb+56(FP), CX

// ROWEND stores X0's low float as this row's result and moves to the next
// row, jumping to label if any are left.
#define ROWEND(label) \
	VMOVSS X0, (R8); \
	ADDQ   $4, R8; \
	ADDQ   stride+24(FP), R10; \
	DECQ   rows+8(FP); \
	JNZ    label; \
	VZEROUPPER; \
	RET

// FOLD8 folds the 8-lane accumulator Y (X its low half) into X's low
// float as ((y0+y1)+(y2+y3)) + ((y4+y5)+(y6+y7)) — the order in which the
// multi-token kernels (qdotQ8_0x4SIMD) fold theirs. X9 is clobbered.
#define FOLD8(Y, X) \
	VEXTRACTF128 $1, Y, X9; \
	VHADDPS      X9, X, X; \
	VHADDPS      X, X, X; \
	VMOVSHDUP    X, X9; \
	VADDSS       X9, X, X

// BCAST32 broadcasts the 32-bit constant val to every lane of reg (xreg its
// low half; AX clobbered).
#define BCAST32(val, reg, xreg) \
	MOVL         val, AX; \
	VMOVD        AX, xreg; \
	VPBROADCASTD xreg, reg

// The Q4_K/Q5_K super-block steps of the single-token kernels, shared by
// the ymm ones (rowdot_quant_amd64.s) and the zmm ones
// (rowdot_kquant_avx512_amd64.s).

// K4SCALES unpacks the 12 packed scale bytes at 4(SI) of a Q4_K/Q5_K
// super-block: the eight 6-bit scales as words in both 128-bit halves of
// Y2, the eight 6-bit mins as dwords in Y3 (see scaleMinK4). With
// u0, u1, u2 the three little-endian words of the packed bytes:
//
//	sc[0..3] = u0 & 0x3f..            m[0..3] = u1 & 0x3f..
//	sc[4..7] = u2 & 0x0f.. | (u0>>2) & 0x30..
//	m[4..7]  = (u2>>4) & 0x0f.. | (u1>>2) & 0x30..
//
// computed for scales and mins together on [u0 u1] and [u2 u2>>4] and
// interleaved into [sc0-3 sc4-7 m0-3 m4-7]. Y13 = 0x3f, Y12 = 0x30 bytes,
// Y15 = 0x0f bytes.
#define K4SCALES(ptr, ysc, xsc, ymn, xmn, xt1, xt2) \
	VMOVQ       4(ptr), xsc; \
	VMOVD       12(ptr), xmn; \
	VPSRLW      $2, xsc, xt1; \
	VPAND       X13, xsc, xsc; \
	VPAND       X12, xt1, xt1; \
	VPSRLW      $4, xmn, xt2; \
	VPUNPCKLDQ  xt2, xmn, xmn; \
	VPAND       X15, xmn, xmn; \
	VPOR        xt1, xmn, xmn; \
	VPUNPCKLDQ  xmn, xsc, xsc; \
	VPSRLDQ     $8, xsc, xmn; \
	VPMOVZXBD   xmn, ymn; \
	VPMOVZXBW   xsc, xsc; \
	VINSERTI128 $1, xsc, ysc, ysc

// K4NEXT points R9 at the next super-block of bb bytes, or at this one
// for the row's last (so the prefetched scales never read past the row).
#define K4NEXT(bb) \
	LEAQ    bb(SI), R9; \
	CMPQ    CX, $1; \
	CMOVQEQ SI, R9

// K4MIN sets Y4 = Σ-ready min products m_j·(bsums[2j]+bsums[2j+1]) (int32
// per lane j). Y14 = ones (words).
#define K4MIN \
	VPMADDWD (BX), Y14, Y4; \
	VPMULLD  Y3, Y4, Y4

// K4FINISH: acc Y0 += da·(d·Σint − dmin·Σmin) with the integer sums in
// Y5 and Y4, f16 d and dmin at 0(SI), 2(SI), da at (DX). Clobbers Y10, Y11.
#define K4FINISH \
	VCVTDQ2PS    Y5, Y5; \
	VCVTDQ2PS    Y4, Y4; \
	VPBROADCASTW (SI), X10; \
	VCVTPH2PS    X10, Y10; \
	VPBROADCASTW 2(SI), X11; \
	VCVTPH2PS    X11, Y11; \
	VMULPS       Y10, Y5, Y5; \
	VFNMADD231PS Y11, Y4, Y5; \
	VBROADCASTSS (DX), Y10; \
	VFMADD231PS  Y10, Y5, Y0

// The fold of the eight-token zmm kernels (qdotQ8_0x8Z, qdotQ4_Kx8Z).

// Q8ZFOLD folds pairs Za (tokens 0, 1 of four) and Zb (tokens 2, 3) into
// X (= Ya's low half): lane t = token t's ((v0+v1)+(v2+v3))+((v4+v5)+(v6+v7)),
// as q80x4sum and X4ROWEND fold.
#define Q8ZFOLD(Za, Ya, Xa, Zb, Yb) \
	VEXTRACTF64X4 $1, Za, Y8; \
	VHADDPS       Y8, Ya, Ya; \
	VEXTRACTF64X4 $1, Zb, Y9; \
	VHADDPS       Y9, Yb, Yb; \
	VHADDPS       Yb, Ya, Ya; \
	VEXTRACTF128  $1, Ya, X10; \
	VADDPS        X10, Xa, Xa

// X8STORE, the row end of the eight-token K-quant and IQ4_XS kernels
// (func(dst, rows, w, stride, q, bs, dz, nb, n, ldd)), folds the four
// pairs' accumulators Z0-Z3 (Q8ZFOLD, = FOLD8 per token), stores the
// eight tokens' results of this row at dst + t·ldd (R8 = dst) and moves to
// the next row (R10), jumping to label if any are left.
#define X8STORE(label) \
	Q8ZFOLD(Z0, Y0, X0, Z1, Y1); \
	Q8ZFOLD(Z2, Y2, X2, Z3, Y3); \
	MOVQ       ldd+72(FP), AX; \
	LEAQ       (AX)(AX*2), R13; \
	LEAQ       (R8)(AX*4), R14; \
	VMOVSS     X0, (R8); \
	VEXTRACTPS $1, X0, (R8)(AX*1); \
	VEXTRACTPS $2, X0, (R8)(AX*2); \
	VEXTRACTPS $3, X0, (R8)(R13*1); \
	VMOVSS     X2, (R14); \
	VEXTRACTPS $1, X2, (R14)(AX*1); \
	VEXTRACTPS $2, X2, (R14)(AX*2); \
	VEXTRACTPS $3, X2, (R14)(R13*1); \
	ADDQ       $4, R8; \
	ADDQ       stride+24(FP), R10; \
	DECQ       rows+8(FP); \
	JNZ        label; \
	VZEROUPPER; \
	RET
