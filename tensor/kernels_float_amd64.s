// AVX2 + FMA (+ F16C) kernels for amd64. Called only when hasSIMD is set
// (see kernels_float_amd64.go); the Go wrappers in kernels_float.go check bounds and
// handle the ragged tails these loops leave.

#include "textflag.h"
#include "simd_amd64.h"

// The canonical float dot (batch invariance, see matmul.go): per row one
// 8-lane FMA accumulator, lane l summing columns ≡ l (mod 8) in column
// order, folded as ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)). The 4-row dots
// keep their four rows' chains independent (Y0..Y3; the loops run 16
// columns per step, two FMAs per chain), and the tiles (tile*x3SIMD,
// tile*x2SIMD) reproduce them for 3 or 2 tokens at a time.
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

// TILEARGS loads the float tiles' arguments (func tile*SIMD(a *byte, lda
// uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles
// int)) into their registers (see TILEENDS and X4ENDS); defined before the
// first TEXT, as a macro naming FP arguments must be.
#define TILEARGS \
	MOVQ a+0(FP), SI; \
	MOVQ lda+8(FP), R13; \
	MOVQ x+16(FP), DI; \
	MOVQ ldx+24(FP), DX; \
	MOVQ k+32(FP), R14; \
	MOVQ dst+40(FP), AX; \
	MOVQ ldd+48(FP), R12; \
	MOVQ tiles+56(FP), R11

// Row pointers of the 4-row dots: SI = row 0, SI+BX = row 1, R8 = row 2,
// R8+BX = row 3. DI walks x, CX counts columns left.
//
// The 4-row dots prefetch each row's stream pf bytes ahead of the loop's
// current column (the pf argument): rows 0 and 2 at SI+pf and R8+pf, rows 1
// and 3 at SI+lda+pf and R8+lda+pf. PFSETUP sets R13 = pf, R14 = pf + lda;
// PFAHEAD issues the four prefetches. The callers choose pf (dot4Ahead in
// kernels_float.go):
//   - four adjacent rows (lda = the row's bytes): pf = 12·lda, the rows
//     three groups ahead (r+12..r+15) at the current column. The hardware
//     streamer stops at every 4 KiB page and, with four rows read side by
//     side, rediscovers each new row late. One group ahead measured 10-20%
//     slower from DRAM at 768 and 2048 columns, one thread; two or four
//     groups ahead about as fast as three (BenchmarkDecodeRowLength).
//   - four streams (lda = a quarter of a chunk's rows, dot4Rows): each row
//     runs on into the next row of its stream, so pf is a distance in bytes
//     along the stream (dot4StreamAhead).
#define PFSETUP \
	MOVQ pf+40(FP), R13; \
	LEAQ (R13)(BX*1), R14

#define PFAHEAD \
	PREFETCHT0 (SI)(R13*1); \
	PREFETCHT0 (SI)(R14*1); \
	PREFETCHT0 (R8)(R13*1); \
	PREFETCHT0 (R8)(R14*1)

// func dot4F32SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, pf uintptr)
// n is a multiple of 8.
TEXT ·dot4F32SIMD(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*2), R8
	PFSETUP
	ZERO8
	SUBQ $16, CX
	JL   f32tail

f32loop:
	PFAHEAD
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

// func dot4F16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, pf uintptr)
// n is a multiple of 8. VCVTPH2PS widens 8 halves (16 bytes) to 8 floats.
TEXT ·dot4F16SIMD(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*2), R8
	PFSETUP
	ZERO8
	SUBQ $16, CX
	JL   f16tail

f16loop:
	PFAHEAD
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

