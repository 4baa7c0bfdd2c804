// AVX-512F kernels for amd64: the float row dots and GEMM tiles of
// kernels_float_amd64.s on 512-bit zmm registers, selected by hasAVX512
// (kernels_float_amd64.go). Same Go wrappers, same arguments, same
// contract between the row dot and the tiles; only the canonical
// reduction differs from the ymm kernels' (see "Batch invariance" in
// matmul.go): per (row, token) ONE 16-lane FMA accumulator, lane l summing
// columns ≡ l (mod 16) in column order — an 8-column remainder (k ≡ 8 mod
// 16) goes into lanes 0-7 only, by the merge mask K1 = 0x00ff — then
// folded v_l + v_(l+8) (ZFOLD) and from there exactly as the ymm kernels
// fold their 8 lanes, ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)) (REDUCE4,
// FOLD4). Only AVX-512F instructions and registers Z0-Z15 are used
// (VEX-encoded ymm ops for the 8-column remainder and the final folds).

#include "textflag.h"
#include "simd_amd64.h"

#define REDUCE4 \
	VHADDPS Y1, Y0, Y0; \
	VHADDPS Y3, Y2, Y2; \
	VHADDPS Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VMOVUPS X0, (DX); \
	VZEROUPPER

// ZFOLD(Z, Y, T, YT) folds the 16 lanes of accumulator Z into the 8 of its
// low half Y: lane l += lane l+8 (T a scratch zmm, YT its low half).
#define ZFOLD(Z, Y, T, YT) \
	VEXTRACTF64X4 $1, Z, YT; \
	VADDPS        YT, Y, Y

// MASK8 sets K1 to the low 8 lanes (the 8-column remainder).
#define MASK8 \
	MOVL  $0xff, R11; \
	KMOVW R11, K1

// The 4-row dots (func dot4{F32,F16,BF16}Z(w *byte, lda uintptr, x *float32,
// n int, out *[4]float32), n a positive multiple of 8): rows SI, SI+BX,
// R8, R8+BX; DI walks x, CX counts columns left; accumulators Z0-Z3, one
// per row; 32 columns per step (two FMAs per chain), then one 16-column
// step and the masked 8-column remainder as needed. Each step prefetches
// the next group of four rows (rows r+4..r+7, 4·lda ahead; R13 = 5·lda)
// as the ymm dots do: the hardware streamer stops at 4 KiB pages.

// func dot4F32Z(w *byte, lda uintptr, x *float32, n int, out *[4]float32)
TEXT ·dot4F32Z(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*2), R8
	LEAQ (BX)(BX*4), R13 // 5·lda: rows r+5 = SI+R13, r+7 = R8+R13
	ZERO8
	SUBQ $32, CX
	JL   zf32mid

zf32loop:
	PREFETCHT0 (SI)(BX*4)
	PREFETCHT0 (R8)(BX*4)
	PREFETCHT0 (SI)(R13*1)
	PREFETCHT0 (R8)(R13*1)
	PREFETCHT0 64(SI)(BX*4)
	PREFETCHT0 64(R8)(BX*4)
	PREFETCHT0 64(SI)(R13*1)
	PREFETCHT0 64(R8)(R13*1)
	VMOVUPS    (DI), Z8
	VMOVUPS    64(DI), Z9
	VMOVUPS (SI), Z10
	VMOVUPS 64(SI), Z11
	VMOVUPS (SI)(BX*1), Z12
	VMOVUPS 64(SI)(BX*1), Z13
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z11, Z9, Z0
	VFMADD231PS Z12, Z8, Z1
	VFMADD231PS Z13, Z9, Z1
	VMOVUPS (R8), Z10
	VMOVUPS 64(R8), Z11
	VMOVUPS (R8)(BX*1), Z12
	VMOVUPS 64(R8)(BX*1), Z13
	VFMADD231PS Z10, Z8, Z2
	VFMADD231PS Z11, Z9, Z2
	VFMADD231PS Z12, Z8, Z3
	VFMADD231PS Z13, Z9, Z3
	ADDQ $128, SI
	ADDQ $128, R8
	ADDQ $128, DI
	SUBQ $32, CX
	JGE  zf32loop

zf32mid:
	ADDQ $32, CX
	CMPQ CX, $16
	JLT  zf32tail
	VMOVUPS (DI), Z8
	VMOVUPS (SI), Z10
	VMOVUPS (SI)(BX*1), Z11
	VMOVUPS (R8), Z12
	VMOVUPS (R8)(BX*1), Z13
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z11, Z8, Z1
	VFMADD231PS Z12, Z8, Z2
	VFMADD231PS Z13, Z8, Z3
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, DI
	SUBQ $16, CX

zf32tail:
	TESTQ CX, CX
	JZ    zf32done
	MASK8
	VMOVUPS (DI), Y8
	VMOVUPS (SI), Y10
	VMOVUPS (SI)(BX*1), Y11
	VMOVUPS (R8), Y12
	VMOVUPS (R8)(BX*1), Y13
	VFMADD231PS Z10, Z8, K1, Z0
	VFMADD231PS Z11, Z8, K1, Z1
	VFMADD231PS Z12, Z8, K1, Z2
	VFMADD231PS Z13, Z8, K1, Z3

zf32done:
	ZFOLD(Z0, Y0, Z4, Y4)
	ZFOLD(Z1, Y1, Z5, Y5)
	ZFOLD(Z2, Y2, Z6, Y6)
	ZFOLD(Z3, Y3, Z7, Y7)
	REDUCE4
	RET

// func dot4F16Z(w *byte, lda uintptr, x *float32, n int, out *[4]float32)
TEXT ·dot4F16Z(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*2), R8
	LEAQ (BX)(BX*4), R13 // 5·lda: rows r+5 = SI+R13, r+7 = R8+R13
	ZERO8
	SUBQ $32, CX
	JL   zf16mid

