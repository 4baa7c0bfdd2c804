// NEON (SDOT) row dots of IQ4_NL, MXFP4, IQ4_XS and IQ3_S, bit for bit
// the arithmetic of rowdot_iq_ref.go. IQ4_NL and MXFP4: per block, TBL
// looks the 32 codes up in the level table (V31), two SDOTs give eight
// int32 lanes, ADD and ADDV sum them to the block's exact dot P, then
// SCVTF, FMUL by s = dw·da and FADD (never fused) into S16, block after
// block. IQ4_XS and IQ3_S keep eight lanes per super-block in V16 (lanes
// 0-3) and V17 (lanes 4-7); FADDP thrice folds
// ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7)).
// Instructions Go's assembler does not know are WORD encodings, the
// instruction in the comment.
//
// Arguments as the amd64 kernels; for IQ4_NL aux is the level table
// (kIQ4NL), for MXFP4 the 2^(e−128) table (e8m0HalfTab), its levels in
// fp4LevelsARM.

#include "textflag.h"

DATA fp4LevelsARM<>+0(SB)/8, $0x0c08060403020100
DATA fp4LevelsARM<>+8(SB)/8, $0xf4f8fafcfdfeff00
GLOBL fp4LevelsARM<>(SB), RODATA|NOPTR, $16

#define IQ_ARGS \
	MOVD dst+0(FP), R0 \
	MOVD rows+8(FP), R1 \
	MOVD w+16(FP), R2 \
	MOVD stride+24(FP), R3 \
	MOVD q+32(FP), R4 \
	MOVD d+40(FP), R5 \
	MOVD aux+48(FP), R12 \
	MOVD nb+56(FP), R6 \
	VMOVI $15, V30.B16

#define IQ_ROW_START \
	MOVD R2, R7 \
	MOVD R4, R8 \
	MOVD R5, R9 \
	MOVD R6, R10 \
	VEOR V16.B16, V16.B16, V16.B16 \
	VEOR V17.B16, V17.B16, V17.B16

// NL_BLOCK: the 16 code bytes at R7 (post-incremented) against 32
// activations at R8; F4 = s. S16 += float32(s·float32(P)).
#define NL_BLOCK \
	VLD1.P 16(R7), [V0.B16] \
	VLD1.P 32(R8), [V2.B16, V3.B16] \
	VAND V30.B16, V0.B16, V1.B16 \
	VUSHR $4, V0.B16, V0.B16 \
	VTBL V1.B16, [V31.B16], V1.B16 \
	VTBL V0.B16, [V31.B16], V0.B16 \
	VEOR V5.B16, V5.B16, V5.B16 \
	VEOR V6.B16, V6.B16, V6.B16 \
	WORD $0x4e829425 /* sdot v5.4s, v1.16b, v2.16b */ \
	WORD $0x4e839406 /* sdot v6.4s, v0.16b, v3.16b */ \
	VADD V6.S4, V5.S4, V5.S4 \
	VADDV V5.S4, V5 \
	WORD $0x5e21d8a5 /* scvtf s5, s5 */ \
	FMULS F4, F5, F5 \
	FADDS F5, F16, F16

#define NL_ROW_END(label) \
	FMOVS.P F16, 4(R0) \
	ADD R3, R2, R2 \
	SUBS $1, R1, R1 \
	BNE label

#define IQ_ROW_END(label) \
	WORD $0x6e31d610 /* faddp v16.4s, v16.4s, v17.4s */ \
	WORD $0x6e30d610 /* faddp v16.4s, v16.4s, v16.4s */ \
	WORD $0x7e30da10 /* faddp s16, v16.2s */ \
	FMOVS.P F16, 4(R0) \
	ADD R3, R2, R2 \
	SUBS $1, R1, R1 \
	BNE label

// func qdotIQ4_NLSDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotIQ4_NLSDOT(SB), NOSPLIT, $0-64
	IQ_ARGS
	VLD1 (R12), [V31.B16]
nlrow:
	IQ_ROW_START
nlblock:
	MOVHU.P 2(R7), R11
	FMOVS R11, F5
	FMOVS.P 4(R9), F4
	WORD $0x1ee240a5 // fcvt s5, h5
	WORD $0x1e250884 // fmul s4, s4, s5
	NL_BLOCK
	SUBS $1, R10, R10
	BNE nlblock
	NL_ROW_END(nlrow)
	RET

