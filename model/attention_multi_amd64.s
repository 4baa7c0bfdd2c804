// Multi-query attention kernels (AVX2 + FMA; F16C for F16 rows): three
// queries against the same cache rows at once, so a K or V row is read
// (and widened) once for three queries instead of once each — the queries
// being a KV group's heads of one token or consecutive tokens of one
// prompt (attendRange). Each (query, row) score and each output column
// takes exactly the arithmetic of the one-query kernels
// (attention_amd64.s): the same bits, so a token's attention does not
// depend on which tokens share its pass.

#include "textflag.h"
#include "attention_amd64.h"

// ROWF32(addr, y), ROWF16(addr, y): eight columns of a cache row as
// float32 in y.
#define ROWF32(addr, y) VMOVUPS addr, y
#define ROWF16(addr, y) VCVTPH2PS addr, y

// The score kernels (attnScores3AVX2, attnScores3F16AVX2).
//
// Registers: DI query 0 (walking), R8 and R9 the byte offsets of queries
// 1 and 2 from it; SI row 0 and R10 row 2 (walking), BX the row stride;
// R11-R13 the three outputs; CX columns left, DX rows left; R14 the query
// bytes (4·hd), AX the row bytes. Four rows × three queries: accumulator
// Y(3r+t) holds (row r, query t); per 8 columns the three queries are
// loaded once (Y12-Y14) and each row once (Y15) for twelve FMAs. One row
// at a time at the end: Y0-Y2.

// S3PROLOG(rb): the arguments into registers, rb the row bytes per column.
#define S3PROLOG(rb) \
	MOVQ  q0+0(FP), DI; \
	MOVQ  q1+8(FP), R8; \
	MOVQ  q2+16(FP), R9; \
	SUBQ  DI, R8; \
	SUBQ  DI, R9; \
	MOVQ  k+24(FP), SI; \
	MOVQ  stride+32(FP), BX; \
	MOVQ  n+40(FP), DX; \
	MOVQ  hd+48(FP), AX; \
	LEAQ  (AX*4), R14; \
	IMULQ $rb, AX; \
	MOVQ  out0+64(FP), R11; \
	MOVQ  out1+72(FP), R12; \
	MOVQ  out2+80(FP), R13

#define S3ZERO \
	LEAQ   (SI)(BX*2), R10; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	MOVQ   hd+48(FP), CX

#define S3QUERIES \
	VMOVUPS (DI), Y12; \
	VMOVUPS (DI)(R8*1), Y13; \
	VMOVUPS (DI)(R9*1), Y14

// S3FMA3(a, b, c): the row in Y15 times the three queries into a, b, c.
#define S3FMA3(a, b, c) \
	VFMADD231PS Y12, Y15, a; \
	VFMADD231PS Y13, Y15, b; \
	VFMADD231PS Y14, Y15, c

// S3STEP4(ROW, w): eight columns of the four rows (w row bytes).
#define S3STEP4(ROW, w) \
	S3QUERIES; \
	ROW((SI), Y15); \
	S3FMA3(Y0, Y1, Y2); \
	ROW((SI)(BX*1), Y15); \
	S3FMA3(Y3, Y4, Y5); \
	ROW((R10), Y15); \
	S3FMA3(Y6, Y7, Y8); \
	ROW((R10)(BX*1), Y15); \
	S3FMA3(Y9, Y10, Y11); \
	ADDQ $32, DI; \
	ADDQ $w, SI; \
	ADDQ $w, R10; \
	SUBQ $8, CX

// S3STORE4: the four rows' scores of each query, folded and scaled, and
// on to the next four rows.
#define S3STORE4 \
	VBROADCASTSS scale+56(FP), X15; \
	FOLD4ROWS(Y0, Y3, Y6, Y9, X0, X12); \
	FOLD4ROWS(Y1, Y4, Y7, Y10, X1, X13); \
	FOLD4ROWS(Y2, Y5, Y8, Y11, X2, X14); \
	VMULPS       X15, X0, X0; \
	VMULPS       X15, X1, X1; \
	VMULPS       X15, X2, X2; \
	VMOVUPS      X0, (R11); \
	VMOVUPS      X1, (R12); \
	VMOVUPS      X2, (R13); \
	ADDQ         $16, R11; \
	ADDQ         $16, R12; \
	ADDQ         $16, R13; \
	SUBQ         R14, DI; \
	SUBQ         AX, SI; \
	LEAQ         (SI)(BX*4), SI