zf16loop:
	PREFETCHT0 (SI)(BX*4)
	PREFETCHT0 (R8)(BX*4)
	PREFETCHT0 (SI)(R13*1)
	PREFETCHT0 (R8)(R13*1)
	VMOVUPS    (DI), Z8
	VMOVUPS    64(DI), Z9
	VCVTPH2PS (SI), Z10
	VCVTPH2PS 32(SI), Z11
	VCVTPH2PS (SI)(BX*1), Z12
	VCVTPH2PS 32(SI)(BX*1), Z13
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z11, Z9, Z0
	VFMADD231PS Z12, Z8, Z1
	VFMADD231PS Z13, Z9, Z1
	VCVTPH2PS (R8), Z10
	VCVTPH2PS 32(R8), Z11
	VCVTPH2PS (R8)(BX*1), Z12
	VCVTPH2PS 32(R8)(BX*1), Z13
	VFMADD231PS Z10, Z8, Z2
	VFMADD231PS Z11, Z9, Z2
	VFMADD231PS Z12, Z8, Z3
	VFMADD231PS Z13, Z9, Z3
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $128, DI
	SUBQ $32, CX
	JGE  zf16loop

zf16mid:
	ADDQ $32, CX
	CMPQ CX, $16
	JLT  zf16tail
	VMOVUPS (DI), Z8
	VCVTPH2PS (SI), Z10
	VCVTPH2PS (SI)(BX*1), Z11
	VCVTPH2PS (R8), Z12
	VCVTPH2PS (R8)(BX*1), Z13
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z11, Z8, Z1
	VFMADD231PS Z12, Z8, Z2
	VFMADD231PS Z13, Z8, Z3
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $64, DI
	SUBQ $16, CX

zf16tail:
	TESTQ CX, CX
	JZ    zf16done
	MASK8
	VMOVUPS (DI), Y8
	VCVTPH2PS (SI), Y10
	VCVTPH2PS (SI)(BX*1), Y11
	VCVTPH2PS (R8), Y12
	VCVTPH2PS (R8)(BX*1), Y13
	VFMADD231PS Z10, Z8, K1, Z0
	VFMADD231PS Z11, Z8, K1, Z1
	VFMADD231PS Z12, Z8, K1, Z2
	VFMADD231PS Z13, Z8, K1, Z3

zf16done:
	ZFOLD(Z0, Y0, Z4, Y4)
	ZFOLD(Z1, Y1, Z5, Y5)
	ZFOLD(Z2, Y2, Z6, Y6)
	ZFOLD(Z3, Y3, Z7, Y7)
	REDUCE4
	RET

// func dot4BF16Z(w *byte, lda uintptr, x *float32, n int, out *[4]float32)
TEXT ·dot4BF16Z(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*2), R8
	LEAQ (BX)(BX*4), R13 // 5·lda: rows r+5 = SI+R13, r+7 = R8+R13
	ZERO8
	SUBQ $32, CX
	JL   zbf16mid

zbf16loop:
	PREFETCHT0 (SI)(BX*4)
	PREFETCHT0 (R8)(BX*4)
	PREFETCHT0 (SI)(R13*1)
	PREFETCHT0 (R8)(R13*1)
	VMOVUPS    (DI), Z8
	VMOVUPS    64(DI), Z9
	VPMOVZXWD (SI), Z10
	VPSLLD    $16, Z10, Z10
	VPMOVZXWD 32(SI), Z11
	VPSLLD    $16, Z11, Z11
	VPMOVZXWD (SI)(BX*1), Z12
	VPSLLD    $16, Z12, Z12
	VPMOVZXWD 32(SI)(BX*1), Z13
	VPSLLD    $16, Z13, Z13
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z11, Z9, Z0
	VFMADD231PS Z12, Z8, Z1
	VFMADD231PS Z13, Z9, Z1
	VPMOVZXWD (R8), Z10
	VPSLLD    $16, Z10, Z10
	VPMOVZXWD 32(R8), Z11
	VPSLLD    $16, Z11, Z11
	VPMOVZXWD (R8)(BX*1), Z12
	VPSLLD    $16, Z12, Z12
	VPMOVZXWD 32(R8)(BX*1), Z13
	VPSLLD    $16, Z13, Z13
	VFMADD231PS Z10, Z8, Z2
	VFMADD231PS Z11, Z9, Z2
	VFMADD231PS Z12, Z8, Z3
	VFMADD231PS Z13, Z9, Z3
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $128, DI
	SUBQ $32, CX
	JGE  zbf16loop

zbf16mid:
	ADDQ $32, CX
	CMPQ CX, $16
	JLT  zbf16tail
	VMOVUPS (DI), Z8
	VPMOVZXWD (SI), Z10
	VPSLLD    $16, Z10, Z10
	VPMOVZXWD (SI)(BX*1), Z11
	VPSLLD    $16, Z11, Z11
	VPMOVZXWD (R8), Z12
	VPSLLD    $16, Z12, Z12
	VPMOVZXWD (R8)(BX*1), Z13
	VPSLLD    $16, Z13, Z13
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z11, Z8, Z1
	VFMADD231PS Z12, Z8, Z2
	VFMADD231PS Z13, Z8, Z3
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $64, DI
	SUBQ $16, CX

zbf16tail:
	TESTQ CX, CX
	JZ    zbf16done
	MASK8
	VMOVUPS (DI), Y8
	VPMOVZXWD (SI), Y10
	VPSLLD    $16, Y10, Y10
	VPMOVZXWD (SI)(BX*1), Y11
	VPSLLD    $16, Y11, Y11
	VPMOVZXWD (R8), Y12
	VPSLLD    $16, Y12, Y12
	VPMOVZXWD (R8)(BX*1), Y13
	VPSLLD    $16, Y13, Y13
	VFMADD231PS Z10, Z8, K1, Z0
	VFMADD231PS Z11, Z8, K1, Z1
	VFMADD231PS Z12, Z8, K1, Z2
	VFMADD231PS Z13, Z8, K1, Z3

zbf16done:
	ZFOLD(Z0, Y0, Z4, Y4)
	ZFOLD(Z1, Y1, Z5, Y5)
	ZFOLD(Z2, Y2, Z6, Y6)
	ZFOLD(Z3, Y3, Z7, Y7)
	REDUCE4
	RET

