// AVX2 integer dot products of quantized weight rows with 8-bit quantized
// activations (QuantizedActs), mirroring the reference dotQ8_0 / dotQ4_K /
// dotQ6_K of quant_dot.go. Integer parts are exact; only the per-block float
// scaling and the final lane sum are reordered.
//
// Building block: VPMADDUBSW multiplies unsigned bytes by signed bytes and
// adds adjacent pairs into int16 (no overflow here: |pair| ≤ 2·63·127);
// VPMADDWD then multiplies int16 pairs by int16 scales (or ones) and adds
// them into int32.

#include "textflag.h"

// HSUM folds Y0 into X0's low float.
#define HSUM \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VHADDPS      X0, X0, X0; \
	VHADDPS      X0, X0, X0

// func dotQ8_0AVX2(w *byte, q *int8, d *float32, nb int) float32
// Q8_0 block: f16 scale, 32 int8. Signed×signed via VPSIGNB: |w| (unsigned)
// times a·sign(w).
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-36
	MOVQ         w+0(FP), SI
	MOVQ         q+8(FP), DI
	MOVQ         d+16(FP), DX
	MOVQ         nb+24(FP), CX
	VXORPS       Y0, Y0, Y0
	MOVL         $0x00010001, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	TESTQ        CX, CX
	JZ           q80done

q80loop:
	VMOVDQU      2(SI), Y2
	VMOVDQU      (DI), Y3
	VPSIGNB      Y2, Y2, Y4
	VPSIGNB      Y2, Y3, Y5
	VPMADDUBSW   Y5, Y4, Y6
	VPMADDWD     Y15, Y6, Y6
	VCVTDQ2PS    Y6, Y6
	VPBROADCASTW (SI), X7
	VCVTPH2PS    X7, Y7
	VBROADCASTSS (DX), Y8
	VMULPS       Y8, Y7, Y7
	VFMADD231PS  Y7, Y6, Y0
	ADDQ         $34, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          q80loop

q80done:
	HSUM
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// Q4KSUB multiplies the 64 nibbles of qs group j (32 bytes at off(SI):
// low nibbles are sub-block 2j, high nibbles sub-block 2j+1) with the 64
// activations at aoff(DI), scales them by the sub-block scales (words at
// 4j(SP), 4j+2(SP)) and adds into Y5 (int32).
#define Q4KSUB(off, aoff, soff) \
	VMOVDQU      off(SI), Y6; \
	VPSRLW       $4, Y6, Y7; \
	VPAND        Y15, Y6, Y6; \
	VPAND        Y15, Y7, Y7; \
	VPMADDUBSW   aoff(DI), Y6, Y6; \
	VPMADDUBSW   aoff+32(DI), Y7, Y7; \
	VPBROADCASTW soff(SP), Y8; \
	VPBROADCASTW soff+2(SP), Y9; \
	VPMADDWD     Y8, Y6, Y6; \
	VPMADDWD     Y9, Y7, Y7; \
	VPADDD       Y6, Y5, Y5; \
	VPADDD       Y7, Y5, Y5

// func dotQ4_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32
// Q4_K super-block (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales
// and mins for 8 sub-blocks of 32, 128 bytes of nibbles.
// Σ = d·da·Σ_j sc_j·Σ q·a − dmin·da·Σ_j m_j·(Σ a over sub-block j).
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $16-44
	MOVQ         w+0(FP), SI
	MOVQ         q+8(FP), DI
	MOVQ         d+16(FP), DX
	MOVQ         bsums+24(FP), R13
	MOVQ         nb+32(FP), CX
	VXORPS       Y0, Y0, Y0
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x00010001, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	TESTQ        CX, CX
	JZ           q4kdone

q4kloop:
	// Unpack scales: bytes s[0..11] as u0, u1, u2.
	// sc[0..3] = u0 & 0x3f..; m[0..3] = u1 & 0x3f..
	// sc[4..7] = (u2 & 0x0f..) | ((u0>>6) & 0x03..)<<4
	// m[4..7]  = ((u2>>4) & 0x0f..) | ((u1>>6) & 0x03..)<<4
	MOVL  4(SI), R8
	MOVL  8(SI), R9
	MOVL  12(SI), R10
	MOVL  R8, AX
	ANDL  $0x3f3f3f3f, AX
	MOVL  R9, BX
	ANDL  $0x3f3f3f3f, BX
	MOVL  R10, R11
	ANDL  $0x0f0f0f0f, R11
	SHRL  $6, R8
	ANDL  $0x03030303, R8
	SHLL  $4, R8
	ORL   R8, R11
	SHRL  $4, R10
	ANDL  $0x0f0f0f0f, R10
	SHRL  $6, R9
	ANDL  $0x03030303, R9
	SHLL  $4, R9
	ORL   R9, R10
	SHLQ  $32, R11
	ORQ   AX, R11
	SHLQ  $32, R10
	ORQ   BX, R10

	// scales as 8 words on the stack; mins as 8 int32 in Y3.
	VMOVQ     R11, X2
	VPMOVZXBW X2, X2
	VMOVDQU   X2, (SP)
	VMOVQ     R10, X3
	VPMOVZXBD X3, Y3

	// min term: m_j · (bsums[2j] + bsums[2j+1])
	VMOVDQU  (R13), Y4
	VPMADDWD Y14, Y4, Y4
	VPMULLD  Y3, Y4, Y4

	VPXOR Y5, Y5, Y5
	Q4KSUB(16, 0, 0)
	Q4KSUB(48, 64, 4)
	Q4KSUB(80, 128, 8)
	Q4KSUB(112, 192, 12)

	VBROADCASTSS (DX), Y10
	VPBROADCASTW (SI), X11
	VCVTPH2PS    X11, Y11
	VPBROADCASTW 2(SI), X12
	VCVTPH2PS    X12, Y12
	VMULPS       Y10, Y11, Y11
	VMULPS       Y10, Y12, Y12
	VCVTDQ2PS    Y5, Y5
	VFMADD231PS  Y11, Y5, Y0
	VCVTDQ2PS    Y4, Y4
	VFNMADD231PS Y12, Y4, Y0

	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R13
	DECQ CX
	JNZ  q4kloop