#define S3ZERO1 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	MOVQ   hd+48(FP), CX

// S3STEP1(ROW, w): eight columns of one row.
#define S3STEP1(ROW, w) \
	S3QUERIES; \
	ROW((SI), Y15); \
	S3FMA3(Y0, Y1, Y2); \
	ADDQ $32, DI; \
	ADDQ $w, SI; \
	SUBQ $8, CX

#define S3STORE1 \
	VBROADCASTSS scale+56(FP), X15; \
	FOLD1ROW(Y0, X0, X12); \
	FOLD1ROW(Y1, X1, X13); \
	FOLD1ROW(Y2, X2, X14); \
	VMULSS       X15, X0, X0; \
	VMULSS       X15, X1, X1; \
	VMULSS       X15, X2, X2; \
	VMOVSS       X0, (R11); \
	VMOVSS       X1, (R12); \
	VMOVSS       X2, (R13); \
	ADDQ         $4, R11; \
	ADDQ         $4, R12; \
	ADDQ         $4, R13; \
	SUBQ         R14, DI; \
	SUBQ         AX, SI; \
	ADDQ         BX, SI

// The accumulation kernels (attnAccum3AVX2, attnAccum3F16AVX2).
//
// Registers: DI, R8, R9 the three outputs' current 32 columns; SI the
// rows' (walking by 32 columns), R10 the current row, BX the stride;
// R11-R13 the three weight rows a_t, AX the byte offset of the current
// row's weight; CX 32-column chunks left, DX rows left. Per chunk the
// three outputs' 32 columns stay in Y0-Y3, Y4-Y7, Y8-Y11 over all rows;
// per row the weights are broadcast once (Y12-Y14) and each eight columns
// of the row are loaded once (Y15) for three FMAs.

#define A3PROLOG \
	MOVQ out0+0(FP), DI; \
	MOVQ out1+8(FP), R8; \
	MOVQ out2+16(FP), R9; \
	MOVQ v+24(FP), SI; \
	MOVQ stride+32(FP), BX; \
	MOVQ hd+48(FP), CX; \
	SHRQ $5, CX; \
	MOVQ a0+56(FP), R11; \
	MOVQ a1+64(FP), R12; \
	MOVQ a2+72(FP), R13

// A3LOAD: the three outputs' 32 columns into Y0-Y11; back to the first
// row and weight.
#define A3LOAD \
	VMOVUPS (DI), Y0; \
	VMOVUPS 32(DI), Y1; \
	VMOVUPS 64(DI), Y2; \
	VMOVUPS 96(DI), Y3; \
	VMOVUPS (R8), Y4; \
	VMOVUPS 32(R8), Y5; \
	VMOVUPS 64(R8), Y6; \
	VMOVUPS 96(R8), Y7; \
	VMOVUPS (R9), Y8; \
	VMOVUPS 32(R9), Y9; \
	VMOVUPS 64(R9), Y10; \
	VMOVUPS 96(R9), Y11; \
	MOVQ    SI, R10; \
	XORQ    AX, AX; \
	MOVQ    n+40(FP), DX

// A3STORE: Y0-Y11 back to the outputs, then on to their next 32 columns.
#define A3STORE \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	VMOVUPS Y4, (R8); \
	VMOVUPS Y5, 32(R8); \
	VMOVUPS Y6, 64(R8); \
	VMOVUPS Y7, 96(R8); \
	VMOVUPS Y8, (R9); \
	VMOVUPS Y9, 32(R9); \
	VMOVUPS Y10, 64(R9); \
	VMOVUPS Y11, 96(R9); \
	ADDQ    $128, DI; \
	ADDQ    $128, R8; \
	ADDQ    $128, R9

// A3FMA3(a, b, c): the eight columns in Y15 times the three weights into
// a, b, c.
#define A3FMA3(a, b, c) \
	VFMADD231PS Y15, Y12, a; \
	VFMADD231PS Y15, Y13, b; \
	VFMADD231PS Y15, Y14, c

