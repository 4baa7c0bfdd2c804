// NEON quantized row dots for arm64 (see quantdot_arm64.go). Vector integer
// and widening instructions Go's assembler does not know are WORD
// encodings with the instruction in the comment.
//
// Common arguments (as the amd64 kernels): dst (rows) float32 results, rows,
// w the first weight row (stride bytes apart), q the int8 activations with
// one float32 scale per block at d, aux (unused for Q8_0; Q8_K: the int16
// bsums, 16 per super-block), nb blocks per row.

#include "textflag.h"

// Q8_0 block: f16 scale dw, then 32 int8 quants. Per block the 32 products
// are summed in int32 lanes, converted to float and scaled by dw·da into
// the float32x4 accumulator V16; the lanes are added at the end of a row.

// Q80_ROW_START sets up row pointers: R7 = weights, R8 = q, R9 = d, R10 =
// block count, V16 = 0.
#define Q80_ROW_START \
	MOVD R2, R7 \
	MOVD R4, R8 \
	MOVD R5, R9 \
	MOVD R6, R10 \
	VEOR V16.B16, V16.B16, V16.B16

#define Q80_ARGS \
	MOVD dst+0(FP), R0 \
	MOVD rows+8(FP), R1 \
	MOVD w+16(FP), R2 \
	MOVD stride+24(FP), R3 \
	MOVD q+32(FP), R4 \
	MOVD d+40(FP), R5 \
	MOVD nb+56(FP), R6

// Q80_BLOCK_LOAD loads one block: V0,V1 = weight quants, V2,V3 = q, and
// F4 = dw·da.
#define Q80_BLOCK_LOAD \
	MOVHU.P 2(R7), R11 \
	VLD1.P 32(R7), [V0.B16, V1.B16] \
	VLD1.P 32(R8), [V2.B16, V3.B16] \
	FMOVS.P 4(R9), F4 \
	FMOVS R11, F5

// func qdotQ8_0SDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotQ8_0SDOT(SB), NOSPLIT, $0-64
	Q80_ARGS
sdotrow:
	Q80_ROW_START
sdotblock:
	Q80_BLOCK_LOAD
	WORD $0x1ee240a5 // fcvt s5, h5
	WORD $0x1e250884 // fmul s4, s4, s5
	VEOR V6.B16, V6.B16, V6.B16
	WORD $0x4e829406 // sdot v6.4s, v0.16b, v2.16b
	WORD $0x4e839426 // sdot v6.4s, v1.16b, v3.16b
	WORD $0x4e21d8c6 // scvtf v6.4s, v6.4s
	WORD $0x4f8410d0 // fmla v16.4s, v6.4s, v4.s[0]
	SUBS $1, R10, R10
	BNE sdotblock
	WORD $0x6e30d610 // faddp v16.4s, v16.4s, v16.4s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS.P F16, 4(R0)
	ADD R3, R2, R2
	SUBS $1, R1, R1
	BNE sdotrow
	RET

// func qdotQ8_0NEON(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// Without SDOT: SMULL/SMLAL2 sum pairs of products in int16 lanes (|w·q|
// ≤ 128·127, as quantized activations lie in [−127, 127], so a pair fits),
// then SADDLP/SADALP widen and add them pairwise into int32 lanes.
TEXT ·qdotQ8_0NEON(SB), NOSPLIT, $0-64
	Q80_ARGS
neonrow:
	Q80_ROW_START
neonblock:
	Q80_BLOCK_LOAD
	WORD $0x1ee240a5 // fcvt s5, h5
	WORD $0x1e250884 // fmul s4, s4, s5
	WORD $0x0e22c006 // smull v6.8h, v0.8b, v2.8b
	WORD $0x4e228006 // smlal2 v6.8h, v0.16b, v2.16b
	WORD $0x0e23c027 // smull v7.8h, v1.8b, v3.8b
	WORD $0x4e238027 // smlal2 v7.8h, v1.16b, v3.16b
	WORD $0x4e6028c6 // saddlp v6.4s, v6.8h
	WORD $0x4e6068e6 // sadalp v6.4s, v7.8h
	WORD $0x4e21d8c6 // scvtf v6.4s, v6.4s
	WORD $0x4f8410d0 // fmla v16.4s, v6.4s, v4.s[0]
	SUBS $1, R10, R10
	BNE neonblock
	WORD $0x6e30d610 // faddp v16.4s, v16.4s, v16.4s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS.P F16, 4(R0)
	ADD R3, R2, R2
	SUBS $1, R1, R1
	BNE neonrow
	RET