// func qdotMXFP4SDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotMXFP4SDOT(SB), NOSPLIT, $0-64
	IQ_ARGS
	MOVD $fp4LevelsARM<>(SB), R13
	VLD1 (R13), [V31.B16]
mxrow:
	IQ_ROW_START
mxblock:
	MOVBU.P 1(R7), R11
	MOVWU (R12)(R11<<2), R11
	FMOVS R11, F5
	FMOVS.P 4(R9), F4
	WORD $0x1e250884 // fmul s4, s4, s5
	NL_BLOCK
	SUBS $1, R10, R10
	BNE mxblock
	NL_ROW_END(mxrow)
	RET

// XSSUB adds sub-block ib of the IQ4_XS super-block (codes at R7,
// post-incremented; scales_h in R13, scales_l in R14) to the int32 lanes
// V18 (0-3), V19 (4-7): SDOT lanes times the scale ls−32 (MLA by element).
#define XSSUB(ib) \
	UBFXW $(4*ib), R14, $4, R19 \
	UBFXW $(2*ib), R13, $2, R20 \
	ORRW R20<<4, R19, R19 \
	SUBW $32, R19, R19 \
	VMOV R19, V7.S[0] \
	VLD1.P 16(R7), [V0.B16] \
	VLD1.P 32(R8), [V2.B16, V3.B16] \
	VAND V30.B16, V0.B16, V1.B16 \
	VUSHR $4, V0.B16, V0.B16 \
	VTBL V1.B16, [V31.B16], V1.B16 \
	VTBL V0.B16, [V31.B16], V0.B16 \
	VEOR V5.B16, V5.B16, V5.B16 \
	VEOR V6.B16, V6.B16, V6.B16 \
	WORD $0x4e829425 /* sdot v5.4s, v1.16b, v2.16b */ \
	WORD $0x4e839406 /* sdot v6.4s, v0.16b, v3.16b */ \
	WORD $0x6f8700b2 /* mla v18.4s, v5.4s, v7.s[0] */ \
	WORD $0x6f8700d3 /* mla v19.4s, v6.4s, v7.s[0] */

// func qdotIQ4_XSSDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// aux: the level table (kIQ4NL).
TEXT ·qdotIQ4_XSSDOT(SB), NOSPLIT, $0-64
	IQ_ARGS
	VLD1 (R12), [V31.B16]
xsrow:
	IQ_ROW_START
xsblock:
	MOVHU (R7), R11
	MOVHU 2(R7), R13
	MOVWU 4(R7), R14
	ADD $8, R7, R7
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	XSSUB(0)
	XSSUB(1)
	XSSUB(2)
	XSSUB(3)
	XSSUB(4)
	XSSUB(5)
	XSSUB(6)
	XSSUB(7)
	FMOVS R11, F5
	FMOVS.P 4(R9), F4
	WORD $0x1ee240a5 // fcvt s5, h5
	WORD $0x1e250884 // fmul s4, s4, s5
	WORD $0x4e21da52 // scvtf v18.4s, v18.4s
	WORD $0x4e21da73 // scvtf v19.4s, v19.4s
	WORD $0x4f849252 // fmul v18.4s, v18.4s, v4.s[0]
	WORD $0x4f849273 // fmul v19.4s, v19.4s, v4.s[0]
	WORD $0x4e32d610 // fadd v16.4s, v16.4s, v18.4s
	WORD $0x4e33d631 // fadd v17.4s, v17.4s, v19.4s
	SUBS $1, R10, R10
	BNE xsblock
	IQ_ROW_END(xsrow)
	RET

// IQ3_S: the eight grid entries of a sub-block are fetched one by one
// (index qs byte | bit g of qh<<8; the grid's 32-bit entries are the four
// magnitudes of a group in element order) into V1 (groups 0-3) and V0
// (groups 4-7); the 32 sign bits become 0xFF bytes (TBL spreads sign byte
// k over elements 8k..8k+7, AND and CMEQ with the bit of each) that
// negate the activations ((a XOR m) − m); SDOT gives the eight lanes,
// MLA by the odd scale 1+2s adds them into V18, V19 — the exact lane sums
// of rowdot_iq_ref.go — then the IQ4_XS float step.

// Each element's bit (V27), the sign-byte spread for elements 0-15 (V28)
// and 16-31 (V29).
DATA s3SpreadARM<>+0(SB)/8, $0x8040201008040201
DATA s3SpreadARM<>+8(SB)/8, $0x8040201008040201
DATA s3SpreadARM<>+16(SB)/8, $0x0000000000000000
DATA s3SpreadARM<>+24(SB)/8, $0x0101010101010101
DATA s3SpreadARM<>+32(SB)/8, $0x0202020202020202
DATA s3SpreadARM<>+40(SB)/8, $0x0303030303030303
GLOBL s3SpreadARM<>(SB), RODATA|NOPTR, $48

