// The gated delta rule's state update (deltarule.go) on ymm and zmm
// registers: per row of S, pass 1 accumulates S_j·k in two vector
// accumulators, s = decay·Σ; e = β(v_j − s); pass 2 writes
// S_j = decay·S_j + e·k (one FMA onto e·k) and accumulates S_j·q.
//
// func deltaStepAVX2(out, S, q, k, v *float32, rows, d int, decay, beta float32)
// d a multiple of 16 (two 8-lane vectors a step).

#include "textflag.h"
#include "simd_amd64.h"

// HSUM8 folds the 8 lanes of Y into lane 0 of X (T scratch).
#define HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS T, X, X \
	VHADDPS X, X, X \
	VHADDPS X, X, X

// ACOL2(ko, so, lo, hi): pass 2 of deltaStepsBlockedAVX2 for column BX/4
// + ko/4 of the block at AX + so: both halves S = decay·S + e·k (e in
// Y14/Y15, decay Y12), stored, and S·q added into lo and hi.
#define ACOL2(ko, so, lo, hi) \
	VBROADCASTSS ko(R9)(BX*1), Y8; \
	VBROADCASTSS ko(R8)(BX*1), Y9; \
	VMULPS       Y8, Y14, Y10; \
	VMULPS       Y8, Y15, Y11; \
	VMOVUPS      so(AX), Y8; \
	VFMADD213PS  Y10, Y12, Y8; \
	VMOVUPS      Y8, so(AX); \
	VFMADD231PS  Y9, Y8, lo; \
	VMOVUPS      so+32(AX), Y13; \
	VFMADD213PS  Y11, Y12, Y13; \
	VMOVUPS      Y13, so+32(AX); \
	VFMADD231PS  Y9, Y13, hi

// The row-block kernels' walk (deltaStepsBlocked512, deltaStepsBlockedAVX2),
// over the arguments (out, S, q, k, v, decay, beta *float32, ldo, ldqk,
// ldv, T, dk, blocks int): R12, CX, DX the out, q/k and v strides in
// bytes, SI the block, R13 its index, DI/R8/R9/R10 the token's out, q, k
// and v, R11 the token.
//
// DBSTRIDES loads the strides (in bytes) and S.
#define DBSTRIDES \
	MOVQ ldo+56(FP), R12; \
	SHLQ $2, R12; \
	MOVQ ldqk+64(FP), CX; \
	SHLQ $2, CX; \
	MOVQ ldv+72(FP), DX; \
	SHLQ $2, DX; \
	MOVQ S+8(FP), SI

// DBBLOCK(done) starts block R13 at its first token, or jumps to done
// when every block is done.
#define DBBLOCK(done) \
	CMPQ R13, blocks+96(FP); \
	JAE  done; \
	MOVQ R13, AX; \
	SHLQ $6, AX; \
	MOVQ out+0(FP), DI; \
	ADDQ AX, DI; \
	MOVQ v+32(FP), R10; \
	ADDQ AX, R10; \
	MOVQ q+16(FP), R8; \
	MOVQ k+24(FP), R9; \
	XORQ R11, R11

// DBNEXT(tok, block) moves to the next token (back to tok) or, after
// the last, to the next block of d_k·16 floats (back to block).
#define DBNEXT(tok, block) \
	ADDQ CX, R8; \
	ADDQ CX, R9; \
	ADDQ DX, R10; \
	ADDQ R12, DI; \
	INCQ R11; \
	CMPQ R11, T+80(FP); \
	JB   tok; \
	MOVQ dk+88(FP), AX; \
	SHLQ $6, AX; \
	ADDQ AX, SI; \
	INCQ R13; \
	JMP  block

// DBFOLD folds the ymm kernel's accumulators (a0+a1)+(a2+a3): rows 0-7
// into Y0, rows 8-15 into Y4.
#define DBFOLD \
	VADDPS Y1, Y0, Y0; \
	VADDPS Y3, Y2, Y2; \
	VADDPS Y2, Y0, Y0; \
	VADDPS Y5, Y4, Y4; \
	VADDPS Y7, Y6, Y6; \
	VADDPS Y6, Y4, Y4

