// AVX2 dequantizers for the prefill GEMM: decode nb blocks of a quantized
// row into float32, bit for bit as the reference decoders of dequant.go do
// (same float32 products and sums, no fused multiply-adds).
//
//	func dqXxxSIMD(dst *float32, src *byte, nb int)
//
// nb ≥ 1 blocks (super-blocks for the K-quants). The integer values of a
// block are first assembled as 32 bytes in element order (as the dot
// kernels do), then widened 8 at a time to int32, converted and scaled.
// Per-sub-block float scales of the K-quants are computed once per
// super-block into the local frame and broadcast from there.

#include "textflag.h"

#define BCAST32(val, reg, xreg) \
	MOVL         val, AX; \
	VMOVD        AX, xreg; \
	VPBROADCASTD xreg, reg

// CVT32 widens the 32 int8 in Y2 to float32 in Y4 (elements 0-7), Y5
// (8-15), Y6 (16-23), Y7 (24-31).
#define CVT32 \
	VPMOVSXBD    X2, Y4; \
	VPSHUFD      $0xEE, X2, X5; \
	VPMOVSXBD    X5, Y5; \
	VEXTRACTI128 $1, Y2, X6; \
	VPSHUFD      $0xEE, X6, X7; \
	VPMOVSXBD    X6, Y6; \
	VPMOVSXBD    X7, Y7; \
	VCVTDQ2PS    Y4, Y4; \
	VCVTDQ2PS    Y5, Y5; \
	VCVTDQ2PS    Y6, Y6; \
	VCVTDQ2PS    Y7, Y7

// MUL4 scales elements 0-15 by sa and 16-31 by sb.
#define MUL4(sa, sb) \
	VMULPS sa, Y4, Y4; \
	VMULPS sa, Y5, Y5; \
	VMULPS sb, Y6, Y6; \
	VMULPS sb, Y7, Y7

#define ADD4(m) \
	VADDPS m, Y4, Y4; \
	VADDPS m, Y5, Y5; \
	VADDPS m, Y6, Y6; \
	VADDPS m, Y7, Y7

#define SUB4(m) \
	VSUBPS m, Y4, Y4; \
	VSUBPS m, Y5, Y5; \
	VSUBPS m, Y6, Y6; \
	VSUBPS m, Y7, Y7

#define STORE4(off) \
	VMOVUPS Y4, off(DI); \
	VMOVUPS Y5, off+32(DI); \
	VMOVUPS Y6, off+64(DI); \
	VMOVUPS Y7, off+96(DI)

// F16B broadcasts the f16 at off(SI) as float32 into reg.
#define F16B(off, reg, xreg) \
	VPBROADCASTW off(SI), xreg; \
	VCVTPH2PS    xreg, reg

#define ARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ nb+16(FP), CX

// K4FLOATS unpacks the Q4_K/Q5_K scales and mins of the super-block at SI
// (see scaleMinK4 and K4SCALES in rowdot_quant_amd64.s) and stores
// d·sc[0..7] at 0(SP) and dmin·m[0..7] at 32(SP) as float32.
// Y13 = 0x3f, Y12 = 0x30, Y15 = 0x0f bytes.
#define K4FLOATS \
	VMOVQ      4(SI), X2; \
	VMOVD      12(SI), X3; \
	VPSRLW     $2, X2, X4; \
	VPAND      X13, X2, X2; \
	VPAND      X12, X4, X4; \
	VPSRLW     $4, X3, X5; \
	VPUNPCKLDQ X5, X3, X3; \
	VPAND      X15, X3, X3; \
	VPOR       X4, X3, X3; \
	VPUNPCKLDQ X3, X2, X2; \
	VPMOVZXBD  X2, Y4; \
	VPSRLDQ    $8, X2, X3; \
	VPMOVZXBD  X3, Y5; \
	VCVTDQ2PS  Y4, Y4; \
	VCVTDQ2PS  Y5, Y5; \
	F16B(0, Y0, X0); \
	F16B(2, Y1, X1); \
	VMULPS     Y0, Y4, Y4; \
	VMULPS     Y1, Y5, Y5; \
	VMOVUPS    Y4, 0(SP); \
	VMOVUPS    Y5, 32(SP)

// K4SUB emits the 32 values in Y2 of sub-block k: d_k·q − m_k.
#define K4SUB(k, off) \
	CVT32; \
	VBROADCASTSS 4*(k)(SP), Y0; \
	VBROADCASTSS 32+4*(k)(SP), Y1; \
	MUL4(Y0, Y0); \
	SUB4(Y1); \
	STORE4(off)

// func dqQ8_0SIMD(dst *float32, src *byte, nb int)
TEXT ·dqQ8_0SIMD(SB), NOSPLIT, $0-24
	ARGS

dq80loop:
	F16B(0, Y0, X0)
	VMOVDQU 2(SI), Y2
	CVT32
	MUL4(Y0, Y0)
	STORE4(0)
	ADDQ    $34, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     dq80loop
	VZEROUPPER
	RET