// FOLD4 as in kernels_float_amd64.s: four 8-lane sums A-D folded as
// REDUCE4 folds them, stored at dst in the order A, B, C, D.
#define FOLD4(A, B, C, D, XA, XB, dst) \
	VHADDPS      B, A, A; \
	VHADDPS      D, C, C; \
	VHADDPS      C, A, A; \
	VEXTRACTF128 $1, A, XB; \
	VADDPS       XB, XA, XA; \
	VMOVUPS      XA, dst

// The tiles (func tile{F32,F16,BF16}x{3,2}Z, arguments as the ymm tiles':
// 4 rows × 3 (2) tokens over k columns, k a positive multiple of 8):
// accumulator Z(nt·r+t) holds (row r, token t); per 16-column step the
// tokens' columns are loaded into Z12-Z14 and each row widened into Z15,
// then the masked 8-column remainder (Y loads, lanes 0-7 by K1). Each
// (row, token) thus sees exactly the FMAs, in the order, of dot4*Z, and
// the same folds.
//
// Registers: SI row 0, SI+BX row 1, R8 row 2, R8+BX row 3; DI token 0,
// DI+DX token 1, R9 token 2; CX 16-column steps left, R12 the remainder
// (0 or 8); AX token 0's dst, R10 its stride.
#define ZTILEPROLOG \
	LEAQ   (SI)(BX*2), R8; \
	LEAQ   (DI)(DX*2), R9; \
	MOVQ   CX, R12; \
	ANDQ   $8, R12; \
	SHRQ   $4, CX; \
	MASK8; \
	ZERO8; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11

#define ZFMA3(a0, a1, a2) \
	VFMADD231PS Z15, Z12, a0; \
	VFMADD231PS Z15, Z13, a1; \
	VFMADD231PS Z15, Z14, a2

#define ZFMA2(a0, a1) \
	VFMADD231PS Z15, Z12, a0; \
	VFMADD231PS Z15, Z13, a1

#define ZFMA3K(a0, a1, a2) \
	VFMADD231PS Z15, Z12, K1, a0; \
	VFMADD231PS Z15, Z13, K1, a1; \
	VFMADD231PS Z15, Z14, K1, a2

#define ZFMA2K(a0, a1) \
	VFMADD231PS Z15, Z12, K1, a0; \
	VFMADD231PS Z15, Z13, K1, a1

#define ZX3LOADS \
	VMOVUPS (DI), Z12; \
	VMOVUPS (DI)(DX*1), Z13; \
	VMOVUPS (R9), Z14

#define ZX2LOADS \
	VMOVUPS (DI), Z12; \
	VMOVUPS (DI)(DX*1), Z13

#define X3LOADS \
	VMOVUPS (DI), Y12; \
	VMOVUPS (DI)(DX*1), Y13; \
	VMOVUPS (R9), Y14

#define X2LOADS \
	VMOVUPS (DI), Y12; \
	VMOVUPS (DI)(DX*1), Y13

#define ZTILE3EPILOG \
	ZFOLD(Z0, Y0, Z12, Y12); \
	ZFOLD(Z1, Y1, Z13, Y13); \
	ZFOLD(Z2, Y2, Z14, Y14); \
	ZFOLD(Z3, Y3, Z15, Y15); \
	ZFOLD(Z4, Y4, Z12, Y12); \
	ZFOLD(Z5, Y5, Z13, Y13); \
	ZFOLD(Z6, Y6, Z14, Y14); \
	ZFOLD(Z7, Y7, Z15, Y15); \
	ZFOLD(Z8, Y8, Z12, Y12); \
	ZFOLD(Z9, Y9, Z13, Y13); \
	ZFOLD(Z10, Y10, Z14, Y14); \
	ZFOLD(Z11, Y11, Z15, Y15); \
	FOLD4(Y0, Y3, Y6, Y9, X0, X3, (AX)); \
	FOLD4(Y1, Y4, Y7, Y10, X1, X4, (AX)(R10*1)); \
	FOLD4(Y2, Y5, Y8, Y11, X2, X5, (AX)(R10*2)); \
	VZEROUPPER; \
	RET

#define ZTILE2EPILOG \
	ZFOLD(Z0, Y0, Z12, Y12); \
	ZFOLD(Z1, Y1, Z13, Y13); \
	ZFOLD(Z2, Y2, Z14, Y14); \
	ZFOLD(Z3, Y3, Z15, Y15); \
	ZFOLD(Z4, Y4, Z12, Y12); \
	ZFOLD(Z5, Y5, Z13, Y13); \
	ZFOLD(Z6, Y6, Z14, Y14); \
	ZFOLD(Z7, Y7, Z15, Y15); \
	FOLD4(Y0, Y2, Y4, Y6, X0, X2, (AX)); \
	FOLD4(Y1, Y3, Y5, Y7, X1, X3, (AX)(R10*1)); \
	VZEROUPPER; \
	RET

TEXT ·tileF32x3Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILEPROLOG
	TESTQ CX, CX
	JZ    zf32x3tail
	PCALIGN $32

zf32x3loop:
	ZX3LOADS
	VMOVUPS (SI), Z15
	ZFMA3(Z0, Z1, Z2)
	VMOVUPS (SI)(BX*1), Z15
	ZFMA3(Z3, Z4, Z5)
	VMOVUPS (R8), Z15
	ZFMA3(Z6, Z7, Z8)
	VMOVUPS (R8)(BX*1), Z15
	ZFMA3(Z9, Z10, Z11)
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, DI
	ADDQ $64, R9
	DECQ CX
	JNZ  zf32x3loop

zf32x3tail:
	TESTQ R12, R12
	JZ    zf32x3done
	X3LOADS
	VMOVUPS (SI), Y15
	ZFMA3K(Z0, Z1, Z2)
	VMOVUPS (SI)(BX*1), Y15
	ZFMA3K(Z3, Z4, Z5)
	VMOVUPS (R8), Y15
	ZFMA3K(Z6, Z7, Z8)
	VMOVUPS (R8)(BX*1), Y15
	ZFMA3K(Z9, Z10, Z11)