TEXT ·deltaStepAVX2(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ S+8(FP), SI
	MOVQ q+16(FP), R8
	MOVQ k+24(FP), R9
	MOVQ v+32(FP), R10
	MOVQ rows+40(FP), R11
	MOVQ d+48(FP), CX
	VBROADCASTSS decay+56(FP), Y14
	VMOVSS beta+60(FP), X13
	XORQ BX, BX

row2:
	// Pass 1: Y0 + Y1 = S_j·k.
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ DX, DX

pass1:
	VMOVUPS (SI)(DX*4), Y2
	VMOVUPS 32(SI)(DX*4), Y3
	VFMADD231PS (R9)(DX*4), Y2, Y0
	VFMADD231PS 32(R9)(DX*4), Y3, Y1
	ADDQ $16, DX
	CMPQ DX, CX
	JB   pass1

	VADDPS Y1, Y0, Y0
	HSUM8(Y0, X0, X5)
	VMULSS X14, X0, X0           // s = decay·(S_j·k)
	VMOVSS (R10)(BX*4), X4       // v_j
	VSUBSS X0, X4, X4            // v_j − s
	VMULSS X13, X4, X4           // e = β(v_j − s)
	VBROADCASTSS X4, Y4

	// Pass 2: S_j = decay·S_j + e·k; Y0 + Y1 = S_j·q.
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ DX, DX

pass2:
	VMULPS (R9)(DX*4), Y4, Y2
	VMULPS 32(R9)(DX*4), Y4, Y3
	VFMADD231PS (SI)(DX*4), Y14, Y2
	VFMADD231PS 32(SI)(DX*4), Y14, Y3
	VMOVUPS Y2, (SI)(DX*4)
	VMOVUPS Y3, 32(SI)(DX*4)
	VFMADD231PS (R8)(DX*4), Y2, Y0
	VFMADD231PS 32(R8)(DX*4), Y3, Y1
	ADDQ $16, DX
	CMPQ DX, CX
	JB   pass2

	VADDPS Y1, Y0, Y0
	HSUM8(Y0, X0, X5)
	VMOVSS X0, (DI)(BX*4)

	LEAQ (SI)(CX*4), SI
	INCQ BX
	CMPQ BX, R11
	JB   row2
	VZEROUPPER
	RET

// func deltaStepAVX512(out, S, q, k, v *float32, rows, d int, decay, beta float32)
// d a multiple of 32 (two 16-lane vectors a step).
TEXT ·deltaStepAVX512(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ S+8(FP), SI
	MOVQ q+16(FP), R8
	MOVQ k+24(FP), R9
	MOVQ v+32(FP), R10
	MOVQ rows+40(FP), R11
	MOVQ d+48(FP), CX
	VBROADCASTSS decay+56(FP), Z14
	VMOVSS beta+60(FP), X13
	XORQ BX, BX
	MOVQ R11, R12
	ANDQ $-2, R12 // rows taken two at a time

	// Two rows at once (SI row j, R13 row j+1): the same instructions per
	// row as row16 below (so the same bits), interleaved so that one row's
	// sums and scalar step overlap the other's; k and q are loaded once
	// for both.
pair16:
	CMPQ BX, R12
	JAE  single16
	LEAQ (SI)(CX*4), R13
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	XORQ DX, DX

ppass1:
	VMOVUPS (R9)(DX*4), Z15
	VMOVUPS 64(R9)(DX*4), Z16
	VMOVUPS (SI)(DX*4), Z2
	VMOVUPS 64(SI)(DX*4), Z3
	VMOVUPS (R13)(DX*4), Z8
	VMOVUPS 64(R13)(DX*4), Z9
	VFMADD231PS Z15, Z2, Z0
	VFMADD231PS Z16, Z3, Z1
	VFMADD231PS Z15, Z8, Z6
	VFMADD231PS Z16, Z9, Z7
	ADDQ $32, DX
	CMPQ DX, CX
	JB   ppass1

	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y5
	VADDPS Y5, Y0, Y0
	HSUM8(Y0, X0, X5)
	VADDPS Z7, Z6, Z6
	VEXTRACTF64X4 $1, Z6, Y11
	VADDPS Y11, Y6, Y6
	HSUM8(Y6, X6, X11)
	VMULSS X14, X0, X0
	VMULSS X14, X6, X6
	VMOVSS (R10)(BX*4), X4
	VMOVSS 4(R10)(BX*4), X10
	VSUBSS X0, X4, X4
	VSUBSS X6, X10, X10
	VMULSS X13, X4, X4
	VMULSS X13, X10, X10
	VBROADCASTSS X4, Z4
	VBROADCASTSS X10, Z10

	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	XORQ DX, DX

ppass2:
	VMOVUPS (R9)(DX*4), Z15
	VMOVUPS 64(R9)(DX*4), Z16
	VMULPS Z15, Z4, Z2
	VMULPS Z16, Z4, Z3
	VMULPS Z15, Z10, Z8
	VMULPS Z16, Z10, Z9
	VFMADD231PS (SI)(DX*4), Z14, Z2
	VFMADD231PS 64(SI)(DX*4), Z14, Z3
	VFMADD231PS (R13)(DX*4), Z14, Z8
	VFMADD231PS 64(R13)(DX*4), Z14, Z9
	VMOVUPS Z2, (SI)(DX*4)
	VMOVUPS Z3, 64(SI)(DX*4)
	VMOVUPS Z8, (R13)(DX*4)
	VMOVUPS Z9, 64(R13)(DX*4)
	VMOVUPS (R8)(DX*4), Z17
	VMOVUPS 64(R8)(DX*4), Z18
	VFMADD231PS Z17, Z2, Z0
	VFMADD231PS Z18, Z3, Z1
	VFMADD231PS Z17, Z8, Z6
	VFMADD231PS Z18, Z9, Z7
	ADDQ $32, DX
	CMPQ DX, CX
	JB   ppass2

	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y5
	VADDPS Y5, Y0, Y0
	HSUM8(Y0, X0, X5)
	VMOVSS X0, (DI)(BX*4)
	VADDPS Z7, Z6, Z6
	VEXTRACTF64X4 $1, Z6, Y11
	VADDPS Y11, Y6, Y6
	HSUM8(Y6, X6, X11)
	VMOVSS X6, 4(DI)(BX*4)

	LEAQ (R13)(CX*4), SI
	ADDQ $2, BX
	JMP  pair16

single16:
	CMPQ BX, R11
	JAE  done16

row16:
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	XORQ DX, DX

zpass1:
	VMOVUPS (SI)(DX*4), Z2
	VMOVUPS 64(SI)(DX*4), Z3
	VFMADD231PS (R9)(DX*4), Z2, Z0
	VFMADD231PS 64(R9)(DX*4), Z3, Z1
	ADDQ $32, DX
	CMPQ DX, CX
	JB   zpass1

	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y5
	VADDPS Y5, Y0, Y0
	HSUM8(Y0, X0, X5)
	VMULSS X14, X0, X0
	VMOVSS (R10)(BX*4), X4
	VSUBSS X0, X4, X4
	VMULSS X13, X4, X4
	VBROADCASTSS X4, Z4

	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	XORQ DX, DX

zpass2:
	VMULPS (R9)(DX*4), Z4, Z2
	VMULPS 64(R9)(DX*4), Z4, Z3
	VFMADD231PS (SI)(DX*4), Z14, Z2
	VFMADD231PS 64(SI)(DX*4), Z14, Z3
	VMOVUPS Z2, (SI)(DX*4)
	VMOVUPS Z3, 64(SI)(DX*4)
	VFMADD231PS (R8)(DX*4), Z2, Z0
	VFMADD231PS 64(R8)(DX*4), Z3, Z1
	ADDQ $32, DX
	CMPQ DX, CX
	JB   zpass2

	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y5
	VADDPS Y5, Y0, Y0
	HSUM8(Y0, X0, X5)
	VMOVSS X0, (DI)(BX*4)

	LEAQ (SI)(CX*4), SI
	INCQ BX
	CMPQ BX, R11
	JB   row16

done16:
	VZEROUPPER
	RET

// func deltaStepsBlocked512(out, S, q, k, v, decay, beta *float32, ldo, ldqk, ldv, T, dk, blocks int)
//
// DeltaStepsBlocked on zmm registers, lanes = the 16 rows of a row block
// (deltarule_blocked.go): S is blocks of d_k columns of 16 values, and a
// column times a broadcast k_i or q_i is 16 rows' terms at once, so the
// dot products need no horizontal folds. Per block, token by token (the
// block, 8 KiB at d_k = 128, stays in L1 across the tokens):
//
//	s = Σ_i S_i k_i      (8 accumulators, column i into Z(i mod 8); folded as a tree)
//	e = β(v − decay·s)
//	S_i = decay·S_i + e·k_i,  out = Σ_i S_i q_i   (the same accumulators and fold)
//
// d_k a multiple of 8 (8 columns a step); strides in floats.
TEXT ·deltaStepsBlocked512(SB), NOSPLIT, $0-104
	DBSTRIDES
	XORQ R13, R13 // block b

bblock:
	DBBLOCK(bdone)

btok:
	MOVQ decay+40(FP), AX
	VBROADCASTSS (AX)(R11*4), Z30
	MOVQ beta+48(FP), AX
	VBROADCASTSS (AX)(R11*4), Z29
	// Pass 1: s = S k.
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	MOVQ SI, AX
	XORQ BX, BX

bpass1:
	VMOVUPS 0(AX), Z8
	VMOVUPS 64(AX), Z9
	VMOVUPS 128(AX), Z10
	VMOVUPS 192(AX), Z11
	VMOVUPS 256(AX), Z12
	VMOVUPS 320(AX), Z13
	VMOVUPS 384(AX), Z14
	VMOVUPS 448(AX), Z15
	VFMADD231PS.BCST 0(R9)(BX*4), Z8, Z0
	VFMADD231PS.BCST 4(R9)(BX*4), Z9, Z1
	VFMADD231PS.BCST 8(R9)(BX*4), Z10, Z2
	VFMADD231PS.BCST 12(R9)(BX*4), Z11, Z3
	VFMADD231PS.BCST 16(R9)(BX*4), Z12, Z4
	VFMADD231PS.BCST 20(R9)(BX*4), Z13, Z5
	VFMADD231PS.BCST 24(R9)(BX*4), Z14, Z6
	VFMADD231PS.BCST 28(R9)(BX*4), Z15, Z7
	ADDQ $512, AX
	ADDQ $8, BX
	CMPQ BX, dk+88(FP)
	JB   bpass1
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z5, Z4, Z4
	VADDPS Z7, Z6, Z6
	VADDPS Z2, Z0, Z0
	VADDPS Z6, Z4, Z4
	VADDPS Z4, Z0, Z0
	// e = β(v − decay·s).
	VMULPS Z30, Z0, Z0
	VMOVUPS (R10), Z1
	VSUBPS Z0, Z1, Z1
	VMULPS Z29, Z1, Z28
	// Pass 2: S_i = decay·S_i + e·k_i; out = S q.
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	MOVQ SI, AX
	XORQ BX, BX

bpass2:
	VMOVUPS 0(AX), Z8
	VMOVUPS 64(AX), Z9
	VMOVUPS 128(AX), Z10
	VMOVUPS 192(AX), Z11
	VMOVUPS 256(AX), Z12
	VMOVUPS 320(AX), Z13
	VMOVUPS 384(AX), Z14
	VMOVUPS 448(AX), Z15
	VMULPS.BCST 0(R9)(BX*4), Z28, Z16
	VMULPS.BCST 4(R9)(BX*4), Z28, Z17
	VMULPS.BCST 8(R9)(BX*4), Z28, Z18
	VMULPS.BCST 12(R9)(BX*4), Z28, Z19
	VMULPS.BCST 16(R9)(BX*4), Z28, Z20
	VMULPS.BCST 20(R9)(BX*4), Z28, Z21
	VMULPS.BCST 24(R9)(BX*4), Z28, Z22
	VMULPS.BCST 28(R9)(BX*4), Z28, Z23
	VFMADD213PS Z16, Z30, Z8
	VFMADD213PS Z17, Z30, Z9
	VFMADD213PS Z18, Z30, Z10
	VFMADD213PS Z19, Z30, Z11
	VFMADD213PS Z20, Z30, Z12
	VFMADD213PS Z21, Z30, Z13
	VFMADD213PS Z22, Z30, Z14
	VFMADD213PS Z23, Z30, Z15
	VMOVUPS Z8, 0(AX)
	VMOVUPS Z9, 64(AX)
	VMOVUPS Z10, 128(AX)
	VMOVUPS Z11, 192(AX)
	VMOVUPS Z12, 256(AX)
	VMOVUPS Z13, 320(AX)
	VMOVUPS Z14, 384(AX)
	VMOVUPS Z15, 448(AX)
	VFMADD231PS.BCST 0(R8)(BX*4), Z8, Z0
	VFMADD231PS.BCST 4(R8)(BX*4), Z9, Z1
	VFMADD231PS.BCST 8(R8)(BX*4), Z10, Z2
	VFMADD231PS.BCST 12(R8)(BX*4), Z11, Z3
	VFMADD231PS.BCST 16(R8)(BX*4), Z12, Z4
	VFMADD231PS.BCST 20(R8)(BX*4), Z13, Z5
	VFMADD231PS.BCST 24(R8)(BX*4), Z14, Z6
	VFMADD231PS.BCST 28(R8)(BX*4), Z15, Z7
	ADDQ $512, AX
	ADDQ $8, BX
	CMPQ BX, dk+88(FP)
	JB   bpass2
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z5, Z4, Z4
	VADDPS Z7, Z6, Z6
	VADDPS Z2, Z0, Z0
	VADDPS Z6, Z4, Z4
	VADDPS Z4, Z0, Z0
	VMOVUPS Z0, (DI)
	DBNEXT(btok, bblock)

bdone:
	VZEROUPPER
	RET

// func deltaStepsBlockedAVX2(out, S, q, k, v, decay, beta *float32, ldo, ldqk, ldv, T, dk, blocks int)
//
// DeltaStepsBlocked on ymm registers: a row block's 16 lanes are two
// halves of 8 (Y0-Y3 and Y4-Y7 the low and high rows' accumulators),
// column i into accumulator i mod 4, folded (a0+a1)+(a2+a3); otherwise
// deltaStepsBlocked512's steps (e·k_i rounded, then one FMA with
// decay·S_i). Per block, token by token, so the block (8 KiB at d_k =
// 128) stays in L1 for all of a call's tokens, where DeltaStep streams
// the head's whole state (64 KiB) through L2 for every token. d_k a
// multiple of 4; strides in floats.
TEXT ·deltaStepsBlockedAVX2(SB), NOSPLIT, $0-104
	DBSTRIDES
	MOVQ dk+88(FP), R14
	SHLQ $2, R14 // d_k·4: the column index's end in bytes of k
	XORQ R13, R13 // block b

ablock:
	DBBLOCK(adone)

atok:
	// Pass 1: s = S k.
	ZERO8
	MOVQ SI, AX
	XORQ BX, BX

apass1:
	VBROADCASTSS 0(R9)(BX*1), Y8
	VBROADCASTSS 4(R9)(BX*1), Y9
	VBROADCASTSS 8(R9)(BX*1), Y10
	VBROADCASTSS 12(R9)(BX*1), Y11
	VFMADD231PS  0(AX), Y8, Y0
	VFMADD231PS  32(AX), Y8, Y4
	VFMADD231PS  64(AX), Y9, Y1
	VFMADD231PS  96(AX), Y9, Y5
	VFMADD231PS  128(AX), Y10, Y2
	VFMADD231PS  160(AX), Y10, Y6
	VFMADD231PS  192(AX), Y11, Y3
	VFMADD231PS  224(AX), Y11, Y7
	ADDQ         $256, AX
	ADDQ         $16, BX
	CMPQ         BX, R14
	JB           apass1
	DBFOLD
	// e = β(v − decay·s) into Y14 (rows 0-7), Y15 (rows 8-15).
	MOVQ         decay+40(FP), AX
	VBROADCASTSS (AX)(R11*4), Y12
	MOVQ         beta+48(FP), AX
	VBROADCASTSS (AX)(R11*4), Y13
	VMULPS       Y12, Y0, Y0
	VMULPS       Y12, Y4, Y4
	VMOVUPS      (R10), Y14
	VMOVUPS      32(R10), Y15
	VSUBPS       Y0, Y14, Y14
	VSUBPS       Y4, Y15, Y15
	VMULPS       Y13, Y14, Y14
	VMULPS       Y13, Y15, Y15
	// Pass 2: S_i = decay·S_i + e·k_i; out = S q.
	ZERO8
	MOVQ SI, AX
	XORQ BX, BX

apass2:
	ACOL2(0, 0, Y0, Y4)
	ACOL2(4, 64, Y1, Y5)
	ACOL2(8, 128, Y2, Y6)
	ACOL2(12, 192, Y3, Y7)
	ADDQ $256, AX
	ADDQ $16, BX
	CMPQ BX, R14
	JB   apass2
	DBFOLD
	VMOVUPS Y0, (DI)
	VMOVUPS Y4, 32(DI)
	DBNEXT(atok, ablock)

adone:
	VZEROUPPER
	RET