// func dot4BF16SIMD(w *byte, lda uintptr, x *float32, n int, out *[4]float32, pf uintptr)
// n is a multiple of 8. bfloat16 is the top half of a float32: zero-extend
// to 32 bits and shift left 16.
TEXT ·dot4BF16SIMD(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ lda+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (SI)(BX*2), R8
	PFSETUP
	ZERO8
	SUBQ $16, CX
	JL   bf16tail

bf16loop:
	PFAHEAD
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

// FOLD4 folds four tile accumulators A-D as REDUCE4 folds four rows of
// dot4 (each to ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7))) and stores the
// four sums at dst in the order A, B, C, D. A and B are clobbered (XA,
// XB their low halves).
#define FOLD4(A, B, C, D, XA, XB, dst) \
	VHADDPS      B, A, A; \
	VHADDPS      D, C, C; \
	VHADDPS      C, A, A; \
	VEXTRACTF128 $1, A, XB; \
	VADDPS       XB, XA, XA; \
	VMOVUPS      XA, dst

// The weight loads of the tiles: 8 columns of a row at src widened
// exactly to 8 float32 in Y15 (F32 as is, F16 by VCVTPH2PS, BF16 by a
// 16-bit left shift), as the row dots widen them.
#define WF32(src) VMOVUPS src, Y15
#define WF16(src) VCVTPH2PS src, Y15
#define WBF16(src) VPMOVZXWD src, Y15; VPSLLD $16, Y15, Y15

// FMA3 and FMA2 add the widened row in Y15 times the tokens' columns in
// Y12-Y14 (Y12-Y13) to the accumulators a0-a2 (a0-a1).
#define FMA3(a0, a1, a2) \
	VFMADD231PS Y15, Y12, a0; \
	VFMADD231PS Y15, Y13, a1; \
	VFMADD231PS Y15, Y14, a2

#define FMA2(a0, a1) \
	VFMADD231PS Y15, Y12, a0; \
	VFMADD231PS Y15, Y13, a1

// The batch-invariant GEMM tiles:
//
//	func tile{F32,F16,BF16}x3SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)
//	func tile{F32,F16,BF16}x2SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)
//
// tiles ≥ 1 tiles, one after another, of 4 weight rows (a + r·lda bytes,
// of the kernel's type; the next tile's 4·lda further on) times 3 (2)
// tokens (x + t·ldx bytes) over k columns (a positive multiple of 8):
// dst[t·ldd bytes + r] = row r · token t with exactly the arithmetic of the row
// dot (dot4F32SIMD, dot4F16SIMD, dot4BF16SIMD) for that row and token:
// the row widened exactly in registers, one 8-lane FMA accumulator over
// the columns in order, folded as REDUCE4 folds it (FOLD4). Lanes run
// along K, never across tokens, so a token's result does not depend on
// its neighbours (tinyBLAS-style). Per 8 columns the 4×3 tile loads 3
// activation vectors and widens 4 weight vectors for 12 FMAs;
// accumulator Y(nt·r+t) holds (r, t), and each token's four
// row sums are folded together and stored as one vector. F16 and BF16 rows are read in
// place: no widened copy of the block is written first.
//
// Registers: SI, R8, R9, R10 the ends of rows 0-3 (row + k elements);
// DI, DX, BX the ends of tokens 0-2; CX the column index, from -k up to
// 0, so every load is end + CX·size and the loop's bookkeeping is one ADDQ
// and its JNZ (pointer bumps for each stream and a separate count
// measured ~7% slower at K = 768, the block's rows in L2); AX token 0's
// dst, R12 its stride; R11 tiles left, R13 lda, R14 k. One call per block
// of rows and group of tokens: a call per 4-row tile cost ~15 ns in Go
// around ~270 ns of tile at K = 768.
//
// TILEENDS(SZ) turns the argument pointers into the ends above (SZ the
// weight element's bytes); each TEXT loads the arguments itself, for vet.
#define TILEENDS(SZ) \
	LEAQ (DI)(R14*4), DI; \
	LEAQ (DI)(DX*1), BX; \
	LEAQ (BX)(DX*1), BX; \
	ADDQ DI, DX; \
	LEAQ (SI)(R14*SZ), SI; \
	LEAQ (SI)(R13*1), R8; \
	LEAQ (R8)(R13*1), R9; \
	LEAQ (R9)(R13*1), R10

// TILEPROLOG starts a tile: the column index and the 12 accumulators.
#define TILEPROLOG \
	MOVQ   R14, CX; \
	NEGQ   CX; \
	ZERO8; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11

// TILENEXT(tile): on to the next 4-row tile (R11 tiles left; each row end
// 4·lda on), back to label tile, or return.
#define TILENEXT(tile) \
	ADDQ       $16, AX; \
	LEAQ       (SI)(R13*4), SI; \
	LEAQ       (R8)(R13*4), R8; \
	LEAQ       (R9)(R13*4), R9; \
	LEAQ       (R10)(R13*4), R10; \
	DECQ       R11; \
	JNZ        tile; \
	VZEROUPPER; \
	RET

#define TILE3EPILOG(tile) \
	FOLD4(Y0, Y3, Y6, Y9, X0, X3, (AX)); \
	FOLD4(Y1, Y4, Y7, Y10, X1, X4, (AX)(R12*1)); \
	FOLD4(Y2, Y5, Y8, Y11, X2, X5, (AX)(R12*2)); \
	TILENEXT(tile)

#define TILE2EPILOG(tile) \
	FOLD4(Y0, Y2, Y4, Y6, X0, X2, (AX)); \
	FOLD4(Y1, Y3, Y5, Y7, X1, X3, (AX)(R12*1)); \
	TILENEXT(tile)

#define X3LOADS \
	VMOVUPS (DI)(CX*4), Y12; \
	VMOVUPS (DX)(CX*4), Y13; \
	VMOVUPS (BX)(CX*4), Y14

#define X2LOADS \
	VMOVUPS (DI)(CX*4), Y12; \
	VMOVUPS (DX)(CX*4), Y13

TEXT ·tileF32x3SIMD(SB), NOSPLIT, $0-64
	TILEARGS
	TILEENDS(4)

tf32x3tile:
	TILEPROLOG
	PCALIGN $32

tf32x3loop:
	X3LOADS
	WF32((SI)(CX*4))
	FMA3(Y0, Y1, Y2)
	WF32((R8)(CX*4))
	FMA3(Y3, Y4, Y5)
	WF32((R9)(CX*4))
	FMA3(Y6, Y7, Y8)
	WF32((R10)(CX*4))
	FMA3(Y9, Y10, Y11)
	ADDQ $8, CX
	JNZ  tf32x3loop
	TILE3EPILOG(tf32x3tile)

TEXT ·tileF16x3SIMD(SB), NOSPLIT, $0-64
	TILEARGS
	TILEENDS(2)

tf16x3tile:
	TILEPROLOG
	PCALIGN $32

tf16x3loop:
	X3LOADS
	WF16((SI)(CX*2))
	FMA3(Y0, Y1, Y2)
	WF16((R8)(CX*2))
	FMA3(Y3, Y4, Y5)
	WF16((R9)(CX*2))
	FMA3(Y6, Y7, Y8)
	WF16((R10)(CX*2))
	FMA3(Y9, Y10, Y11)
	ADDQ $8, CX
	JNZ  tf16x3loop
	TILE3EPILOG(tf16x3tile)

TEXT ·tileBF16x3SIMD(SB), NOSPLIT, $0-64
	TILEARGS
	TILEENDS(2)

tbf16x3tile:
	TILEPROLOG
	PCALIGN $32

tbf16x3loop:
	X3LOADS
	WBF16((SI)(CX*2))
	FMA3(Y0, Y1, Y2)
	WBF16((R8)(CX*2))
	FMA3(Y3, Y4, Y5)
	WBF16((R9)(CX*2))
	FMA3(Y6, Y7, Y8)
	WBF16((R10)(CX*2))
	FMA3(Y9, Y10, Y11)
	ADDQ $8, CX
	JNZ  tbf16x3loop
	TILE3EPILOG(tbf16x3tile)

TEXT ·tileF32x2SIMD(SB), NOSPLIT, $0-64
	TILEARGS
	TILEENDS(4)

tf32x2tile:
	TILEPROLOG
	PCALIGN $32

tf32x2loop:
	X2LOADS
	WF32((SI)(CX*4))
	FMA2(Y0, Y1)
	WF32((R8)(CX*4))
	FMA2(Y2, Y3)
	WF32((R9)(CX*4))
	FMA2(Y4, Y5)
	WF32((R10)(CX*4))
	FMA2(Y6, Y7)
	ADDQ $8, CX
	JNZ  tf32x2loop
	TILE2EPILOG(tf32x2tile)

TEXT ·tileF16x2SIMD(SB), NOSPLIT, $0-64
	TILEARGS
	TILEENDS(2)

tf16x2tile:
	TILEPROLOG
	PCALIGN $32

tf16x2loop:
	X2LOADS
	WF16((SI)(CX*2))
	FMA2(Y0, Y1)
	WF16((R8)(CX*2))
	FMA2(Y2, Y3)
	WF16((R9)(CX*2))
	FMA2(Y4, Y5)
	WF16((R10)(CX*2))
	FMA2(Y6, Y7)
	ADDQ $8, CX
	JNZ  tf16x2loop
	TILE2EPILOG(tf16x2tile)

TEXT ·tileBF16x2SIMD(SB), NOSPLIT, $0-64
	TILEARGS
	TILEENDS(2)

tbf16x2tile:
	TILEPROLOG
	PCALIGN $32

tbf16x2loop:
	X2LOADS
	WBF16((SI)(CX*2))
	FMA2(Y0, Y1)
	WBF16((R8)(CX*2))
	FMA2(Y2, Y3)
	WBF16((R9)(CX*2))
	FMA2(Y4, Y5)
	WBF16((R10)(CX*2))
	FMA2(Y6, Y7)
	ADDQ $8, CX
	JNZ  tbf16x2loop
	TILE2EPILOG(tbf16x2tile)

// The four-token tiles run a block's 4-row tiles as pairs of rows (2·tiles
// pairs) by four tokens: 8 accumulators (row r, token t in Y(4r+t)), the
// tokens' columns in Y8-Y11, the widened row in Y15. Per 8 columns they
// load 4 token vectors and 2 rows for 8 FMAs (the 4×2 tiles: 2 and 4),
// and read the rows once for four tokens, where two 4×2 passes read
// them twice: a block of a few tokens (an expert's share of a prefill, a
// handful of sequences decoding together) is bound by that first read
// from DRAM. Every (row, token) keeps dot4's accumulator and fold
// (FOLD2 folds a row as FOLD4 does), so the same bits.
//
// Registers: SI, R8 the ends of the pair's rows; DI, DX, BX, R9 the ends
// of tokens 0-3; CX the column index from -k; AX token 0's dst, R12 its
// stride, R10 = 3·R12; R11 pairs left, R13 lda, R14 k; R15 the prefetch
// pointer (X4PF).

// FOLD2 folds accumulators A and B (rows r, r+1 of one token) as FOLD4
// folds each row and stores the two sums at dst. A is clobbered.
#define FOLD2(A, B, XA, XB, dst) \
	VHADDPS      B, A, A; \
	VHADDPS      A, A, A; \
	VEXTRACTF128 $1, A, XB; \
	VADDPS       XB, XA, XA; \
	VMOVQ        XA, dst

#define X4ENDS(SZ) \
	LEAQ (DI)(R14*4), DI; \
	LEAQ (DI)(DX*1), BX; \
	LEAQ (BX)(DX*1), BX; \
	LEAQ (BX)(DX*1), R9; \
	ADDQ DI, DX; \
	LEAQ (SI)(R14*SZ), SI; \
	LEAQ (SI)(R13*1), R8; \
	LEAQ (R12)(R12*2), R10; \
	SHLQ $1, R11

#define X4PROLOG \
	MOVQ R14, CX; \
	NEGQ CX; \
	ZERO8

// X4PF(SZ) points R15 at the start of rows r+4, r+5 (SZ bytes per
// element), the pair after next: the pair's two rows are one run of 2·lda
// bytes, so one prefetch per loop step (X4PFSTEP: the bytes of the two
// rows a step reads) walks the run two pairs ahead. The four-token tile
// reads its rows from DRAM more often than not, and two row streams alone
// left the hardware prefetch behind (BenchmarkGEMM F16 n=4 on one thread,
// interleaved x3: 2048x2048 40-52 against 31-39 GFLOP/s without it, 512
// columns 45-51 against 25-27).
#define X4PF(SZ) \
	LEAQ 0(R14*SZ), R15; \
	NEGQ R15; \
	ADDQ SI, R15; \
	LEAQ (R15)(R13*4), R15

#define X4PFSTEP(bytes) \
	PREFETCHT0 (R15); \
	ADDQ       $bytes, R15

#define X4LOADS \
	VMOVUPS (DI)(CX*4), Y8; \
	VMOVUPS (DX)(CX*4), Y9; \
	VMOVUPS (BX)(CX*4), Y10; \
	VMOVUPS (R9)(CX*4), Y11

#define FMA4(a0, a1, a2, a3) \
	VFMADD231PS Y15, Y8, a0; \
	VFMADD231PS Y15, Y9, a1; \
	VFMADD231PS Y15, Y10, a2; \
	VFMADD231PS Y15, Y11, a3

// X4EPILOG(pair): the pair's sums to dst, on to the next pair (rows 2·lda
// on, dst 8 bytes on), back to label pair, or return.
#define X4EPILOG(pair) \
	FOLD2(Y0, Y4, X0, X4, (AX)); \
	FOLD2(Y1, Y5, X1, X5, (AX)(R12*1)); \
	FOLD2(Y2, Y6, X2, X6, (AX)(R12*2)); \
	FOLD2(Y3, Y7, X3, X7, (AX)(R10*1)); \
	ADDQ $8, AX; \
	LEAQ (SI)(R13*2), SI; \
	LEAQ (R8)(R13*2), R8; \
	DECQ R11; \
	JNZ  pair; \
	VZEROUPPER; \
	RET

// func tile{F32,F16,BF16}x4SIMD(a *byte, lda uintptr, x *float32, ldx uintptr, k int, dst *float32, ldd uintptr, tiles int)
TEXT ·tileF32x4SIMD(SB), NOSPLIT, $0-64
	TILEARGS
	X4ENDS(4)

tf32x4pair:
	X4PROLOG
	X4PF(4)
	PCALIGN $32

tf32x4loop:
	X4PFSTEP(64)
	X4LOADS
	WF32((SI)(CX*4))
	FMA4(Y0, Y1, Y2, Y3)
	WF32((R8)(CX*4))
	FMA4(Y4, Y5, Y6, Y7)
	ADDQ $8, CX
	JNZ  tf32x4loop
	X4EPILOG(tf32x4pair)

TEXT ·tileF16x4SIMD(SB), NOSPLIT, $0-64
	TILEARGS
	X4ENDS(2)

tf16x4pair:
	X4PROLOG
	X4PF(2)
	PCALIGN $32

tf16x4loop:
	X4PFSTEP(32)
	X4LOADS
	WF16((SI)(CX*2))
	FMA4(Y0, Y1, Y2, Y3)
	WF16((R8)(CX*2))
	FMA4(Y4, Y5, Y6, Y7)
	ADDQ $8, CX
	JNZ  tf16x4loop
	X4EPILOG(tf16x4pair)

TEXT ·tileBF16x4SIMD(SB), NOSPLIT, $0-64
	TILEARGS
	X4ENDS(2)

tbf16x4pair:
	X4PROLOG
	X4PF(2)
	PCALIGN $32

tbf16x4loop:
	X4PFSTEP(32)
	X4LOADS
	WBF16((SI)(CX*2))
	FMA4(Y0, Y1, Y2, Y3)
	WBF16((R8)(CX*2))
	FMA4(Y4, Y5, Y6, Y7)
	ADDQ $8, CX
	JNZ  tbf16x4loop
	X4EPILOG(tbf16x4pair)


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
