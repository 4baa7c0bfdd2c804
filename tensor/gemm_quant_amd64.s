// AVX2 micro-kernel of the integer GEMM for K-quant weights; see gemm_quant.go.
//
//	func qgemmK2x4SIMD(a *byte, lda uintptr, x *int8, xs uintptr,
//	                   bs *int16, bss uintptr, dxv *float32, nsb int,
//	                   c *float32, ldc uintptr)
//
// adds to the 2×4 tile c (row stride ldc bytes) the products of 2 unpacked
// weight rows (a, stride lda bytes, nsb super-blocks of 448 bytes) with 4
// tokens of permuted Q8_K activations (int8 at x + t·xs, bsums at
// bs + t·bss, scales dxv[sb·8 + t]).
//
// Registers: Y0-Y7 int32 accumulators, row r token t in Y(4r+t); Y8 and Y9
// the row's two 32-byte halves of a 64-element group, Y10 its lane scales,
// Y11 and Y12 the products. Two rows, not three: the activations come
// from memory (one load per VPMADDUBSW), and with twelve accumulators the
// scales had to as well; three loads per two multiplies made the kernel
// load-bound (~110 against ~145 GFLOP/s per core for this tile). SI walks
// the rows (BX = lda), R8/R10 the activations (R9 = xs, R10 = token 3),
// DI/R11 the bsums (DX = bss), CX dxv, AX counts super-blocks. The two
// rows' float accumulators live at 0 and 32(SP): lane t of each 128-bit
// half is token t.

#include "textflag.h"

#include "fold_amd64.h"

// PAIR accumulates row (Y8, Y9: the two permuted halves of a 64-element
// group; Y10 its lane scales) × the activation bytes at xa, xb into acc,
// adding the two VPMADDUBSW results in int16 (|sum| ≤ 2·2·63·127 < 2¹⁵)
// before one VPMADDWD.
#define PAIR(xa, xb, acc) \
	VPMADDUBSW xa, Y8, Y11; \
	VPMADDUBSW xb, Y9, Y12; \
	VPADDW     Y12, Y11, Y11; \
	VPMADDWD   Y10, Y11, Y11; \
	VPADDD     Y11, acc, acc

// ROW runs one 64-element group (offset o, second half o2, scales at sa)
// of one row against 4 tokens.
#define ROW(qa, qb, sa, o, o2, a0, a1, a2, a3) \
	VMOVDQU qa, Y8; \
	VMOVDQU qb, Y9; \
	VMOVDQU sa, Y10; \
	PAIR(o(R8), o2(R8), a0); \
	PAIR(o(R8)(R9*1), o2(R8)(R9*1), a1); \
	PAIR(o(R8)(R9*2), o2(R8)(R9*2), a2); \
	PAIR(o(R10), o2(R10), a3)

#define GROUP(o, o2, so) \
	ROW(o(SI), o2(SI), so(SI), o, o2, Y0, Y1, Y2, Y3); \
	ROW(o(SI)(BX*1), o2(SI)(BX*1), so(SI)(BX*1), o, o2, Y4, Y5, Y6, Y7)

// EPI folds a row's four accumulators and its mins·bsums into its float
// accumulator at f(SP) and clears them. ma/da/na address the row's mins,
// d and dmin.
#define EPI(ma, da, na, f, a0, a1, a2, a3) \
	H2(a1, a0, Y14); \
	H2(a3, a2, Y14); \
	H4(a2, a0, Y14); \
	VMOVDQU      ma, Y13; \
	VPMADDWD     (DI), Y13, a1; \
	VPMADDWD     (DI)(DX*1), Y13, a2; \
	VPMADDWD     (DI)(DX*2), Y13, a3; \
	VPMADDWD     (R11), Y13, Y12; \
	H2(a2, a1, Y14); \
	H2(Y12, a3, Y14); \
	H4(a3, a1, Y14); \
	VCVTDQ2PS    a0, a0; \
	VCVTDQ2PS    a1, a1; \
	VBROADCASTSS da, Y12; \
	VMULPS       (CX), Y12, Y12; \
	VFMADD213PS  f(SP), Y12, a0; \
	VBROADCASTSS na, Y12; \
	VMULPS       (CX), Y12, Y12; \
	VFMADD231PS  a1, Y12, a0; \
	VMOVUPS      a0, f(SP); \
	VPXOR        a0, a0, a0; \
	VPXOR        a1, a1, a1; \
	VPXOR        a2, a2, a2; \
	VPXOR        a3, a3, a3

// FOLD adds the halves of the float accumulator at f(SP) into the four
// floats at ca.
#define FOLD(f, ca) \
	VMOVUPS      f(SP), Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VADDPS       ca, X0, X0; \
	VMOVUPS      X0, ca

// func qgemmK2x4SIMD(a *byte, lda uintptr, x *int8, xs uintptr, bs *int16, bss uintptr, dxv *float32, nsb int, c *float32, ldc uintptr)
TEXT ·qgemmK2x4SIMD(SB), NOSPLIT, $64-80
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), R8
	MOVQ xs+24(FP), R9
	LEAQ (R9)(R9*2), R10
	ADDQ R8, R10
	MOVQ bs+32(FP), DI
	MOVQ bss+40(FP), DX
	LEAQ (DX)(DX*2), R11
	ADDQ DI, R11
	MOVQ dxv+48(FP), CX
	MOVQ nsb+56(FP), AX

	VPXOR   Y0, Y0, Y0
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y0, 32(SP)
	VPXOR   Y1, Y1, Y1
	VPXOR   Y2, Y2, Y2
	VPXOR   Y3, Y3, Y3
	VPXOR   Y4, Y4, Y4
	VPXOR   Y5, Y5, Y5
	VPXOR   Y6, Y6, Y6
	VPXOR   Y7, Y7, Y7

sbloop:
	GROUP(0, 32, 256)
	GROUP(64, 96, 288)
	GROUP(128, 160, 320)
	GROUP(192, 224, 352)
	EPI(384(SI), 416(SI), 420(SI), 0, Y0, Y1, Y2, Y3)
	EPI(384(SI)(BX*1), 416(SI)(BX*1), 420(SI)(BX*1), 32, Y4, Y5, Y6, Y7)
	ADDQ $448, SI
	ADDQ $256, R8
	ADDQ $256, R10
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, CX
	DECQ AX
	JNZ  sbloop

	MOVQ c+64(FP), R12
	MOVQ ldc+72(FP), R13
	FOLD(0, (R12))
	FOLD(32, (R12)(R13*1))
	VZEROUPPER
	RET

// func qgemmQ8x8SIMD(w *byte, ldw uintptr, dw *float32, xm *int8, dxv *float32, nb int, c *float32, ldc uintptr)
//
// adds to the 8×4 tile c (row stride ldc bytes) the products of 8 rows of
// Q8_0 blocks (w, row stride ldw bytes, nb blocks of 34 bytes; their
// scales as float32 at dw[b·8 + r]) with a group of 4 tokens of Q8_0
// activations in mixed layout: xm[b·128 + q·32 + t·8 + i] is element
// 32b + 8q + i of token t, and dxv[b·8 + 2t], dxv[b·8 + 2t + 1] its scale.
//
// Per block Y0-Y3 hold |xm| of the four quarters. Per row and quarter the
// 8 weights are broadcast to all four tokens (VPBROADCASTQ), given the
// activations' signs (VPSIGNB), multiplied by |x| (VPMADDUBSW) and summed
// to int32 (VPMADDWD by ones, Y4): int32 lanes 2t, 2t+1 belong to token t,
// so no horizontal folding is needed per block. The row's int32 sum Y6 is
// converted and multiplied by dW·dx into its float accumulator (Y8-Y15);
// the lane pairs and halves are added once at the end. Weights must not
// hold −128 (w·sign(x) would wrap); the caller checks.
#define Q8QUARTER(wa, xo, ax) \
	VPBROADCASTQ wa, Y5; \
	VPSIGNB      xo(R8), Y5, Y5; \
	VPMADDUBSW   Y5, ax, Y5; \
	VPMADDWD     Y4, Y5, Y5; \
	VPADDD       Y5, Y6, Y6