zf32x3done:
	ZTILE3EPILOG

TEXT ·tileF16x3Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILEPROLOG
	TESTQ CX, CX
	JZ    zf16x3tail
	PCALIGN $32

zf16x3loop:
	ZX3LOADS
	VCVTPH2PS (SI), Z15
	ZFMA3(Z0, Z1, Z2)
	VCVTPH2PS (SI)(BX*1), Z15
	ZFMA3(Z3, Z4, Z5)
	VCVTPH2PS (R8), Z15
	ZFMA3(Z6, Z7, Z8)
	VCVTPH2PS (R8)(BX*1), Z15
	ZFMA3(Z9, Z10, Z11)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $64, DI
	ADDQ $64, R9
	DECQ CX
	JNZ  zf16x3loop

zf16x3tail:
	TESTQ R12, R12
	JZ    zf16x3done
	X3LOADS
	VCVTPH2PS (SI), Y15
	ZFMA3K(Z0, Z1, Z2)
	VCVTPH2PS (SI)(BX*1), Y15
	ZFMA3K(Z3, Z4, Z5)
	VCVTPH2PS (R8), Y15
	ZFMA3K(Z6, Z7, Z8)
	VCVTPH2PS (R8)(BX*1), Y15
	ZFMA3K(Z9, Z10, Z11)

zf16x3done:
	ZTILE3EPILOG

TEXT ·tileBF16x3Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILEPROLOG
	TESTQ CX, CX
	JZ    zbf16x3tail
	PCALIGN $32

zbf16x3loop:
	ZX3LOADS
	VPMOVZXWD (SI), Z15
	VPSLLD    $16, Z15, Z15
	ZFMA3(Z0, Z1, Z2)
	VPMOVZXWD (SI)(BX*1), Z15
	VPSLLD    $16, Z15, Z15
	ZFMA3(Z3, Z4, Z5)
	VPMOVZXWD (R8), Z15
	VPSLLD    $16, Z15, Z15
	ZFMA3(Z6, Z7, Z8)
	VPMOVZXWD (R8)(BX*1), Z15
	VPSLLD    $16, Z15, Z15
	ZFMA3(Z9, Z10, Z11)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $64, DI
	ADDQ $64, R9
	DECQ CX
	JNZ  zbf16x3loop

zbf16x3tail:
	TESTQ R12, R12
	JZ    zbf16x3done
	X3LOADS
	VPMOVZXWD (SI), Y15
	VPSLLD    $16, Y15, Y15
	ZFMA3K(Z0, Z1, Z2)
	VPMOVZXWD (SI)(BX*1), Y15
	VPSLLD    $16, Y15, Y15
	ZFMA3K(Z3, Z4, Z5)
	VPMOVZXWD (R8), Y15
	VPSLLD    $16, Y15, Y15
	ZFMA3K(Z6, Z7, Z8)
	VPMOVZXWD (R8)(BX*1), Y15
	VPSLLD    $16, Y15, Y15
	ZFMA3K(Z9, Z10, Z11)

zbf16x3done:
	ZTILE3EPILOG

TEXT ·tileF32x2Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILEPROLOG
	TESTQ CX, CX
	JZ    zf32x2tail
	PCALIGN $32

zf32x2loop:
	ZX2LOADS
	VMOVUPS (SI), Z15
	ZFMA2(Z0, Z1)
	VMOVUPS (SI)(BX*1), Z15
	ZFMA2(Z2, Z3)
	VMOVUPS (R8), Z15
	ZFMA2(Z4, Z5)
	VMOVUPS (R8)(BX*1), Z15
	ZFMA2(Z6, Z7)
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, DI
	DECQ CX
	JNZ  zf32x2loop

zf32x2tail:
	TESTQ R12, R12
	JZ    zf32x2done
	X2LOADS
	VMOVUPS (SI), Y15
	ZFMA2K(Z0, Z1)
	VMOVUPS (SI)(BX*1), Y15
	ZFMA2K(Z2, Z3)
	VMOVUPS (R8), Y15
	ZFMA2K(Z4, Z5)
	VMOVUPS (R8)(BX*1), Y15
	ZFMA2K(Z6, Z7)

zf32x2done:
	ZTILE2EPILOG

TEXT ·tileF16x2Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILEPROLOG
	TESTQ CX, CX
	JZ    zf16x2tail
	PCALIGN $32

zf16x2loop:
	ZX2LOADS
	VCVTPH2PS (SI), Z15
	ZFMA2(Z0, Z1)
	VCVTPH2PS (SI)(BX*1), Z15
	ZFMA2(Z2, Z3)
	VCVTPH2PS (R8), Z15
	ZFMA2(Z4, Z5)
	VCVTPH2PS (R8)(BX*1), Z15
	ZFMA2(Z6, Z7)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $64, DI
	DECQ CX
	JNZ  zf16x2loop

zf16x2tail:
	TESTQ R12, R12
	JZ    zf16x2done
	X2LOADS
	VCVTPH2PS (SI), Y15
	ZFMA2K(Z0, Z1)
	VCVTPH2PS (SI)(BX*1), Y15
	ZFMA2K(Z2, Z3)
	VCVTPH2PS (R8), Y15
	ZFMA2K(Z4, Z5)
	VCVTPH2PS (R8)(BX*1), Y15
	ZFMA2K(Z6, Z7)

zf16x2done:
	ZTILE2EPILOG

TEXT ·tileBF16x2Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILEPROLOG
	TESTQ CX, CX
	JZ    zbf16x2tail
	PCALIGN $32

zbf16x2loop:
	ZX2LOADS
	VPMOVZXWD (SI), Z15
	VPSLLD    $16, Z15, Z15
	ZFMA2(Z0, Z1)
	VPMOVZXWD (SI)(BX*1), Z15
	VPSLLD    $16, Z15, Z15
	ZFMA2(Z2, Z3)
	VPMOVZXWD (R8), Z15
	VPSLLD    $16, Z15, Z15
	ZFMA2(Z4, Z5)
	VPMOVZXWD (R8)(BX*1), Z15
	VPSLLD    $16, Z15, Z15
	ZFMA2(Z6, Z7)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $64, DI
	DECQ CX
	JNZ  zbf16x2loop

