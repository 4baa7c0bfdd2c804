// NEON quantized row dots for arm64 (see rowdot_quant_arm64.go). Vector integer
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

// Q4_K super-block (144 bytes): f16 d, f16 dmin, 12 bytes of packed 6-bit
// sub-block scales and mins (8 each), 128 bytes of 4-bit quants: byte l of
// chunk j (32 bytes) holds element l of sub-block 2j (low nibble) and of
// sub-block 2j+1 (high nibble). Against Q8_K activations (256 per block,
// float scale da, bsums = sums of 16):
//
//	dw·da·Σ_s sc_s·Σ qw·qa − dmin·da·Σ_s m_s·(bsums[2s]+bsums[2s+1])
//
// Each sub-block's Σ qw·qa is an int32x4 (SDOT, or SMULL/SMLAL2/SADALP:
// nibble·int8 pairs stay far below int16's range), multiplied by its scale
// (MLA by element) into V10; the block's float arithmetic is the
// reference's, in the same order, so results match dotQ.

#define Q4K_ARGS \
	MOVD dst+0(FP), R0 \
	MOVD rows+8(FP), R1 \
	MOVD w+16(FP), R2 \
	MOVD stride+24(FP), R3 \
	MOVD q+32(FP), R4 \
	MOVD d+40(FP), R5 \
	MOVD aux+48(FP), R12 \
	MOVD nb+56(FP), R6 \
	VMOVI $15, V31.B16

// Q4K_ROW_START: R7 = weights, R8 = q, R9 = d, R13 = bsums, R10 = block
// count, S16 = 0 (the row's sum).
#define Q4K_ROW_START \
	MOVD R2, R7 \
	MOVD R4, R8 \
	MOVD R5, R9 \
	MOVD R12, R13 \
	MOVD R6, R10 \
	VEOR V16.B16, V16.B16, V16.B16

// Q4K_BLOCK_HEAD reads the block header: H20 = d, H21 = dmin, S22 = da, and
// unpacks the 6-bit scales (V24 bytes 0-7) and mins (V25 bytes 0-7) from
// the 12 bytes u0, u1, u2 (little-endian words):
//
//	scales 0-3 = u0 & 0x3f3f3f3f   scales 4-7 = (u2 & 0x0f0f0f0f) | ((u0>>6) & 0x03030303)<<4
//	mins 0-3   = u1 & 0x3f3f3f3f   mins 4-7   = ((u2>>4) & 0x0f0f0f0f) | ((u1>>6) & 0x03030303)<<4
#define Q4K_BLOCK_HEAD \
	MOVWU.P 4(R7), R11 \
	FMOVS R11, F20 \
	LSRW $16, R11, R11 \
	FMOVS R11, F21 \
	FMOVS.P 4(R9), F22 \
	MOVD.P 8(R7), R14 \
	MOVWU.P 4(R7), R15 \
	LSR $32, R14, R20 \
	ANDW $0x3f3f3f3f, R14, R19 \
	ANDW $0x3f3f3f3f, R20, R21 \
	LSRW $6, R14, R22 \
	ANDW $0x03030303, R22, R22 \
	ANDW $0x0f0f0f0f, R15, R23 \
	ORRW R22<<4, R23, R23 \
	LSRW $6, R20, R22 \
	ANDW $0x03030303, R22, R22 \
	LSRW $4, R15, R24 \
	ANDW $0x0f0f0f0f, R24, R24 \
	ORRW R22<<4, R24, R24 \
	ORR R23<<32, R19, R19 \
	ORR R24<<32, R21, R21 \
	VMOV R19, V24.D[0] \
	VMOV R21, V25.D[0]

// func qdotQ4_KSDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotQ4_KSDOT(SB), NOSPLIT, $0-64
	Q4K_ARGS
q4ksdotrow:
	Q4K_ROW_START