#define Q8ROW(w0, w1, w2, w3, dwo, F) \
	VPBROADCASTQ w0, Y5; \
	VPSIGNB      0(R8), Y5, Y5; \
	VPMADDUBSW   Y5, Y0, Y5; \
	VPMADDWD     Y4, Y5, Y6; \
	Q8QUARTER(w1, 32, Y1); \
	Q8QUARTER(w2, 64, Y2); \
	Q8QUARTER(w3, 96, Y3); \
	VCVTDQ2PS    Y6, Y6; \
	VBROADCASTSS dwo(DI), Y7; \
	VMULPS       (CX), Y7, Y7; \
	VFMADD231PS  Y6, Y7, F

// Q8OUT adds accumulator F's four token sums to the four floats at (R9)
// and moves R9 to the next row.
#define Q8OUT(F, XF) \
	VEXTRACTF128 $1, F, X5; \
	VHADDPS      X5, XF, X6; \
	VADDPS       (R9), X6, X6; \
	VMOVUPS      X6, (R9); \
	ADDQ         R10, R9

TEXT ·qgemmQ8x8SIMD(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ ldw+8(FP), BX
	LEAQ (BX)(BX*2), R13
	LEAQ (SI)(R13*1), R12
	LEAQ (R12)(BX*4), R11
	MOVQ dw+16(FP), DI
	MOVQ xm+24(FP), R8
	MOVQ dxv+32(FP), CX
	MOVQ nb+40(FP), AX

	MOVL         $0x00010001, DX
	VMOVD        DX, X4
	VPBROADCASTD X4, Y4
	VXORPS       Y8, Y8, Y8
	VXORPS       Y9, Y9, Y9
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11
	VXORPS       Y12, Y12, Y12
	VXORPS       Y13, Y13, Y13
	VXORPS       Y14, Y14, Y14
	VXORPS       Y15, Y15, Y15

q8loop:
	VPABSB 0(R8), Y0
	VPABSB 32(R8), Y1
	VPABSB 64(R8), Y2
	VPABSB 96(R8), Y3
	Q8ROW(2(SI), 10(SI), 18(SI), 26(SI), 0, Y8)
	Q8ROW(2(SI)(BX*1), 10(SI)(BX*1), 18(SI)(BX*1), 26(SI)(BX*1), 4, Y9)
	Q8ROW(2(SI)(BX*2), 10(SI)(BX*2), 18(SI)(BX*2), 26(SI)(BX*2), 8, Y10)
	Q8ROW(2(R12), 10(R12), 18(R12), 26(R12), 12, Y11)
	Q8ROW(2(SI)(BX*4), 10(SI)(BX*4), 18(SI)(BX*4), 26(SI)(BX*4), 16, Y12)
	Q8ROW(2(R12)(BX*2), 10(R12)(BX*2), 18(R12)(BX*2), 26(R12)(BX*2), 20, Y13)
	Q8ROW(2(R12)(R13*1), 10(R12)(R13*1), 18(R12)(R13*1), 26(R12)(R13*1), 24, Y14)
	Q8ROW(2(R11), 10(R11), 18(R11), 26(R11), 28, Y15)
	ADDQ $34, SI
	ADDQ $34, R12
	ADDQ $34, R11
	ADDQ $32, DI
	ADDQ $128, R8
	ADDQ $32, CX
	DECQ AX
	JNZ  q8loop

	MOVQ c+48(FP), R9
	MOVQ ldc+56(FP), R10
	Q8OUT(Y8, X8)
	Q8OUT(Y9, X9)
	Q8OUT(Y10, X10)
	Q8OUT(Y11, X11)
	Q8OUT(Y12, X12)
	Q8OUT(Y13, X13)
	Q8OUT(Y14, X14)
	Q8OUT(Y15, X15)
	VZEROUPPER
	RET