q4kdone:
	HSUM
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// VPSHUFB masks picking, from 8 scale words duplicated in both 128-bit
// halves, word 2k for the low half and word 2k+1 for the high half.
DATA q6kshuf<>+0(SB)/8, $0x0100010001000100
DATA q6kshuf<>+8(SB)/8, $0x0100010001000100
DATA q6kshuf<>+16(SB)/8, $0x0302030203020302
DATA q6kshuf<>+24(SB)/8, $0x0302030203020302
DATA q6kshuf<>+32(SB)/8, $0x0504050405040504
DATA q6kshuf<>+40(SB)/8, $0x0504050405040504
DATA q6kshuf<>+48(SB)/8, $0x0706070607060706
DATA q6kshuf<>+56(SB)/8, $0x0706070607060706
DATA q6kshuf<>+64(SB)/8, $0x0908090809080908
DATA q6kshuf<>+72(SB)/8, $0x0908090809080908
DATA q6kshuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kshuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kshuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kshuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kshuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6kshuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6kshuf<>(SB), RODATA|NOPTR, $128

// Q6KQ takes the 32 unsigned 6-bit values in Y7, multiplies them with the
// activations at aoff(DI), scales the two 16-element halves by the words
// picked with mask k from Y6, and adds into Y5.
#define Q6KQ(aoff, k) \
	VPMADDUBSW aoff(DI), Y7, Y7; \
	VPSHUFB    q6kshuf<>+(32*k)(SB), Y6, Y8; \
	VPMADDWD   Y8, Y7, Y7; \
	VPADDD     Y7, Y5, Y5

// Q6KHALF handles elements 128n..128n+127: ql at qloff(SI) (64 bytes), qh at
// qhoff(SI) (32 bytes), activations at aoff(DI), scale words in Y6.
//   q1 = ql[l]&15    | (qh[l]&3)<<4        → a[l]
//   q2 = ql[l+32]&15 | (qh[l]>>2&3)<<4     → a[l+32]
//   q3 = ql[l]>>4    | (qh[l]>>4&3)<<4     → a[l+64]
//   q4 = ql[l+32]>>4 | (qh[l]>>6&3)<<4     → a[l+96]
#define Q6KHALF(qloff, qhoff, aoff) \
	VMOVDQU qloff(SI), Y9; \
	VMOVDQU qloff+32(SI), Y10; \
	VMOVDQU qhoff(SI), Y11; \
	VPAND   Y15, Y9, Y7; \
	VPAND   Y13, Y11, Y12; \
	VPSLLW  $4, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	Q6KQ(aoff, 0); \
	VPAND   Y15, Y10, Y7; \
	VPSRLW  $2, Y11, Y12; \
	VPAND   Y13, Y12, Y12; \
	VPSLLW  $4, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	Q6KQ(aoff+32, 1); \
	VPSRLW  $4, Y9, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPSRLW  $4, Y11, Y12; \
	VPAND   Y13, Y12, Y12; \
	VPSLLW  $4, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	Q6KQ(aoff+64, 2); \
	VPSRLW  $4, Y10, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPSRLW  $6, Y11, Y12; \
	VPAND   Y13, Y12, Y12; \
	VPSLLW  $4, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	Q6KQ(aoff+96, 3)

// func dotQ6_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32
// Q6_K super-block (210 bytes): ql[128] low nibbles, qh[64] high 2 bits,
// 16 int8 scales (one per 16 elements), f16 d. Values are q−32; the −32 is
// applied once per sub-block through the activation sums:
// Σ sc·(q−32)·a = Σ sc·q·a − 32·Σ_sub sc_sub·bsum_sub.
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $0-44
	MOVQ         w+0(FP), SI
	MOVQ         q+8(FP), DI
	MOVQ         d+16(FP), DX
	MOVQ         bsums+24(FP), R13
	MOVQ         nb+32(FP), CX
	VXORPS       Y0, Y0, Y0
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x03030303, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	TESTQ        CX, CX
	JZ           q6kdone

q6kloop:
	VPMOVSXBW 192(SI), Y2
	VPMADDWD  (R13), Y2, Y3
	VPSLLD    $5, Y3, Y3
	VPXOR     Y5, Y5, Y5
	VPERMQ    $0x44, Y2, Y6
	Q6KHALF(0, 128, 0)
	VPERMQ    $0xEE, Y2, Y6
	Q6KHALF(64, 160, 128)
	VPSUBD    Y3, Y5, Y5

	VBROADCASTSS (DX), Y10
	VPBROADCASTW 208(SI), X11
	VCVTPH2PS    X11, Y11
	VMULPS       Y10, Y11, Y11
	VCVTDQ2PS    Y5, Y5
	VFMADD231PS  Y11, Y5, Y0

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R13
	DECQ CX
	JNZ  q6kloop

q6kdone:
	HSUM
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET
