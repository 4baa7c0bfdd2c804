// AVX2 + FMA (+ F16C) kernels for amd64. Called only when hasSIMD is set
// (see kernels_float_amd64.go); the Go wrappers in kernels_float.go check bounds and
// handle the ragged tails these loops leave.

#include "textflag.h"

// REDUCE4 folds the eight 8-lane accumulators of a 4-row dot (Y0..Y3 for
// columns 0-7 of each 16-column step, Y4..Y7 for columns 8-15) into the
// four row sums and stores them at (DX).
#define REDUCE4 \
	VADDPS Y4, Y0, Y0; \
	VADDPS Y5, Y1, Y1; \
	VADDPS Y6, Y2, Y2; \
	VADDPS Y7, Y3, Y3; \
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
	VFMADD231PS 32(SI), Y9, Y4
	VFMADD231PS (SI)(BX*1), Y8, Y1
	VFMADD231PS 32(SI)(BX*1), Y9, Y5
	VFMADD231PS (R8), Y8, Y2
	VFMADD231PS 32(R8), Y9, Y6
	VFMADD231PS (R8)(BX*1), Y8, Y3
	VFMADD231PS 32(R8)(BX*1), Y9, Y7
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
	VFMADD231PS Y11, Y9, Y4
	VFMADD231PS Y12, Y8, Y1
	VFMADD231PS Y13, Y9, Y5
	VCVTPH2PS   (R8), Y10
	VCVTPH2PS   16(R8), Y11
	VCVTPH2PS   (R8)(BX*1), Y12
	VCVTPH2PS   16(R8)(BX*1), Y13
	VFMADD231PS Y10, Y8, Y2
	VFMADD231PS Y11, Y9, Y6
	VFMADD231PS Y12, Y8, Y3
	VFMADD231PS Y13, Y9, Y7
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
	VFMADD231PS Y11, Y9, Y4
	VFMADD231PS Y12, Y8, Y1
	VFMADD231PS Y13, Y9, Y5
	VPMOVZXWD   (R8), Y10
	VPMOVZXWD   16(R8), Y11
	VPMOVZXWD   (R8)(BX*1), Y12
	VPMOVZXWD   16(R8)(BX*1), Y13
	VPSLLD      $16, Y10, Y10
	VPSLLD      $16, Y11, Y11
	VPSLLD      $16, Y12, Y12
	VPSLLD      $16, Y13, Y13
	VFMADD231PS Y10, Y8, Y2
	VFMADD231PS Y11, Y9, Y6
	VFMADD231PS Y12, Y8, Y3
	VFMADD231PS Y13, Y9, Y7
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

// GEMM micro-kernel: C (6 rows, 16 tokens) (+)= A (6 rows, k) · B (k, 16).
// A rows: SI, SI+BX, R8, R8+BX, R9, R9+BX (BX = lda bytes); B is a packed
// panel, 16 floats per k (DI). Y0..Y11 hold C: row i tokens 0-7 in Y(2i),
// tokens 8-15 in Y(2i+1). Per k: 2 loads of B, 6 broadcasts of A, 12 FMAs,
// so the loop is bound by the two FMA pipes, not by loads.
#define GSTEP(boff, aoff) \
	VMOVUPS      boff(DI), Y12; \
	VMOVUPS      boff+32(DI), Y13; \
	VBROADCASTSS aoff(SI), Y14; \
	VFMADD231PS  Y14, Y12, Y0; \
	VFMADD231PS  Y14, Y13, Y1; \
	VBROADCASTSS aoff(SI)(BX*1), Y15; \
	VFMADD231PS  Y15, Y12, Y2; \
	VFMADD231PS  Y15, Y13, Y3; \
	VBROADCASTSS aoff(R8), Y14; \
	VFMADD231PS  Y14, Y12, Y4; \
	VFMADD231PS  Y14, Y13, Y5; \
	VBROADCASTSS aoff(R8)(BX*1), Y15; \
	VFMADD231PS  Y15, Y12, Y6; \
	VFMADD231PS  Y15, Y13, Y7; \
	VBROADCASTSS aoff(R9), Y14; \
	VFMADD231PS  Y14, Y12, Y8; \
	VFMADD231PS  Y14, Y13, Y9; \
	VBROADCASTSS aoff(R9)(BX*1), Y15; \
	VFMADD231PS  Y15, Y12, Y10; \
	VFMADD231PS  Y15, Y13, Y11

// func gemm6x16SIMD(a *float32, lda uintptr, b *float32, c *float32, ldc uintptr, k int, accum int)
// k >= 1. accum != 0 adds to C, otherwise C is overwritten.
TEXT ·gemm6x16SIMD(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R10
	MOVQ k+40(FP), CX
	LEAQ (SI)(BX*2), R8
	LEAQ (R8)(BX*2), R9
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
	SUBQ   $4, CX
	JL     gtail

gloop4:
	GSTEP(0, 0)
	GSTEP(64, 4)
	GSTEP(128, 8)
	GSTEP(192, 12)
	ADDQ $16, SI
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ $256, DI
	SUBQ $4, CX
	JGE  gloop4

gtail:
	ADDQ $4, CX
	JZ   gstore

gloop1:
	GSTEP(0, 0)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $64, DI
	DECQ CX
	JNZ  gloop1

gstore:
	LEAQ (DX)(R10*2), R11
	LEAQ (R11)(R10*2), R12
	MOVQ accum+48(FP), AX
	TESTQ AX, AX
	JZ   gput
	VADDPS (DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS (DX)(R10*1), Y2, Y2
	VADDPS 32(DX)(R10*1), Y3, Y3
	VADDPS (R11), Y4, Y4
	VADDPS 32(R11), Y5, Y5
	VADDPS (R11)(R10*1), Y6, Y6
	VADDPS 32(R11)(R10*1), Y7, Y7
	VADDPS (R12), Y8, Y8
	VADDPS 32(R12), Y9, Y9
	VADDPS (R12)(R10*1), Y10, Y10
	VADDPS 32(R12)(R10*1), Y11, Y11

gput:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, (DX)(R10*1)
	VMOVUPS Y3, 32(DX)(R10*1)
	VMOVUPS Y4, (R11)
	VMOVUPS Y5, 32(R11)
	VMOVUPS Y6, (R11)(R10*1)
	VMOVUPS Y7, 32(R11)(R10*1)
	VMOVUPS Y8, (R12)
	VMOVUPS Y9, 32(R12)
	VMOVUPS Y10, (R12)(R10*1)
	VMOVUPS Y11, 32(R12)(R10*1)
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