// NIB32 loads the 16 bytes at off(SI) as 32 nibbles into Y2 in element
// order (low nibbles, then high nibbles). Y15 = 0x0F bytes.
#define NIB32(off) \
	VMOVDQU     off(SI), X2; \
	VPSRLW      $4, X2, X3; \
	VINSERTI128 $1, X3, Y2, Y2; \
	VPAND       Y15, Y2, Y2

// HBITS sets Y3 to 0xFF in the bytes whose bit of the u32 at off(SI) is
// set. Y12 = bitshuf, Y11 = ^(1<<(k%8)), Y10 = all ones.
#define HBITS(off) \
	VPBROADCASTD off(SI), Y3; \
	VPSHUFB      Y12, Y3, Y3; \
	VPOR         Y11, Y3, Y3; \
	VPCMPEQB     Y10, Y3, Y3

DATA dqbitshuf<>+0(SB)/8, $0x0000000000000000
DATA dqbitshuf<>+8(SB)/8, $0x0101010101010101
DATA dqbitshuf<>+16(SB)/8, $0x0202020202020202
DATA dqbitshuf<>+24(SB)/8, $0x0303030303030303
GLOBL dqbitshuf<>(SB), RODATA|NOPTR, $32

#define BITCONST \
	VMOVDQU      dqbitshuf<>(SB), Y12; \
	MOVQ         $0x7fbfdfeff7fbfdfe, AX; \
	VMOVQ        AX, X11; \
	VPBROADCASTQ X11, Y11; \
	VPCMPEQB     Y10, Y10, Y10

// func dqQ4_0SIMD(dst *float32, src *byte, nb int)
TEXT ·dqQ4_0SIMD(SB), NOSPLIT, $0-24
	ARGS
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x08080808, Y14, X14)

dq40loop:
	F16B(0, Y0, X0)
	NIB32(2)
	VPSUBB Y14, Y2, Y2
	CVT32
	MUL4(Y0, Y0)
	STORE4(0)
	ADDQ   $18, SI
	ADDQ   $128, DI
	DECQ   CX
	JNZ    dq40loop
	VZEROUPPER
	RET

// func dqQ4_1SIMD(dst *float32, src *byte, nb int)
TEXT ·dqQ4_1SIMD(SB), NOSPLIT, $0-24
	ARGS
	BCAST32($0x0f0f0f0f, Y15, X15)

dq41loop:
	F16B(0, Y0, X0)
	F16B(2, Y1, X1)
	NIB32(4)
	CVT32
	MUL4(Y0, Y0)
	ADD4(Y1)
	STORE4(0)
	ADDQ $20, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  dq41loop
	VZEROUPPER
	RET

// func dqQ5_0SIMD(dst *float32, src *byte, nb int)
// value = nib | hbit<<4 − 16, i.e. nib | 0xF0 where the high bit is clear.
TEXT ·dqQ5_0SIMD(SB), NOSPLIT, $0-24
	ARGS
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0xf0f0f0f0, Y14, X14)
	BITCONST

dq50loop:
	F16B(0, Y0, X0)
	NIB32(6)
	HBITS(2)
	VPANDN Y14, Y3, Y3
	VPOR   Y3, Y2, Y2
	CVT32
	MUL4(Y0, Y0)
	STORE4(0)
	ADDQ   $22, SI
	ADDQ   $128, DI
	DECQ   CX
	JNZ    dq50loop
	VZEROUPPER
	RET

// func dqQ5_1SIMD(dst *float32, src *byte, nb int)
TEXT ·dqQ5_1SIMD(SB), NOSPLIT, $0-24
	ARGS
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x10101010, Y14, X14)
	BITCONST

dq51loop:
	F16B(0, Y0, X0)
	F16B(2, Y1, X1)
	NIB32(8)
	HBITS(4)
	VPAND Y14, Y3, Y3
	VPOR  Y3, Y2, Y2
	CVT32
	MUL4(Y0, Y0)
	ADD4(Y1)
	STORE4(0)
	ADDQ  $24, SI
	ADDQ  $128, DI
	DECQ  CX
	JNZ   dq51loop
	VZEROUPPER
	RET

// func dqQ4_KSIMD(dst *float32, src *byte, nb int)
TEXT ·dqQ4_KSIMD(SB), NOSPLIT, $64-24
	ARGS
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x3f3f3f3f, Y13, X13)
	BCAST32($0x30303030, Y12, X12)

dq4kloop:
	K4FLOATS

#define Q4KDQ(j) \
	VMOVDQU 16+32*j(SI), Y3; \
	VPAND   Y15, Y3, Y2; \
	K4SUB(2*j, 256*j); \
	VPSRLW  $4, Y3, Y2; \
	VPAND   Y15, Y2, Y2; \
	K4SUB(2*j+1, 256*j+128)

	Q4KDQ(0)
	Q4KDQ(1)
	Q4KDQ(2)
	Q4KDQ(3)
	ADDQ $144, SI
	ADDQ $1024, DI
	DECQ CX
	JNZ  dq4kloop
	VZEROUPPER
	RET

// func dqQ5_KSIMD(dst *float32, src *byte, nb int)
// As Q4_K plus the fifth bits: bit 2j of qh[l] for the low nibble of
// group j, bit 2j+1 for the high one; Y8 holds qh shifted right by 2j.
TEXT ·dqQ5_KSIMD(SB), NOSPLIT, $64-24
	ARGS
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x3f3f3f3f, Y13, X13)
	BCAST32($0x30303030, Y12, X12)
	BCAST32($0x10101010, Y14, X14)

dq5kloop:
	K4FLOATS
	VMOVDQU 16(SI), Y8

#define Q5KDQ(j) \
	VMOVDQU 48+32*j(SI), Y3; \
	VPAND   Y15, Y3, Y2; \
	VPSLLW  $4, Y8, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y2, Y2; \
	K4SUB(2*j, 256*j); \
	VPSRLW  $4, Y3, Y2; \
	VPAND   Y15, Y2, Y2; \
	VPSLLW  $3, Y8, Y9; \
	VPAND   Y14, Y9, Y9; \
	VPOR    Y9, Y2, Y2; \
	K4SUB(2*j+1, 256*j+128); \
	VPSRLW  $2, Y8, Y8

	Q5KDQ(0)
	Q5KDQ(1)
	Q5KDQ(2)
	Q5KDQ(3)
	ADDQ $176, SI
	ADDQ $1024, DI
	DECQ CX
	JNZ  dq5kloop
	VZEROUPPER
	RET

// Q6KDQ emits 32 values q = (ql nibble | 2 qh bits << 4) − 32 assembled
// in Y2 (Y2 = lo | hi with lo already masked), scaled by the floats at
// 4·sa(SP) (elements 0-15) and 4·(sa+1)(SP) (16-31).
#define Q6KEMIT(sa, off) \
	VPSUBB       Y14, Y2, Y2; \
	CVT32; \
	VBROADCASTSS 4*(sa)(SP), Y0; \
	VBROADCASTSS 4*(sa)+4(SP), Y1; \
	MUL4(Y0, Y1); \
	STORE4(off)

// Q6KHALFDQ decodes elements 128n..128n+127 (see Q6KHALF in
// rowdot_quant_amd64.s): ql at qloff(SI), qh at qhoff(SI).
#define Q6KHALFDQ(qloff, qhoff, n) \
	VMOVDQU qloff(SI), Y9; \
	VMOVDQU qloff+32(SI), Y10; \
	VMOVDQU qhoff(SI), Y11; \
	VPAND   Y15, Y9, Y2; \
	VPSLLW  $4, Y11, Y3; \
	VPAND   Y13, Y3, Y3; \
	VPOR    Y3, Y2, Y2; \
	Q6KEMIT(8*n, 512*n); \
	VPAND   Y15, Y10, Y2; \
	VPSLLW  $2, Y11, Y3; \
	VPAND   Y13, Y3, Y3; \
	VPOR    Y3, Y2, Y2; \
	Q6KEMIT(8*n+2, 512*n+128); \
	VPSRLW  $4, Y9, Y2; \
	VPAND   Y15, Y2, Y2; \
	VPAND   Y13, Y11, Y3; \
	VPOR    Y3, Y2, Y2; \
	Q6KEMIT(8*n+4, 512*n+256); \
	VPSRLW  $4, Y10, Y2; \
	VPAND   Y15, Y2, Y2; \
	VPSRLW  $2, Y11, Y3; \
	VPAND   Y13, Y3, Y3; \
	VPOR    Y3, Y2, Y2; \
	Q6KEMIT(8*n+6, 512*n+384)

// func dqQ6_KSIMD(dst *float32, src *byte, nb int)
// Q6_K super-block (210 bytes): ql[128], qh[64], 16 int8 scales, f16 d;
// x = (d·sc)·(q − 32), one scale per 16 elements.
TEXT ·dqQ6_KSIMD(SB), NOSPLIT, $64-24
	ARGS
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x30303030, Y13, X13)
	BCAST32($0x20202020, Y14, X14)

dq6kloop:
	F16B(208, Y0, X0)
	VPMOVSXBD 192(SI), Y4
	VPMOVSXBD 200(SI), Y5
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y5, Y5
	VMULPS    Y0, Y4, Y4
	VMULPS    Y0, Y5, Y5
	VMOVUPS   Y4, 0(SP)
	VMOVUPS   Y5, 32(SP)
	Q6KHALFDQ(0, 128, 0)
	Q6KHALFDQ(64, 160, 1)
	ADDQ      $210, SI
	ADDQ      $1024, DI
	DECQ      CX
	JNZ       dq6kloop
	VZEROUPPER
	RET