zbf16x2tail:
	TESTQ R12, R12
	JZ    zbf16x2done
	X2LOADS
	VPMOVZXWD (SI), Y15
	VPSLLD    $16, Y15, Y15
	ZFMA2K(Z0, Z1)
	VPMOVZXWD (SI)(BX*1), Y15
	VPSLLD    $16, Y15, Y15
	ZFMA2K(Z2, Z3)
	VPMOVZXWD (R8), Y15
	VPSLLD    $16, Y15, Y15
	ZFMA2K(Z4, Z5)
	VPMOVZXWD (R8)(BX*1), Y15
	VPSLLD    $16, Y15, Y15
	ZFMA2K(Z6, Z7)

zbf16x2done:
	ZTILE2EPILOG

// The 4×6 tiles (func tile{F32,F16,BF16}x6Z, arguments as the 4×3 ones):
// the 32 zmm registers hold 24 accumulators, six token vectors and the
// widened row, so each widened weight vector feeds 6 FMAs (the 4×3 tile:
// 3). Accumulators: (row r, token t) in Z(3r+t) for tokens 0-2, in
// Z(12+3r+t-3) for tokens 3-5; tokens' columns in Z24-Z29, the row in
// Z30. Same FMAs in the same order per (row, token) as dot4*Z; the
// 8-column remainder by zero-masked loads (K1) into lanes 0-7 and merge-
// masked FMAs. The 16→8 fold runs on full zmm registers (VADDPS Z: the
// low 8 lanes are v_l + v_(l+8), as in ZFOLD; only AVX-512F), then FOLD4.
//
// Registers: SI, SI+BX, R8, R8+BX rows; DI, DI+DX, R9, R9+DX, R13, R13+DX
// tokens; CX 16-column steps left, R12 the remainder (0 or 8); AX token
// 0's dst, R10 its stride, R11 token 3's dst.
#define ZX6LOADS \
	VMOVUPS (DI), Z24; \
	VMOVUPS (DI)(DX*1), Z25; \
	VMOVUPS (R9), Z26; \
	VMOVUPS (R9)(DX*1), Z27; \
	VMOVUPS (R13), Z28; \
	VMOVUPS (R13)(DX*1), Z29

#define ZX6LOADSK \
	VMOVUPS.Z (DI), K1, Z24; \
	VMOVUPS.Z (DI)(DX*1), K1, Z25; \
	VMOVUPS.Z (R9), K1, Z26; \
	VMOVUPS.Z (R9)(DX*1), K1, Z27; \
	VMOVUPS.Z (R13), K1, Z28; \
	VMOVUPS.Z (R13)(DX*1), K1, Z29

#define ZFMA6(a0, a1, a2, a3, a4, a5) \
	VFMADD231PS Z30, Z24, a0; \
	VFMADD231PS Z30, Z25, a1; \
	VFMADD231PS Z30, Z26, a2; \
	VFMADD231PS Z30, Z27, a3; \
	VFMADD231PS Z30, Z28, a4; \
	VFMADD231PS Z30, Z29, a5

#define ZFMA6K(a0, a1, a2, a3, a4, a5) \
	VFMADD231PS Z30, Z24, K1, a0; \
	VFMADD231PS Z30, Z25, K1, a1; \
	VFMADD231PS Z30, Z26, K1, a2; \
	VFMADD231PS Z30, Z27, K1, a3; \
	VFMADD231PS Z30, Z28, K1, a4; \
	VFMADD231PS Z30, Z29, K1, a5

// ZFOLDZ(Z, T): Z's low 8 lanes += its high 8 (T a scratch zmm).
#define ZFOLDZ(Z, T, YT) \
	VEXTRACTF64X4 $1, Z, YT; \
	VADDPS        T, Z, Z

#define ZTILE6PROLOG \
	LEAQ   (SI)(BX*2), R8; \
	LEAQ   (DI)(DX*2), R9; \
	LEAQ   (DI)(DX*4), R13; \
	LEAQ   (AX)(R10*2), R11; \
	ADDQ   R10, R11; \
	MOVL   $0xff, R12; \
	KMOVW  R12, K1; \
	MOVQ   CX, R12; \
	ANDQ   $8, R12; \
	SHRQ   $4, CX; \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPXORD Z18, Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	VPXORD Z22, Z22, Z22 \
	VPXORD Z23, Z23, Z23

#define ZTILE6EPILOG \
	ZFOLDZ(Z0, Z24, Y24); \
	ZFOLDZ(Z1, Z25, Y25); \
	ZFOLDZ(Z2, Z26, Y26); \
	ZFOLDZ(Z3, Z27, Y27); \
	ZFOLDZ(Z4, Z28, Y28); \
	ZFOLDZ(Z5, Z29, Y29); \
	ZFOLDZ(Z6, Z24, Y24); \
	ZFOLDZ(Z7, Z25, Y25); \
	ZFOLDZ(Z8, Z26, Y26); \
	ZFOLDZ(Z9, Z27, Y27); \
	ZFOLDZ(Z10, Z28, Y28); \
	ZFOLDZ(Z11, Z29, Y29); \
	ZFOLDZ(Z12, Z24, Y24); \
	ZFOLDZ(Z13, Z25, Y25); \
	ZFOLDZ(Z14, Z26, Y26); \
	ZFOLDZ(Z15, Z27, Y27); \
	ZFOLDZ(Z16, Z28, Y28); \
	ZFOLDZ(Z17, Z29, Y29); \
	ZFOLDZ(Z18, Z24, Y24); \
	ZFOLDZ(Z19, Z25, Y25); \
	ZFOLDZ(Z20, Z26, Y26); \
	ZFOLDZ(Z21, Z27, Y27); \
	ZFOLDZ(Z22, Z28, Y28); \
	ZFOLDZ(Z23, Z29, Y29); \
	FOLD4(Y0, Y3, Y6, Y9, X0, X3, (AX)); \
	FOLD4(Y1, Y4, Y7, Y10, X1, X4, (AX)(R10*1)); \
	FOLD4(Y2, Y5, Y8, Y11, X2, X5, (AX)(R10*2)); \
	VMOVUPS Z12, Z0; \
	VMOVUPS Z13, Z1; \
	VMOVUPS Z14, Z2; \
	VMOVUPS Z15, Z3; \
	VMOVUPS Z16, Z4; \
	VMOVUPS Z17, Z5; \
	VMOVUPS Z18, Z6; \
	VMOVUPS Z19, Z7; \
	VMOVUPS Z20, Z8; \
	VMOVUPS Z21, Z9; \
	VMOVUPS Z22, Z10; \
	VMOVUPS Z23, Z11; \
	FOLD4(Y0, Y3, Y6, Y9, X0, X3, (R11)); \
	FOLD4(Y1, Y4, Y7, Y10, X1, X4, (R11)(R10*1)); \
	FOLD4(Y2, Y5, Y8, Y11, X2, X5, (R11)(R10*2)); \
	VZEROUPPER; \
	RET

