// NEON float kernels for arm64 (see kernels_float_arm64.go). Go's assembler has
// no mnemonics for most vector float and widening instructions, so those are
// spelled as WORD encodings with the instruction in the comment.
//
// dot4*: four weight rows R0, R5, R6, R7 (stride lda bytes) against x (R2),
// 8 columns per iteration, two float32x4 accumulators per row
// (V16..V23). The four sums are folded with pairwise adds into one vector
// (rows 0..3 in lanes 0..3) and stored to out.

#include "textflag.h"

// DOT4_PROLOGUE loads the arguments and zeroes the accumulators.
#define DOT4_PROLOGUE \
	MOVD w+0(FP), R0 \
	MOVD lda+8(FP), R1 \
	MOVD x+16(FP), R2 \
	MOVD n+24(FP), R3 \
	ADD R1, R0, R5 \
	ADD R1, R5, R6 \
	ADD R1, R6, R7 \
	VEOR V16.B16, V16.B16, V16.B16 \
	VEOR V17.B16, V17.B16, V17.B16 \
	VEOR V18.B16, V18.B16, V18.B16 \
	VEOR V19.B16, V19.B16, V19.B16 \
	VEOR V20.B16, V20.B16, V20.B16 \
	VEOR V21.B16, V21.B16, V21.B16 \
	VEOR V22.B16, V22.B16, V22.B16 \
	VEOR V23.B16, V23.B16, V23.B16

// func dot4F32NEON(w *byte, lda uintptr, x *float32, n int, out *[4]float32)
TEXT ·dot4F32NEON(SB), NOSPLIT, $0-40
	DOT4_PROLOGUE
f32loop:
	VLD1.P 32(R2), [V0.S4, V1.S4]
	VLD1.P 32(R0), [V2.S4, V3.S4]
	VLD1.P 32(R5), [V4.S4, V5.S4]
	VLD1.P 32(R6), [V6.S4, V7.S4]
	VLD1.P 32(R7), [V24.S4, V25.S4]
	WORD $0x4e20cc50 // fmla v16.4s, v2.4s, v0.4s
	WORD $0x4e21cc71 // fmla v17.4s, v3.4s, v1.4s
	WORD $0x4e20cc92 // fmla v18.4s, v4.4s, v0.4s
	WORD $0x4e21ccb3 // fmla v19.4s, v5.4s, v1.4s
	WORD $0x4e20ccd4 // fmla v20.4s, v6.4s, v0.4s
	WORD $0x4e21ccf5 // fmla v21.4s, v7.4s, v1.4s
	WORD $0x4e20cf16 // fmla v22.4s, v24.4s, v0.4s
	WORD $0x4e21cf37 // fmla v23.4s, v25.4s, v1.4s
	SUBS $8, R3, R3
	BNE f32loop
	// Fold V16..V23 into the four row sums, lanes 0..3, and store them.
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x4e33d652 // fadd v18.4s, v18.4s, v19.4s
	WORD $0x4e35d694 // fadd v20.4s, v20.4s, v21.4s
	WORD $0x4e37d6d6 // fadd v22.4s, v22.4s, v23.4s
	WORD $0x6e32d610 // faddp v16.4s, v16.4s, v18.4s
	WORD $0x6e36d694 // faddp v20.4s, v20.4s, v22.4s
	WORD $0x6e34d610 // faddp v16.4s, v16.4s, v20.4s
	MOVD out+32(FP), R4
	VST1 [V16.S4], (R4)
	RET

// func dot4F16NEON(w *byte, lda uintptr, x *float32, n int, out *[4]float32)
// Each row's 8 halves widen with FCVTL (low 4) and FCVTL2 (high 4).
TEXT ·dot4F16NEON(SB), NOSPLIT, $0-40
	DOT4_PROLOGUE
