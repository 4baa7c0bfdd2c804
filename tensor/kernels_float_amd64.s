// AVX2 + FMA (+ F16C) kernels for amd64. Called only when hasSIMD is set
// (see kernels_float_amd64.go); the Go wrappers in kernels_float.go check bounds and
// handle the ragged tails these loops leave.

#include "textflag.h"

// The canonical float dot (batch invariance, see matmul.go): per row one
// 8-lane FMA accumulator, lane l summing columns ≡ l (mod 8) in column
// order, folded as ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)). The 4-row dots
// keep their four rows' chains independent (Y0..Y3; the loops run 16
// columns per step, two FMAs per chain), and tileF32SIMD reproduces them
// for 3 tokens at a time.
//
// REDUCE4 folds the four rows' accumulators Y0..Y3 into the four row
// sums and stores them at (DX).
#define REDUCE4 \
	VHADDPS Y1, Y0, Y0; \
	VHADDPS Y3, Y2, Y2; \
	VHADDPS Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VMOVUPS X0, (DX); \
	VZEROUPPER

#define ZERO8 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

// Row pointers of the 4-row dots: SI = row 0, SI+BX = row 1, R8 = row 2,
// R8+BX = row 3. DI walks x, CX counts columns left.

// func dot4F32SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32)
// n is a multiple of 8.
TEXT ·dot4F32SIMD(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*2), R8
	ZERO8
	SUBQ $16, CX
	JL   f32tail

f32loop:
	PREFETCHT0  (SI)(BX*4) // the next four rows, as in dot4F16SIMD
	PREFETCHT0  (R8)(BX*4)
	VMOVUPS     (DI), Y8
	VMOVUPS     32(DI), Y9
	VFMADD231PS (SI), Y8, Y0
	VFMADD231PS 32(SI), Y9, Y0
	VFMADD231PS (SI)(BX*1), Y8, Y1
	VFMADD231PS 32(SI)(BX*1), Y9, Y1
	VFMADD231PS (R8), Y8, Y2
	VFMADD231PS 32(R8), Y9, Y2
	VFMADD231PS (R8)(BX*1), Y8, Y3
	VFMADD231PS 32(R8)(BX*1), Y9, Y3
	ADDQ        $64, SI
	ADDQ        $64, R8
	ADDQ        $64, DI
	SUBQ        $16, CX
	JGE         f32loop

f32tail:
	ADDQ        $16, CX
	JZ          f32done
	VMOVUPS     (DI), Y8
	VFMADD231PS (SI), Y8, Y0
	VFMADD231PS (SI)(BX*1), Y8, Y1
	VFMADD231PS (R8), Y8, Y2
	VFMADD231PS (R8)(BX*1), Y8, Y3

f32done:
	REDUCE4
	RET

// func dot4F16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32)
// n is a multiple of 8. VCVTPH2PS widens 8 halves (16 bytes) to 8 floats.
TEXT ·dot4F16SIMD(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*2), R8
	ZERO8
	SUBQ $16, CX
	JL   f16tail

f16loop:
	// Prefetch the next group of four rows (rows r+4 and r+6, each
	// 4·lda ahead; the adjacent-line prefetcher covers r+5, r+7): the
	// hardware streamer stops at every 4 KiB page, one row of a 2048-wide
	// F16 matrix, and then rediscovered each new row late. +12% decode
	// tok/s at TinyLlama's shape, +19% at 768 wide (BenchmarkSynth tg128).
	PREFETCHT0  (SI)(BX*4)
	PREFETCHT0  (R8)(BX*4)
	VMOVUPS     (DI), Y8
	VMOVUPS     32(DI), Y9
	VCVTPH2PS   (SI), Y10
	VCVTPH2PS   16(SI), Y11
	VCVTPH2PS   (SI)(BX*1), Y12
	VCVTPH2PS   16(SI)(BX*1), Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y9, Y0
	VFMADD231PS Y12, Y8, Y1
	VFMADD231PS Y13, Y9, Y1
	VCVTPH2PS   (R8), Y10
	VCVTPH2PS   16(R8), Y11
	VCVTPH2PS   (R8)(BX*1), Y12
	VCVTPH2PS   16(R8)(BX*1), Y13
	VFMADD231PS Y10, Y8, Y2
	VFMADD231PS Y11, Y9, Y2
	VFMADD231PS Y12, Y8, Y3
	VFMADD231PS Y13, Y9, Y3
	ADDQ        $32, SI
	ADDQ        $32, R8
	ADDQ        $64, DI
	SUBQ        $16, CX
	JGE         f16loop

