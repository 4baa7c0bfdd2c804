// The gated delta rule's state update (deltarule.go) on ymm and zmm
// registers: per row of S, pass 1 accumulates S_j·k in two vector
// accumulators, s = decay·Σ; e = β(v_j − s); pass 2 writes
// S_j = decay·S_j + e·k (one FMA onto e·k) and accumulates S_j·q.
//
// func deltaStepAVX2(out, S, q, k, v *float32, rows, d int, decay, beta float32)
// d a multiple of 16 (two 8-lane vectors a step).

#include "textflag.h"

// HSUM8 folds the 8 lanes of Y into lane 0 of X (T scratch).
#define HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS T, X, X \
	VHADDPS X, X, X \
	VHADDPS X, X, X

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
