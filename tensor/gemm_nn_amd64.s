// GemmNN's kernels (gemm_nn.go): a 4-row block of dst kept in registers
// over all of k, each step one row of b (two vectors) times four
// broadcast elements of a's rows, added by FMA in k order.

#include "textflag.h"

// func gemmNN4x32Z(a *float32, lda uintptr, b *float32, ldb uintptr, k int, dst *float32, ldd uintptr)
TEXT ·gemmNN4x32Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), AX
	MOVQ lda+8(FP), R8
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R9
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), DX
	MOVQ ldd+48(FP), R10
	LEAQ (AX)(R8*1), BX
	LEAQ (AX)(R8*2), R11
	LEAQ (R11)(R8*1), R12
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7

loopz:
	VMOVUPS      (DI), Z8
	VMOVUPS      64(DI), Z9
	VBROADCASTSS (AX), Z10
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z9, Z10, Z1
	VBROADCASTSS (BX), Z11
	VFMADD231PS  Z8, Z11, Z2
	VFMADD231PS  Z9, Z11, Z3
	VBROADCASTSS (R11), Z12
	VFMADD231PS  Z8, Z12, Z4
	VFMADD231PS  Z9, Z12, Z5
	VBROADCASTSS (R12), Z13
	VFMADD231PS  Z8, Z13, Z6
	VFMADD231PS  Z9, Z13, Z7
	ADDQ         $4, AX
	ADDQ         $4, BX
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         R9, DI
	DECQ         CX
	JNZ          loopz

	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	ADDQ    R10, DX
	VMOVUPS Z2, (DX)
	VMOVUPS Z3, 64(DX)
	ADDQ    R10, DX
	VMOVUPS Z4, (DX)
	VMOVUPS Z5, 64(DX)
	ADDQ    R10, DX
	VMOVUPS Z6, (DX)
	VMOVUPS Z7, 64(DX)
	VZEROUPPER
	RET

// func gemmNN4x16(a *float32, lda uintptr, b *float32, ldb uintptr, k int, dst *float32, ldd uintptr)
TEXT ·gemmNN4x16(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), AX
	MOVQ lda+8(FP), R8
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R9
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), DX
	MOVQ ldd+48(FP), R10
	LEAQ (AX)(R8*1), BX
	LEAQ (AX)(R8*2), R11
	LEAQ (R11)(R8*1), R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

loopy:
	VMOVUPS      (DI), Y8
	VMOVUPS      32(DI), Y9
	VBROADCASTSS (AX), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (BX), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (R11), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (R12), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $4, AX
	ADDQ         $4, BX
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         R9, DI
	DECQ         CX
	JNZ          loopy

	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ    R10, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ    R10, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ    R10, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	VZEROUPPER
	RET