f16loop:
	VLD1.P 32(R2), [V0.S4, V1.S4]
	VLD1.P 16(R0), [V2.H8]
	VLD1.P 16(R5), [V4.H8]
	VLD1.P 16(R6), [V6.H8]
	VLD1.P 16(R7), [V24.H8]
	WORD $0x0e217843 // fcvtl v3.4s, v2.4h
	WORD $0x4e217842 // fcvtl2 v2.4s, v2.8h
	WORD $0x0e217885 // fcvtl v5.4s, v4.4h
	WORD $0x4e217884 // fcvtl2 v4.4s, v4.8h
	WORD $0x0e2178c7 // fcvtl v7.4s, v6.4h
	WORD $0x4e2178c6 // fcvtl2 v6.4s, v6.8h
	WORD $0x0e217b19 // fcvtl v25.4s, v24.4h
	WORD $0x4e217b18 // fcvtl2 v24.4s, v24.8h
	WORD $0x4e20cc70 // fmla v16.4s, v3.4s, v0.4s
	WORD $0x4e21cc51 // fmla v17.4s, v2.4s, v1.4s
	WORD $0x4e20ccb2 // fmla v18.4s, v5.4s, v0.4s
	WORD $0x4e21cc93 // fmla v19.4s, v4.4s, v1.4s
	WORD $0x4e20ccf4 // fmla v20.4s, v7.4s, v0.4s
	WORD $0x4e21ccd5 // fmla v21.4s, v6.4s, v1.4s
	WORD $0x4e20cf36 // fmla v22.4s, v25.4s, v0.4s
	WORD $0x4e21cf17 // fmla v23.4s, v24.4s, v1.4s
	SUBS $8, R3, R3
	BNE f16loop
	// Fold V16..V23 into the four row sums, lanes 0..3, and store them.
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x4e33d652 // fadd v18.4s, v18.4s, v19.4s
	WORD $0x4e35d694 // fadd v20.4s, v20.4s, v21.4s
	WORD $0x4e37d6d6 // fadd v22.4s, v22.4s, v23.4s
	WORD $0x6e32d610 // faddp v16.4s, v16.4s, v18.4s
	WORD $0x6e36d694 // faddp v20.4s, v20.4s, v22.4s
	WORD $0x6e34d610 // faddp v16.4s, v16.4s, v20.4s
	MOVD out+32(FP), R4
	VST1 [V16.S4], (R4)
	RET

// func dot4BF16NEON(w *byte, lda uintptr, x *float32, n int, out *[4]float32)
// A bfloat16 is the top half of a float32: ZIP1/ZIP2 with a zero vector
// (V31) put each one above 16 zero bits.
TEXT ·dot4BF16NEON(SB), NOSPLIT, $0-40
	DOT4_PROLOGUE
	VEOR V31.B16, V31.B16, V31.B16
bf16loop:
	VLD1.P 32(R2), [V0.S4, V1.S4]
	VLD1.P 16(R0), [V2.H8]
	VLD1.P 16(R5), [V4.H8]
	VLD1.P 16(R6), [V6.H8]
	VLD1.P 16(R7), [V24.H8]
	WORD $0x4e423be3 // zip1 v3.8h, v31.8h, v2.8h
	WORD $0x4e427be2 // zip2 v2.8h, v31.8h, v2.8h
	WORD $0x4e443be5 // zip1 v5.8h, v31.8h, v4.8h
	WORD $0x4e447be4 // zip2 v4.8h, v31.8h, v4.8h
	WORD $0x4e463be7 // zip1 v7.8h, v31.8h, v6.8h
	WORD $0x4e467be6 // zip2 v6.8h, v31.8h, v6.8h
	WORD $0x4e583bf9 // zip1 v25.8h, v31.8h, v24.8h
	WORD $0x4e587bf8 // zip2 v24.8h, v31.8h, v24.8h
	WORD $0x4e20cc70 // fmla v16.4s, v3.4s, v0.4s
	WORD $0x4e21cc51 // fmla v17.4s, v2.4s, v1.4s
	WORD $0x4e20ccb2 // fmla v18.4s, v5.4s, v0.4s
	WORD $0x4e21cc93 // fmla v19.4s, v4.4s, v1.4s
	WORD $0x4e20ccf4 // fmla v20.4s, v7.4s, v0.4s
	WORD $0x4e21ccd5 // fmla v21.4s, v6.4s, v1.4s
	WORD $0x4e20cf36 // fmla v22.4s, v25.4s, v0.4s
	WORD $0x4e21cf17 // fmla v23.4s, v24.4s, v1.4s
	SUBS $8, R3, R3
	BNE bf16loop
	// Fold V16..V23 into the four row sums, lanes 0..3, and store them.
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x4e33d652 // fadd v18.4s, v18.4s, v19.4s
	WORD $0x4e35d694 // fadd v20.4s, v20.4s, v21.4s
	WORD $0x4e37d6d6 // fadd v22.4s, v22.4s, v23.4s
	WORD $0x6e32d610 // faddp v16.4s, v16.4s, v18.4s
	WORD $0x6e36d694 // faddp v20.4s, v20.4s, v22.4s
	WORD $0x6e34d610 // faddp v16.4s, v16.4s, v20.4s
	MOVD out+32(FP), R4
	VST1 [V16.S4], (R4)
	RET