// S3GROUP puts group g's grid entry (sub-block ib of the super-block at
// R7, qh bits in R13, the grid at R12) in lane l of V.
#define S3GROUP(ib, g, V, l) \
	MOVBU (2+8*ib+g)(R7), R19 \
	UBFX $(8*ib+g), R13, $1, R20 \
	ORR R20<<8, R19, R19 \
	MOVWU (R12)(R19<<2), R19 \
	VMOV R19, V.S[l]

// S3SUB adds sub-block ib (activations at R8, post-incremented; scales
// in R14) to the int32 lanes V18 (0-3), V19 (4-7).
#define S3SUB(ib) \
	S3GROUP(ib, 0, V1, 0) \
	S3GROUP(ib, 1, V1, 1) \
	S3GROUP(ib, 2, V1, 2) \
	S3GROUP(ib, 3, V1, 3) \
	S3GROUP(ib, 4, V0, 0) \
	S3GROUP(ib, 5, V0, 1) \
	S3GROUP(ib, 6, V0, 2) \
	S3GROUP(ib, 7, V0, 3) \
	MOVWU (74+4*ib)(R7), R19 \
	VMOV R19, V8.S[0] \
	VTBL V28.B16, [V8.B16], V9.B16 \
	VTBL V29.B16, [V8.B16], V10.B16 \
	VAND V27.B16, V9.B16, V9.B16 \
	VAND V27.B16, V10.B16, V10.B16 \
	VCMEQ V27.B16, V9.B16, V9.B16 \
	VCMEQ V27.B16, V10.B16, V10.B16 \
	VLD1.P 32(R8), [V2.B16, V3.B16] \
	VEOR V9.B16, V2.B16, V2.B16 \
	VEOR V10.B16, V3.B16, V3.B16 \
	VSUB V9.B16, V2.B16, V2.B16 \
	VSUB V10.B16, V3.B16, V3.B16 \
	UBFXW $(4*ib), R14, $4, R19 \
	LSLW $1, R19, R19 \
	ADDW $1, R19, R19 \
	VMOV R19, V7.S[0] \
	VEOR V5.B16, V5.B16, V5.B16 \
	VEOR V6.B16, V6.B16, V6.B16 \
	WORD $0x4e829425 /* sdot v5.4s, v1.16b, v2.16b */ \
	WORD $0x4e839406 /* sdot v6.4s, v0.16b, v3.16b */ \
	WORD $0x6f8700b2 /* mla v18.4s, v5.4s, v7.s[0] */ \
	WORD $0x6f8700d3 /* mla v19.4s, v6.4s, v7.s[0] */

// func qdotIQ3_SSDOT(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// aux: &iq3sGrid[0].
TEXT ·qdotIQ3_SSDOT(SB), NOSPLIT, $0-64
	IQ_ARGS
	MOVD $s3SpreadARM<>(SB), R15
	VLD1 (R15), [V27.B16, V28.B16, V29.B16]
s3row:
	IQ_ROW_START
s3block:
	MOVHU (R7), R11
	MOVD 66(R7), R13
	MOVWU 106(R7), R14
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	S3SUB(0)
	S3SUB(1)
	S3SUB(2)
	S3SUB(3)
	S3SUB(4)
	S3SUB(5)
	S3SUB(6)
	S3SUB(7)
	ADD $110, R7, R7
	FMOVS R11, F5
	FMOVS.P 4(R9), F4
	WORD $0x1ee240a5 // fcvt s5, h5
	WORD $0x1e250884 // fmul s4, s4, s5
	WORD $0x4e21da52 // scvtf v18.4s, v18.4s
	WORD $0x4e21da73 // scvtf v19.4s, v19.4s
	WORD $0x4f849252 // fmul v18.4s, v18.4s, v4.s[0]
	WORD $0x4f849273 // fmul v19.4s, v19.4s, v4.s[0]
	WORD $0x4e32d610 // fadd v16.4s, v16.4s, v18.4s
	WORD $0x4e33d631 // fadd v17.4s, v17.4s, v19.4s
	SUBS $1, R10, R10
	BNE s3block
	IQ_ROW_END(s3row)
	RET