// A3ROW(ROW, w): one row's 32 columns (w row bytes per 8 columns).
#define A3ROW(ROW, w) \
	VBROADCASTSS (R11)(AX*1), Y12; \
	VBROADCASTSS (R12)(AX*1), Y13; \
	VBROADCASTSS (R13)(AX*1), Y14; \
	ROW((R10), Y15); \
	A3FMA3(Y0, Y4, Y8); \
	ROW(w(R10), Y15); \
	A3FMA3(Y1, Y5, Y9); \
	ROW(2*w(R10), Y15); \
	A3FMA3(Y2, Y6, Y10); \
	ROW(3*w(R10), Y15); \
	A3FMA3(Y3, Y7, Y11); \
	ADDQ $4, AX; \
	ADDQ BX, R10; \
	DECQ DX

// func attnScores3AVX2(q0, q1, q2 *float32, k *float32, stride uintptr, n int, hd int, scale float32, out0, out1, out2 *float32)
//
// out_t[i] = scale · Σ_{c<hd} q_t[c]·k_i[c] for the queries t < 3 and
// the n ≥ 1 rows k_i = k + i·stride (stride in bytes); hd is a positive
// multiple of 8. The bits of attnScoresAVX2 for each query.
TEXT ·attnScores3AVX2(SB), NOSPLIT, $0-88
	S3PROLOG(4)
	SUBQ $4, DX
	JL   s3f32_1start

s3f32_4rows:
	S3ZERO

s3f32_4loop:
	S3STEP4(ROWF32, 32)
	JNZ s3f32_4loop
	S3STORE4
	SUBQ $4, DX
	JGE  s3f32_4rows

s3f32_1start:
	ADDQ $4, DX
	JZ   s3f32done

s3f32_1row:
	S3ZERO1

s3f32_1loop:
	S3STEP1(ROWF32, 32)
	JNZ s3f32_1loop
	S3STORE1
	DECQ DX
	JNZ  s3f32_1row

s3f32done:
	VZEROUPPER
	RET

// func attnScores3F16AVX2(q0, q1, q2 *float32, k *byte, stride uintptr, n int, hd int, scale float32, out0, out1, out2 *float32)
//
// attnScores3AVX2 over F16 rows (hd halves each): the bits of
// attnScoresF16AVX2 for each query.
TEXT ·attnScores3F16AVX2(SB), NOSPLIT, $0-88
	S3PROLOG(2)
	SUBQ $4, DX
	JL   s3f16_1start

s3f16_4rows:
	S3ZERO

s3f16_4loop:
	S3STEP4(ROWF16, 16)
	JNZ s3f16_4loop
	S3STORE4
	SUBQ $4, DX
	JGE  s3f16_4rows

s3f16_1start:
	ADDQ $4, DX
	JZ   s3f16done

s3f16_1row:
	S3ZERO1

s3f16_1loop:
	S3STEP1(ROWF16, 16)
	JNZ s3f16_1loop
	S3STORE1
	DECQ DX
	JNZ  s3f16_1row

s3f16done:
	VZEROUPPER
	RET

// func attnAccum3AVX2(out0, out1, out2 *float32, v *float32, stride uintptr, n int, hd int, a0, a1, a2 *float32)
//
// out_t[c] += Σ_{i<n} a_t[i]·v_i[c] for the queries t < 3, c < hd and the
// n ≥ 1 rows v_i = v + i·stride (stride in bytes); hd a positive multiple
// of 32. Every output column takes its rows' FMAs in order, as in
// attnAccumAVX2: its bits for each query. Two outputs
// may be one slice with equal weights (both compute the same values).
TEXT ·attnAccum3AVX2(SB), NOSPLIT, $0-80
	A3PROLOG

a3f32chunk:
	A3LOAD

a3f32row:
	A3ROW(ROWF32, 32)
	JNZ a3f32row
	A3STORE
	ADDQ $128, SI
	DECQ CX
	JNZ  a3f32chunk
	VZEROUPPER
	RET

// func attnAccum3F16AVX2(out0, out1, out2 *float32, v *byte, stride uintptr, n int, hd int, a0, a1, a2 *float32)
//
// attnAccum3AVX2 over F16 rows: the bits of attnAccumF16AVX2.
TEXT ·attnAccum3F16AVX2(SB), NOSPLIT, $0-80
	A3PROLOG

a3f16chunk:
	A3LOAD

a3f16row:
	A3ROW(ROWF16, 16)
	JNZ a3f16row
	A3STORE
	ADDQ $64, SI
	DECQ CX
	JNZ  a3f16chunk
	VZEROUPPER
	RET