q4ksdotblock:
	Q4K_BLOCK_HEAD
	WORD $0x1ee24294 // fcvt s20, h20
	WORD $0x1ee242b5 // fcvt s21, h21
	WORD $0x1e360a94 // fmul s20, s20, s22
	WORD $0x1e360ab5 // fmul s21, s21, s22
	// Mins term: Σ_j m_j·(bsums[2j]+bsums[2j+1]) in S28.
	VLD1.P 32(R13), [V26.H8, V27.H8]
	WORD $0x4e7bbf5a // addp v26.8h, v26.8h, v27.8h
	WORD $0x2f08a739 // ushll v25.8h, v25.8b, #0
	WORD $0x0e7ac33c // smull v28.4s, v25.4h, v26.4h
	WORD $0x4e7a833c // smlal2 v28.4s, v25.8h, v26.8h
	WORD $0x4eb1bb9c // addv s28, v28.4s
	WORD $0x5e21db9c // scvtf s28, s28
	// Scales 0-3 in V29, 4-7 in V30, as int32; V10 gathers Σ sc·Σ qw·qa.
	WORD $0x2f08a718 // ushll v24.8h, v24.8b, #0
	WORD $0x2f10a71d // ushll v29.4s, v24.4h, #0
	WORD $0x6f10a71e // ushll2 v30.4s, v24.8h, #0
	VEOR V10.B16, V10.B16, V10.B16
	// Sub-blocks 0 (low nibbles · q[0:32]) and 1 (high · q[32:64]).
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 64(R8), [V2.B16, V3.B16, V4.B16, V5.B16]
	WORD $0x4e3f1c06 // and v6.16b, v0.16b, v31.16b
	WORD $0x4e3f1c27 // and v7.16b, v1.16b, v31.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	WORD $0x4e8294c8 // sdot v8.4s, v6.16b, v2.16b
	WORD $0x4e8394e8 // sdot v8.4s, v7.16b, v3.16b
	WORD $0x4e849409 // sdot v9.4s, v0.16b, v4.16b
	WORD $0x4e859429 // sdot v9.4s, v1.16b, v5.16b
	WORD $0x6f9d010a // mla v10.4s, v8.4s, v29.s[0]
	WORD $0x6fbd012a // mla v10.4s, v9.4s, v29.s[1]
	// Sub-blocks 2 (low nibbles · q[64:96]) and 3 (high · q[96:128]).
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 64(R8), [V2.B16, V3.B16, V4.B16, V5.B16]
	WORD $0x4e3f1c06 // and v6.16b, v0.16b, v31.16b
	WORD $0x4e3f1c27 // and v7.16b, v1.16b, v31.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	WORD $0x4e8294c8 // sdot v8.4s, v6.16b, v2.16b
	WORD $0x4e8394e8 // sdot v8.4s, v7.16b, v3.16b
	WORD $0x4e849409 // sdot v9.4s, v0.16b, v4.16b
	WORD $0x4e859429 // sdot v9.4s, v1.16b, v5.16b
	WORD $0x6f9d090a // mla v10.4s, v8.4s, v29.s[2]
	WORD $0x6fbd092a // mla v10.4s, v9.4s, v29.s[3]
	// Sub-blocks 4 (low nibbles · q[128:160]) and 5 (high · q[160:192]).
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 64(R8), [V2.B16, V3.B16, V4.B16, V5.B16]
	WORD $0x4e3f1c06 // and v6.16b, v0.16b, v31.16b
	WORD $0x4e3f1c27 // and v7.16b, v1.16b, v31.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	WORD $0x4e8294c8 // sdot v8.4s, v6.16b, v2.16b
	WORD $0x4e8394e8 // sdot v8.4s, v7.16b, v3.16b
	WORD $0x4e849409 // sdot v9.4s, v0.16b, v4.16b
	WORD $0x4e859429 // sdot v9.4s, v1.16b, v5.16b
	WORD $0x6f9e010a // mla v10.4s, v8.4s, v30.s[0]
	WORD $0x6fbe012a // mla v10.4s, v9.4s, v30.s[1]
	// Sub-blocks 6 (low nibbles · q[192:224]) and 7 (high · q[224:256]).
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 64(R8), [V2.B16, V3.B16, V4.B16, V5.B16]
	WORD $0x4e3f1c06 // and v6.16b, v0.16b, v31.16b
	WORD $0x4e3f1c27 // and v7.16b, v1.16b, v31.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	WORD $0x4e8294c8 // sdot v8.4s, v6.16b, v2.16b
	WORD $0x4e8394e8 // sdot v8.4s, v7.16b, v3.16b
	WORD $0x4e849409 // sdot v9.4s, v0.16b, v4.16b
	WORD $0x4e859429 // sdot v9.4s, v1.16b, v5.16b
	WORD $0x6f9e090a // mla v10.4s, v8.4s, v30.s[2]
	WORD $0x6fbe092a // mla v10.4s, v9.4s, v30.s[3]
	// sum += dw·da·isum − dmin·da·msum, as the reference rounds it.
	WORD $0x4eb1b94a // addv s10, v10.4s
	WORD $0x5e21d94a // scvtf s10, s10
	WORD $0x1e34094a // fmul s10, s10, s20
	WORD $0x1e350b9c // fmul s28, s28, s21
	WORD $0x1e3c394a // fsub s10, s10, s28
	WORD $0x1e2a2a10 // fadd s16, s16, s10
	SUBS $1, R10, R10
	BNE q4ksdotblock
	FMOVS.P F16, 4(R0)
	ADD R3, R2, R2
	SUBS $1, R1, R1
	BNE q4ksdotrow
	RET

// func qdotQ4_KNEON(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotQ4_KNEON(SB), NOSPLIT, $0-64
	Q4K_ARGS
q4kneonrow:
	Q4K_ROW_START
q4kneonblock:
	Q4K_BLOCK_HEAD
	WORD $0x1ee24294 // fcvt s20, h20
	WORD $0x1ee242b5 // fcvt s21, h21
	WORD $0x1e360a94 // fmul s20, s20, s22
	WORD $0x1e360ab5 // fmul s21, s21, s22
	// Mins term: Σ_j m_j·(bsums[2j]+bsums[2j+1]) in S28.
	VLD1.P 32(R13), [V26.H8, V27.H8]
	WORD $0x4e7bbf5a // addp v26.8h, v26.8h, v27.8h
	WORD $0x2f08a739 // ushll v25.8h, v25.8b, #0
	WORD $0x0e7ac33c // smull v28.4s, v25.4h, v26.4h
	WORD $0x4e7a833c // smlal2 v28.4s, v25.8h, v26.8h
	WORD $0x4eb1bb9c // addv s28, v28.4s
	WORD $0x5e21db9c // scvtf s28, s28
	// Scales 0-3 in V29, 4-7 in V30, as int32; V10 gathers Σ sc·Σ qw·qa.
	WORD $0x2f08a718 // ushll v24.8h, v24.8b, #0
	WORD $0x2f10a71d // ushll v29.4s, v24.4h, #0
	WORD $0x6f10a71e // ushll2 v30.4s, v24.8h, #0
	VEOR V10.B16, V10.B16, V10.B16
	// Sub-blocks 0 (low nibbles · q[0:32]) and 1 (high · q[32:64]).
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 64(R8), [V2.B16, V3.B16, V4.B16, V5.B16]
	WORD $0x4e3f1c06 // and v6.16b, v0.16b, v31.16b
	WORD $0x4e3f1c27 // and v7.16b, v1.16b, v31.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x0e22c0c8 // smull v8.8h, v6.8b, v2.8b
	WORD $0x4e2280c8 // smlal2 v8.8h, v6.16b, v2.16b
	WORD $0x0e23c0eb // smull v11.8h, v7.8b, v3.8b
	WORD $0x4e2380eb // smlal2 v11.8h, v7.16b, v3.16b
	WORD $0x4e602908 // saddlp v8.4s, v8.8h
	WORD $0x4e606968 // sadalp v8.4s, v11.8h
	WORD $0x0e24c009 // smull v9.8h, v0.8b, v4.8b
	WORD $0x4e248009 // smlal2 v9.8h, v0.16b, v4.16b
	WORD $0x0e25c02b // smull v11.8h, v1.8b, v5.8b
	WORD $0x4e25802b // smlal2 v11.8h, v1.16b, v5.16b
	WORD $0x4e602929 // saddlp v9.4s, v9.8h
	WORD $0x4e606969 // sadalp v9.4s, v11.8h
	WORD $0x6f9d010a // mla v10.4s, v8.4s, v29.s[0]
	WORD $0x6fbd012a // mla v10.4s, v9.4s, v29.s[1]
	// Sub-blocks 2 (low nibbles · q[64:96]) and 3 (high · q[96:128]).
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 64(R8), [V2.B16, V3.B16, V4.B16, V5.B16]
	WORD $0x4e3f1c06 // and v6.16b, v0.16b, v31.16b
	WORD $0x4e3f1c27 // and v7.16b, v1.16b, v31.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x0e22c0c8 // smull v8.8h, v6.8b, v2.8b
	WORD $0x4e2280c8 // smlal2 v8.8h, v6.16b, v2.16b
	WORD $0x0e23c0eb // smull v11.8h, v7.8b, v3.8b
	WORD $0x4e2380eb // smlal2 v11.8h, v7.16b, v3.16b
	WORD $0x4e602908 // saddlp v8.4s, v8.8h
	WORD $0x4e606968 // sadalp v8.4s, v11.8h
	WORD $0x0e24c009 // smull v9.8h, v0.8b, v4.8b
	WORD $0x4e248009 // smlal2 v9.8h, v0.16b, v4.16b
	WORD $0x0e25c02b // smull v11.8h, v1.8b, v5.8b
	WORD $0x4e25802b // smlal2 v11.8h, v1.16b, v5.16b
	WORD $0x4e602929 // saddlp v9.4s, v9.8h
	WORD $0x4e606969 // sadalp v9.4s, v11.8h
	WORD $0x6f9d090a // mla v10.4s, v8.4s, v29.s[2]
	WORD $0x6fbd092a // mla v10.4s, v9.4s, v29.s[3]
	// Sub-blocks 4 (low nibbles · q[128:160]) and 5 (high · q[160:192]).
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 64(R8), [V2.B16, V3.B16, V4.B16, V5.B16]
	WORD $0x4e3f1c06 // and v6.16b, v0.16b, v31.16b
	WORD $0x4e3f1c27 // and v7.16b, v1.16b, v31.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x0e22c0c8 // smull v8.8h, v6.8b, v2.8b
	WORD $0x4e2280c8 // smlal2 v8.8h, v6.16b, v2.16b
	WORD $0x0e23c0eb // smull v11.8h, v7.8b, v3.8b
	WORD $0x4e2380eb // smlal2 v11.8h, v7.16b, v3.16b
	WORD $0x4e602908 // saddlp v8.4s, v8.8h
	WORD $0x4e606968 // sadalp v8.4s, v11.8h
	WORD $0x0e24c009 // smull v9.8h, v0.8b, v4.8b
	WORD $0x4e248009 // smlal2 v9.8h, v0.16b, v4.16b
	WORD $0x0e25c02b // smull v11.8h, v1.8b, v5.8b
	WORD $0x4e25802b // smlal2 v11.8h, v1.16b, v5.16b
	WORD $0x4e602929 // saddlp v9.4s, v9.8h
	WORD $0x4e606969 // sadalp v9.4s, v11.8h
	WORD $0x6f9e010a // mla v10.4s, v8.4s, v30.s[0]
	WORD $0x6fbe012a // mla v10.4s, v9.4s, v30.s[1]
	// Sub-blocks 6 (low nibbles · q[192:224]) and 7 (high · q[224:256]).
	VLD1.P 32(R7), [V0.B16, V1.B16]
	VLD1.P 64(R8), [V2.B16, V3.B16, V4.B16, V5.B16]
	WORD $0x4e3f1c06 // and v6.16b, v0.16b, v31.16b
	WORD $0x4e3f1c27 // and v7.16b, v1.16b, v31.16b
	WORD $0x6f0c0400 // ushr v0.16b, v0.16b, #4
	WORD $0x6f0c0421 // ushr v1.16b, v1.16b, #4
	WORD $0x0e22c0c8 // smull v8.8h, v6.8b, v2.8b
	WORD $0x4e2280c8 // smlal2 v8.8h, v6.16b, v2.16b
	WORD $0x0e23c0eb // smull v11.8h, v7.8b, v3.8b
	WORD $0x4e2380eb // smlal2 v11.8h, v7.16b, v3.16b
	WORD $0x4e602908 // saddlp v8.4s, v8.8h
	WORD $0x4e606968 // sadalp v8.4s, v11.8h
	WORD $0x0e24c009 // smull v9.8h, v0.8b, v4.8b
	WORD $0x4e248009 // smlal2 v9.8h, v0.16b, v4.16b
	WORD $0x0e25c02b // smull v11.8h, v1.8b, v5.8b
	WORD $0x4e25802b // smlal2 v11.8h, v1.16b, v5.16b
	WORD $0x4e602929 // saddlp v9.4s, v9.8h
	WORD $0x4e606969 // sadalp v9.4s, v11.8h
	WORD $0x6f9e090a // mla v10.4s, v8.4s, v30.s[2]
	WORD $0x6fbe092a // mla v10.4s, v9.4s, v30.s[3]
	// sum += dw·da·isum − dmin·da·msum, as the reference rounds it.
	WORD $0x4eb1b94a // addv s10, v10.4s
	WORD $0x5e21d94a // scvtf s10, s10
	WORD $0x1e34094a // fmul s10, s10, s20
	WORD $0x1e350b9c // fmul s28, s28, s21
	WORD $0x1e3c394a // fsub s10, s10, s28
	WORD $0x1e2a2a10 // fadd s16, s16, s10
	SUBS $1, R10, R10
	BNE q4kneonblock
	FMOVS.P F16, 4(R0)
	ADD R3, R2, R2
	SUBS $1, R1, R1
	BNE q4kneonrow
	RET