f16tail:
	ADDQ        $16, CX
	JZ          f16done
	VMOVUPS     (DI), Y8
	VCVTPH2PS   (SI), Y10
	VCVTPH2PS   (SI)(BX*1), Y11
	VCVTPH2PS   (R8), Y12
	VCVTPH2PS   (R8)(BX*1), Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y13, Y8, Y3

f16done:
	REDUCE4
	RET

// func dot4BF16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32)
// n is a multiple of 8. bfloat16 is the top half of a float32: zero-extend
// to 32 bits and shift left 16.
TEXT ·dot4BF16SIMD(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*2), R8
	ZERO8
	SUBQ $16, CX
	JL   bf16tail

bf16loop:
	// Prefetch the next four rows, as in dot4F16SIMD.
	PREFETCHT0  (SI)(BX*4)
	PREFETCHT0  (R8)(BX*4)
	VMOVUPS     (DI), Y8
	VMOVUPS     32(DI), Y9
	VPMOVZXWD   (SI), Y10
	VPMOVZXWD   16(SI), Y11
	VPMOVZXWD   (SI)(BX*1), Y12
	VPMOVZXWD   16(SI)(BX*1), Y13
	VPSLLD      $16, Y10, Y10
	VPSLLD      $16, Y11, Y11
	VPSLLD      $16, Y12, Y12
	VPSLLD      $16, Y13, Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y9, Y0
	VFMADD231PS Y12, Y8, Y1
	VFMADD231PS Y13, Y9, Y1
	VPMOVZXWD   (R8), Y10
	VPMOVZXWD   16(R8), Y11
	VPMOVZXWD   (R8)(BX*1), Y12
	VPMOVZXWD   16(R8)(BX*1), Y13
	VPSLLD      $16, Y10, Y10
	VPSLLD      $16, Y11, Y11
	VPSLLD      $16, Y12, Y12
	VPSLLD      $16, Y13, Y13
	VFMADD231PS Y10, Y8, Y2
	VFMADD231PS Y11, Y9, Y2
	VFMADD231PS Y12, Y8, Y3
	VFMADD231PS Y13, Y9, Y3
	ADDQ        $32, SI
	ADDQ        $32, R8
	ADDQ        $64, DI
	SUBQ        $16, CX
	JGE         bf16loop

bf16tail:
	ADDQ        $16, CX
	JZ          bf16done
	VMOVUPS     (DI), Y8
	VPMOVZXWD   (SI), Y10
	VPMOVZXWD   (SI)(BX*1), Y11
	VPMOVZXWD   (R8), Y12
	VPMOVZXWD   (R8)(BX*1), Y13
	VPSLLD      $16, Y10, Y10
	VPSLLD      $16, Y11, Y11
	VPSLLD      $16, Y12, Y12
	VPSLLD      $16, Y13, Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y13, Y8, Y3

bf16done:
	REDUCE4
	RET