TEXT ·tileF32x6Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILE6PROLOG
	TESTQ CX, CX
	JZ    zf32x6tail
	PCALIGN $32

zf32x6loop:
	ZX6LOADS
	VMOVUPS (SI), Z30
	ZFMA6(Z0, Z1, Z2, Z12, Z13, Z14)
	VMOVUPS (SI)(BX*1), Z30
	ZFMA6(Z3, Z4, Z5, Z15, Z16, Z17)
	VMOVUPS (R8), Z30
	ZFMA6(Z6, Z7, Z8, Z18, Z19, Z20)
	VMOVUPS (R8)(BX*1), Z30
	ZFMA6(Z9, Z10, Z11, Z21, Z22, Z23)
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, DI
	ADDQ $64, R9
	ADDQ $64, R13
	DECQ CX
	JNZ  zf32x6loop

zf32x6tail:
	TESTQ R12, R12
	JZ    zf32x6done
	ZX6LOADSK
	VMOVUPS.Z (SI), K1, Z30
	ZFMA6K(Z0, Z1, Z2, Z12, Z13, Z14)
	VMOVUPS.Z (SI)(BX*1), K1, Z30
	ZFMA6K(Z3, Z4, Z5, Z15, Z16, Z17)
	VMOVUPS.Z (R8), K1, Z30
	ZFMA6K(Z6, Z7, Z8, Z18, Z19, Z20)
	VMOVUPS.Z (R8)(BX*1), K1, Z30
	ZFMA6K(Z9, Z10, Z11, Z21, Z22, Z23)

zf32x6done:
	ZTILE6EPILOG

TEXT ·tileF16x6Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILE6PROLOG
	TESTQ CX, CX
	JZ    zf16x6tail
	PCALIGN $32

zf16x6loop:
	ZX6LOADS
	VCVTPH2PS (SI), Z30
	ZFMA6(Z0, Z1, Z2, Z12, Z13, Z14)
	VCVTPH2PS (SI)(BX*1), Z30
	ZFMA6(Z3, Z4, Z5, Z15, Z16, Z17)
	VCVTPH2PS (R8), Z30
	ZFMA6(Z6, Z7, Z8, Z18, Z19, Z20)
	VCVTPH2PS (R8)(BX*1), Z30
	ZFMA6(Z9, Z10, Z11, Z21, Z22, Z23)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $64, DI
	ADDQ $64, R9
	ADDQ $64, R13
	DECQ CX
	JNZ  zf16x6loop

zf16x6tail:
	TESTQ R12, R12
	JZ    zf16x6done
	ZX6LOADSK
	VCVTPH2PS.Z (SI), K1, Z30
	ZFMA6K(Z0, Z1, Z2, Z12, Z13, Z14)
	VCVTPH2PS.Z (SI)(BX*1), K1, Z30
	ZFMA6K(Z3, Z4, Z5, Z15, Z16, Z17)
	VCVTPH2PS.Z (R8), K1, Z30
	ZFMA6K(Z6, Z7, Z8, Z18, Z19, Z20)
	VCVTPH2PS.Z (R8)(BX*1), K1, Z30
	ZFMA6K(Z9, Z10, Z11, Z21, Z22, Z23)

zf16x6done:
	ZTILE6EPILOG

TEXT ·tileBF16x6Z(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILE6PROLOG
	TESTQ CX, CX
	JZ    zbf16x6tail
	PCALIGN $32

zbf16x6loop:
	ZX6LOADS
	VPMOVZXWD (SI), Z30
	VPSLLD    $16, Z30, Z30
	ZFMA6(Z0, Z1, Z2, Z12, Z13, Z14)
	VPMOVZXWD (SI)(BX*1), Z30
	VPSLLD    $16, Z30, Z30
	ZFMA6(Z3, Z4, Z5, Z15, Z16, Z17)
	VPMOVZXWD (R8), Z30
	VPSLLD    $16, Z30, Z30
	ZFMA6(Z6, Z7, Z8, Z18, Z19, Z20)
	VPMOVZXWD (R8)(BX*1), Z30
	VPSLLD    $16, Z30, Z30
	ZFMA6(Z9, Z10, Z11, Z21, Z22, Z23)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $64, DI
	ADDQ $64, R9
	ADDQ $64, R13
	DECQ CX
	JNZ  zbf16x6loop

zbf16x6tail:
	TESTQ R12, R12
	JZ    zbf16x6done
	ZX6LOADSK
	VPMOVZXWD.Z (SI), K1, Z30
	VPSLLD    $16, Z30, Z30
	ZFMA6K(Z0, Z1, Z2, Z12, Z13, Z14)
	VPMOVZXWD.Z (SI)(BX*1), K1, Z30
	VPSLLD    $16, Z30, Z30
	ZFMA6K(Z3, Z4, Z5, Z15, Z16, Z17)
	VPMOVZXWD.Z (R8), K1, Z30
	VPSLLD    $16, Z30, Z30
	ZFMA6K(Z6, Z7, Z8, Z18, Z19, Z20)
	VPMOVZXWD.Z (R8)(BX*1), K1, Z30
	VPSLLD    $16, Z30, Z30
	ZFMA6K(Z9, Z10, Z11, Z21, Z22, Z23)

zbf16x6done:
	ZTILE6EPILOG

// func tileF16x6ZP(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, acc *float32, mode int)
// tileF16x6Z over one panel of columns of a longer row (see tileF16Panels):
// with mode&1 the 24 accumulators start from acc (24·16 floats, Z0-Z23 in
// order) instead of zero; with mode&2 the panel is the row's last — the
// masked 8-column remainder, the folds and the stores to dst follow as in
// tileF16x6Z — otherwise k is a multiple of 16 and the accumulators are
// stored to acc unfolded. A float32 store and reload is exact, so each
// (row, token) gets tileF16x6Z's FMAs in tileF16x6Z's order, bit for bit.
// R14 holds acc.
//
// The VCVTPH2PS per weight vector costs nothing here: the same kernel on
// rows widened to float32 beforehand (a VMOVUPS in its place, what
// tileF32x6Z does) ran at the same rate in L1, 206 against 205 GFLOP/s on
// one core (k = 1024, mode 2, 4 runs each, 2026-12-06; ~the core's zmm
// FMA peak), so widening each panel once per block of token groups would
// only double the L2 traffic. The whole F16 GEMM runs at ~75% of that
// peak (BenchmarkGEMM-style, n = 128 on 2 threads, ~300 GFLOP/s from
// weights in DRAM, ~85% of it per core); the rest is the memory around the
// tile, and tilePanelK, tilePanelGroups and tileMC measured no lever there
// (matmul.go), nor did software prefetch in this loop (interleaved A/B, 5
// rounds, GFLOP/s ratio on 2048×2048, 2048×5632, 5632×2048: this tile's
// rows 512 B ahead, PREFETCHT0, 0.97, 0.91, 0.94; the next tile's rows at
// the same column, PREFETCHT1, 0.97, 0.99, 0.96).
TEXT ·tileF16x6ZP(SB), NOSPLIT, $0-72
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ dst+40(FP), AX
	MOVQ ldd+48(FP), R10
	ZTILE6PROLOG
	MOVQ  mode+64(FP), R14
	TESTQ $1, R14
	JZ    zf16x6pgo
	MOVQ  acc+56(FP), R14
	VMOVUPS 0(R14), Z0
	VMOVUPS 64(R14), Z1
	VMOVUPS 128(R14), Z2
	VMOVUPS 192(R14), Z3
	VMOVUPS 256(R14), Z4
	VMOVUPS 320(R14), Z5
	VMOVUPS 384(R14), Z6
	VMOVUPS 448(R14), Z7
	VMOVUPS 512(R14), Z8
	VMOVUPS 576(R14), Z9
	VMOVUPS 640(R14), Z10
	VMOVUPS 704(R14), Z11
	VMOVUPS 768(R14), Z12
	VMOVUPS 832(R14), Z13
	VMOVUPS 896(R14), Z14
	VMOVUPS 960(R14), Z15
	VMOVUPS 1024(R14), Z16
	VMOVUPS 1088(R14), Z17
	VMOVUPS 1152(R14), Z18
	VMOVUPS 1216(R14), Z19
	VMOVUPS 1280(R14), Z20
	VMOVUPS 1344(R14), Z21
	VMOVUPS 1408(R14), Z22
	VMOVUPS 1472(R14), Z23

zf16x6pgo:
	TESTQ CX, CX
	JZ    zf16x6pend
	PCALIGN $32

zf16x6ploop:
	ZX6LOADS
	VCVTPH2PS (SI), Z30
	ZFMA6(Z0, Z1, Z2, Z12, Z13, Z14)
	VCVTPH2PS (SI)(BX*1), Z30
	ZFMA6(Z3, Z4, Z5, Z15, Z16, Z17)
	VCVTPH2PS (R8), Z30
	ZFMA6(Z6, Z7, Z8, Z18, Z19, Z20)
	VCVTPH2PS (R8)(BX*1), Z30
	ZFMA6(Z9, Z10, Z11, Z21, Z22, Z23)
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $64, DI
	ADDQ $64, R9
	ADDQ $64, R13
	DECQ CX
	JNZ  zf16x6ploop

zf16x6pend:
	MOVQ  mode+64(FP), R14
	TESTQ $2, R14
	JNZ   zf16x6ptail
	MOVQ  acc+56(FP), R14
	VMOVUPS Z0, 0(R14)
	VMOVUPS Z1, 64(R14)
	VMOVUPS Z2, 128(R14)
	VMOVUPS Z3, 192(R14)
	VMOVUPS Z4, 256(R14)
	VMOVUPS Z5, 320(R14)
	VMOVUPS Z6, 384(R14)
	VMOVUPS Z7, 448(R14)
	VMOVUPS Z8, 512(R14)
	VMOVUPS Z9, 576(R14)
	VMOVUPS Z10, 640(R14)
	VMOVUPS Z11, 704(R14)
	VMOVUPS Z12, 768(R14)
	VMOVUPS Z13, 832(R14)
	VMOVUPS Z14, 896(R14)
	VMOVUPS Z15, 960(R14)
	VMOVUPS Z16, 1024(R14)
	VMOVUPS Z17, 1088(R14)
	VMOVUPS Z18, 1152(R14)
	VMOVUPS Z19, 1216(R14)
	VMOVUPS Z20, 1280(R14)
	VMOVUPS Z21, 1344(R14)
	VMOVUPS Z22, 1408(R14)
	VMOVUPS Z23, 1472(R14)
	VZEROUPPER
	RET

zf16x6ptail:
	TESTQ R12, R12
	JZ    zf16x6pdone
	ZX6LOADSK
	VCVTPH2PS.Z (SI), K1, Z30
	ZFMA6K(Z0, Z1, Z2, Z12, Z13, Z14)
	VCVTPH2PS.Z (SI)(BX*1), K1, Z30
	ZFMA6K(Z3, Z4, Z5, Z15, Z16, Z17)
	VCVTPH2PS.Z (R8), K1, Z30
	ZFMA6K(Z6, Z7, Z8, Z18, Z19, Z20)
	VCVTPH2PS.Z (R8)(BX*1), K1, Z30
	ZFMA6K(Z9, Z10, Z11, Z21, Z22, Z23)

zf16x6pdone:
	ZTILE6EPILOG

// func dotRowsF16Z(w *byte, stride uintptr, x *float32, n int, rows int, dst *float32)
// dst[i] = row i (at w + i·stride, n F16 values, n a positive multiple of
// 8) · x, for i < rows: dot4F16Z's arithmetic for each row, bit for bit
// (the same 16-lane accumulator fed in the same column order — two FMAs
// per 32 columns, then 16, then the masked 8 — ZFOLD, then FOLD8, which is
// REDUCE4's fold of one row), but one row at a time: the decode's single
// read stream, prefetched into L2 F16PF bytes ahead. BenchmarkMatVec F16
// (5632, 2048) from DRAM, 2 threads, on the Zen 5 VM, cpuMB/s medians of
// 3 interleaved: dot4F16Z's four interleaved rows 18.0 GB/s; this kernel
// 20.1 (16 KB ahead), 21.4 (8 KB), 21.8 (32 KB). One FMA chain per row:
// 16 columns (32 bytes) per 4 cycles, ~30 GB/s per core — yet the chain is
// not what limits decode: Qwen3.5-2B F16 decode with every variant below
// alternated against this kernel every 8 tokens in one process (40 rounds,
// median ratio [IQR], 2026-12-06) measured two chains (even and odd
// 16-column groups, a different fold) 0.99 [0.96, 1.02]; no prefetch 0.98;
// PREFETCHT0 0.99; PREFETCHT2 0.99; 64 KB ahead 1.00; the first 32 KB of
// each call prefetched before its first row 0.99. Decode runs at ~85% of a
// plain read of the same weights in the same seconds (bench's "of read"),
// with 99% of its CPU in this kernel: the memory stream sets the pace.
// SI walks the row, DI x, CX counts columns, R9 rows left, R10 the row's
// start, BX the stride, R8 dst; Z0 accumulates.
#define F16PF 32768

TEXT ·dotRowsF16Z(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), R10
	MOVQ stride+8(FP), BX
	MOVQ rows+32(FP), R9
	MOVQ dst+40(FP), R8
	MASK8

zr16row:
	MOVQ   R10, SI
	MOVQ   x+16(FP), DI
	MOVQ   n+24(FP), CX
	VXORPS Y0, Y0, Y0
	SUBQ   $32, CX
	JL     zr16mid

zr16loop:
	PREFETCHT1  F16PF(SI)
	VCVTPH2PS   (SI), Z10
	VCVTPH2PS   32(SI), Z11
	VFMADD231PS (DI), Z10, Z0
	VFMADD231PS 64(DI), Z11, Z0
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JGE         zr16loop

zr16mid:
	ADDQ $32, CX
	CMPQ CX, $16
	JLT  zr16tail
	VCVTPH2PS   (SI), Z10
	VFMADD231PS (DI), Z10, Z0
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $16, CX

zr16tail:
	TESTQ CX, CX
	JZ    zr16done
	VMOVUPS     (DI), Y8
	VCVTPH2PS   (SI), Y10
	VFMADD231PS Z10, Z8, K1, Z0

zr16done:
	ZFOLD(Z0, Y0, Z4, Y4)
	VEXTRACTF128 $1, Y0, X9
	VHADDPS      X9, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSHDUP    X0, X9
	VADDSS       X9, X0, X0
	VMOVSS       X0, (R8)
	ADDQ         $4, R8
	ADDQ         BX, R10
	DECQ         R9
	JNZ          zr16row
	VZEROUPPER
	RET

// func dotRowsBF16Z(w *byte, stride uintptr, x *float32, n int, rows int, dst *float32)
// dotRowsF16Z for BF16 rows (widened by a 16-bit shift, as dot4BF16Z
// does): dot4BF16Z's bits, one row at a time.
TEXT ·dotRowsBF16Z(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), R10
	MOVQ stride+8(FP), BX
	MOVQ rows+32(FP), R9
	MOVQ dst+40(FP), R8
	MASK8

zrb16row:
	MOVQ   R10, SI
	MOVQ   x+16(FP), DI
	MOVQ   n+24(FP), CX
	VXORPS Y0, Y0, Y0
	SUBQ   $32, CX
	JL     zrb16mid

zrb16loop:
	PREFETCHT1  F16PF(SI)
	VPMOVZXWD   (SI), Z10
	VPSLLD      $16, Z10, Z10
	VPMOVZXWD   32(SI), Z11
	VPSLLD      $16, Z11, Z11
	VFMADD231PS (DI), Z10, Z0
	VFMADD231PS 64(DI), Z11, Z0
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JGE         zrb16loop

zrb16mid:
	ADDQ $32, CX
	CMPQ CX, $16
	JLT  zrb16tail
	VPMOVZXWD   (SI), Z10
	VPSLLD      $16, Z10, Z10
	VFMADD231PS (DI), Z10, Z0
	ADDQ        $32, SI
	ADDQ        $64, DI
	SUBQ        $16, CX

zrb16tail:
	TESTQ CX, CX
	JZ    zrb16done
	VMOVUPS     (DI), Y8
	VPMOVZXWD   (SI), Y10
	VPSLLD      $16, Y10, Y10
	VFMADD231PS Z10, Z8, K1, Z0

zrb16done:
	ZFOLD(Z0, Y0, Z4, Y4)
	VEXTRACTF128 $1, Y0, X9
	VHADDPS      X9, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSHDUP    X0, X9
	VADDSS       X9, X0, X0
	VMOVSS       X0, (R8)
	ADDQ         $4, R8
	ADDQ         BX, R10
	DECQ         R9
	JNZ          zrb16row
	VZEROUPPER
	RET