// func cvtF16NEON(dst *float32, src *byte, n int)
TEXT ·cvtF16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R3
cvtf16loop:
	VLD1.P 16(R1), [V0.H8]
	WORD $0x0e217801 // fcvtl v1.4s, v0.4h
	WORD $0x4e217802 // fcvtl2 v2.4s, v0.8h
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS $8, R3, R3
	BNE cvtf16loop
	RET

// func cvtBF16NEON(dst *float32, src *byte, n int)
TEXT ·cvtBF16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R3
	VEOR V31.B16, V31.B16, V31.B16
cvtbf16loop:
	VLD1.P 16(R1), [V0.H8]
	WORD $0x4e403be1 // zip1 v1.8h, v31.8h, v0.8h
	WORD $0x4e407be2 // zip2 v2.8h, v31.8h, v0.8h
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS $8, R3, R3
	BNE cvtbf16loop
	RET

// func sumF32NEON(p *float32, n int) float32
// Eight float32x4 accumulators, 32 floats per iteration.
TEXT ·sumF32NEON(SB), NOSPLIT, $0-20
	MOVD p+0(FP), R0
	MOVD n+8(FP), R3
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
sumloop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4e20d610 // fadd v16.4s, v16.4s, v0.4s
	WORD $0x4e21d631 // fadd v17.4s, v17.4s, v1.4s
	WORD $0x4e22d652 // fadd v18.4s, v18.4s, v2.4s
	WORD $0x4e23d673 // fadd v19.4s, v19.4s, v3.4s
	WORD $0x4e24d694 // fadd v20.4s, v20.4s, v4.4s
	WORD $0x4e25d6b5 // fadd v21.4s, v21.4s, v5.4s
	WORD $0x4e26d6d6 // fadd v22.4s, v22.4s, v6.4s
	WORD $0x4e27d6f7 // fadd v23.4s, v23.4s, v7.4s
	SUBS $32, R3, R3
	BNE sumloop
	WORD $0x4e31d610 // fadd v16.4s, v16.4s, v17.4s
	WORD $0x4e33d652 // fadd v18.4s, v18.4s, v19.4s
	WORD $0x4e35d694 // fadd v20.4s, v20.4s, v21.4s
	WORD $0x4e37d6d6 // fadd v22.4s, v22.4s, v23.4s
	WORD $0x4e32d610 // fadd v16.4s, v16.4s, v18.4s
	WORD $0x4e36d694 // fadd v20.4s, v20.4s, v22.4s
	WORD $0x4e34d610 // fadd v16.4s, v16.4s, v20.4s
	WORD $0x6e30d610 // faddp v16.4s, v16.4s, v16.4s
	WORD $0x7e30da10 // faddp s16, v16.2s
	FMOVS F16, ret+16(FP)
	RET