// func cvtF16SIMD(dst *float32, src *byte, n int)
// n is a multiple of 8.
TEXT ·cvtF16SIMD(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   cvtf16done

cvtf16loop:
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       cvtf16loop

cvtf16done:
	VZEROUPPER
	RET

// func cvtBF16SIMD(dst *float32, src *byte, n int)
// n is a multiple of 8.
TEXT ·cvtBF16SIMD(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   cvtbf16done

cvtbf16loop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       cvtbf16loop

cvtbf16done:
	VZEROUPPER
	RET

// TFOLD folds one tile accumulator as REDUCE4 folds a row of dot4:
// ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)), stored at off(AX). A is
// clobbered (XA its low half); X15 is a temp.
#define TFOLD(A, XA, off) \
	VEXTRACTF128 $1, A, X15; \
	VHADDPS      X15, XA, XA; \
	VHADDPS      XA, XA, XA; \
	VMOVSHDUP    XA, X15; \
	VADDSS       X15, XA, XA; \
	VMOVSS       XA, off(AX)

// TROW runs one weight row (at ra) against the three tokens' columns in
// Y12-Y14 into accumulators a0-a2.
#define TROW(ra, a0, a1, a2) \
	VMOVUPS     ra, Y15; \
	VFMADD231PS Y15, Y12, a0; \
	VFMADD231PS Y15, Y13, a1; \
	VFMADD231PS Y15, Y14, a2

// func tileF32SIMD(a *float32, lda uintptr, x *float32, ldx uintptr, k int, out *[12]float32)
//
// The batch-invariant GEMM tile: 4 float32 weight rows (a + r·lda bytes)
// times 3 tokens (x + t·ldx bytes) over k columns (a multiple of 8),
// out[3r+t] = row r · token t with exactly the arithmetic of dot4F32SIMD
// for that row and token: one 8-lane FMA accumulator over the columns in
// order, folded as REDUCE4 folds it (TFOLD). Lanes run along K, never
// across tokens, so a token's result does not depend on its neighbours
// (tinyBLAS-style). Per 8 columns: 3 activation and 4 weight loads feed 12
// FMAs, so the loop is bound by the FMA pipes. Y0-Y11 accumulate (r, t) in
// Y(3r+t).
TEXT ·tileF32SIMD(SB), NOSPLIT, $0-48
	MOVQ   a+0(FP), SI
	MOVQ   lda+8(FP), BX
	MOVQ   x+16(FP), DI
	MOVQ   ldx+24(FP), DX
	MOVQ   k+32(FP), CX
	MOVQ   out+40(FP), AX
	LEAQ   (SI)(BX*2), R8 // row 2
	LEAQ   (DI)(DX*2), R9 // token 2
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	SHRQ   $3, CX

	PCALIGN $32

tileloop:
	VMOVUPS (DI), Y12
	VMOVUPS (DI)(DX*1), Y13
	VMOVUPS (R9), Y14
	TROW((SI), Y0, Y1, Y2)
	TROW((SI)(BX*1), Y3, Y4, Y5)
	TROW((R8), Y6, Y7, Y8)
	TROW((R8)(BX*1), Y9, Y10, Y11)
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, DI
	ADDQ    $32, R9
	DECQ    CX
	JNZ     tileloop

	TFOLD(Y0, X0, 0)
	TFOLD(Y1, X1, 4)
	TFOLD(Y2, X2, 8)
	TFOLD(Y3, X3, 12)
	TFOLD(Y4, X4, 16)
	TFOLD(Y5, X5, 20)
	TFOLD(Y6, X6, 24)
	TFOLD(Y7, X7, 28)
	TFOLD(Y8, X8, 32)
	TFOLD(Y9, X9, 36)
	TFOLD(Y10, X10, 40)
	TFOLD(Y11, X11, 44)
	VZEROUPPER
	RET

// func sumF32SIMD(p *float32, n int) float32
// n is a multiple of 32. Four independent accumulators; used to measure
// the machine's read bandwidth (bench_test.go).
TEXT ·sumF32SIMD(SB), NOSPLIT, $0-20
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ   $5, CX
	JZ     sumdone

sumloop:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	DECQ   CX
	JNZ    sumloop

sumdone:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET
