// AVX2 activation quantizers (quantizedActs, formats Q8_0/Q8_1 and Q8_K),
// bit for bit as the reference loops of rowdot_quant_ref.go. Go computes the
// per-block scales between the two passes (see quantizeBlocksSIMD):
//
//	pass 1: the largest magnitude of each block (Q8_K: the signed element
//	        of largest magnitude, the first on ties);
//	pass 2: q = round(x·scale) packed to int8 (Q8_0: halves away from
//	        zero, C's roundf; Q8_K: to nearest even, capped at 127, plus
//	        the 16-element sums bsums).

#include "textflag.h"

#define BCAST32(val, reg, xreg) \
	MOVL         val, AX; \
	VMOVD        AX, xreg; \
	VPBROADCASTD xreg, reg

// HMAX folds Y0 into its maximum in X0's low float (X1 clobbered).
#define HMAX \
	VEXTRACTF128 $1, Y0, X1; \
	VMAXPS       X1, X0, X0; \
	VPERMILPS    $0x4E, X0, X1; \
	VMAXPS       X1, X0, X0; \
	VPERMILPS    $0xB1, X0, X1; \
	VMAXSS       X1, X0, X0

// ABSMAX32 sets Y0 to the lane-wise max of |x| over the 32 floats at
// off(SI) and adds them into Y14 (a NaN anywhere makes Y14 NaN).
#define ABSMAX32(off) \
	VANDPS off(SI), Y15, Y0; \
	VANDPS off+32(SI), Y15, Y1; \
	VANDPS off+64(SI), Y15, Y2; \
	VANDPS off+96(SI), Y15, Y3; \
	VADDPS Y1, Y0, Y4; \
	VADDPS Y3, Y2, Y5; \
	VADDPS Y5, Y4, Y4; \
	VADDPS Y4, Y14, Y14; \
	VMAXPS Y1, Y0, Y0; \
	VMAXPS Y3, Y2, Y2; \
	VMAXPS Y2, Y0, Y0

// NANFLAG stores whether Y14 holds a NaN into the bool at ret.
#define NANFLAG(ret) \
	VCMPPS    $3, Y14, Y14, Y14; \
	VMOVMSKPS Y14, AX; \
	TESTL     AX, AX; \
	SETNE     ret

// func qAbsMax32SIMD(x *float32, nb int, out *float32) (nan bool)
TEXT ·qAbsMax32SIMD(SB), NOSPLIT, $0-25
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ out+16(FP), DI
	BCAST32($0x7fffffff, Y15, X15)
	VXORPS Y14, Y14, Y14

am32loop:
	ABSMAX32(0)
	HMAX
	VMOVSS X0, (DI)
	ADDQ   $128, SI
	ADDQ   $4, DI
	DECQ   CX
	JNZ    am32loop
	NANFLAG(nan+24(FP))
	VZEROUPPER
	RET

// func qVMax256SIMD(x *float32, nb int, out *float32) (nan bool)
// out[b] = the element of block b (256 floats) with the largest magnitude,
// the first one on ties (NaN if none matches, which only a NaN input
// allows).
TEXT ·qVMax256SIMD(SB), NOSPLIT, $0-25
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ out+16(FP), DI
	BCAST32($0x7fffffff, Y15, X15)
	VXORPS Y14, Y14, Y14

vm256loop:
	ABSMAX32(0)
	VMOVAPS Y0, Y6
	ABSMAX32(128)
	VMAXPS  Y0, Y6, Y6
	ABSMAX32(256)
	VMAXPS  Y0, Y6, Y6
	ABSMAX32(384)
	VMAXPS  Y0, Y6, Y6
	ABSMAX32(512)
	VMAXPS  Y0, Y6, Y6
	ABSMAX32(640)
	VMAXPS  Y0, Y6, Y6
	ABSMAX32(768)
	VMAXPS  Y0, Y6, Y6
	ABSMAX32(896)
	VMAXPS  Y0, Y6, Y0
	HMAX
	VBROADCASTSS X0, Y6

	// First element whose magnitude equals the maximum.
	MOVQ SI, R9
	MOVQ $32, R10

vmscan:
	VANDPS    (R9), Y15, Y0
	VCMPPS    $0, Y6, Y0, Y0
	VMOVMSKPS Y0, AX
	TESTL     AX, AX
	JNZ       vmfound
	ADDQ      $32, R9
	DECQ      R10
	JNZ       vmscan
	MOVL      $0x7fc00000, AX // no match: NaN
	MOVL      AX, (DI)
	JMP       vmnext

vmfound:
	BSFL AX, AX
	MOVL (R9)(AX*4), AX
	MOVL AX, (DI)

vmnext:
	ADDQ $1024, SI
	ADDQ $4, DI
	DECQ CX
	JNZ  vm256loop
	NANFLAG(nan+24(FP))
	VZEROUPPER
	RET

// PACK32 packs the int32 in Y0..Y3 (elements 0-7, 8-15, 16-23, 24-31) to
// 32 int8 in element order in Y0 (Y11 = dword order 0,4,1,5,2,6,3,7).
#define PACK32 \
	VPACKSSDW Y1, Y0, Y0; \
	VPACKSSDW Y3, Y2, Y2; \
	VPACKSSWB Y2, Y0, Y0; \
	VPERMD    Y0, Y11, Y0

DATA packperm<>+0(SB)/8, $0x0000000400000000
DATA packperm<>+8(SB)/8, $0x0000000500000001
DATA packperm<>+16(SB)/8, $0x0000000600000002
DATA packperm<>+24(SB)/8, $0x0000000700000003
GLOBL packperm<>(SB), RODATA|NOPTR, $32

// RNDAWAY sets dst to roundf(x·Y10) as int32 for the 8 floats at off(SI):
// t = trunc(y), plus ±1 where |y − t| ≥ 0.5 (y − t is exact).
// Y15 = |·| mask, Y14 = sign mask, Y13 = 0.5, Y12 = 1.0.
#define RNDAWAY(off, dst) \
	VMULPS     off(SI), Y10, Y4; \
	VROUNDPS   $3, Y4, Y5; \
	VSUBPS     Y5, Y4, Y6; \
	VANDPS     Y15, Y6, Y6; \
	VCMPPS     $13, Y13, Y6, Y6; \
	VANDPS     Y14, Y4, Y7; \
	VORPS      Y12, Y7, Y7; \
	VANDPS     Y6, Y7, Y7; \
	VADDPS     Y7, Y5, Y5; \
	VCVTTPS2DQ Y5, dst

// func qRound32SIMD(x *float32, id *float32, nb int, q *int8)
// q[32b+j] = int8(roundf(x[32b+j]·id[b])).
TEXT ·qRound32SIMD(SB), NOSPLIT, $0-32
	MOVQ    x+0(FP), SI
	MOVQ    id+8(FP), DX
	MOVQ    nb+16(FP), CX
	MOVQ    q+24(FP), DI
	BCAST32($0x7fffffff, Y15, X15)
	BCAST32($0x80000000, Y14, X14)
	BCAST32($0x3f000000, Y13, X13)
	BCAST32($0x3f800000, Y12, X12)
	VMOVDQU packperm<>(SB), Y11

r32loop:
	VBROADCASTSS (DX), Y10
	RNDAWAY(0, Y0)
	RNDAWAY(32, Y1)
	RNDAWAY(64, Y2)
	RNDAWAY(96, Y3)
	PACK32
	VMOVDQU      Y0, (DI)
	ADDQ         $128, SI
	ADDQ         $4, DX
	ADDQ         $32, DI
	DECQ         CX
	JNZ          r32loop
	VZEROUPPER
	RET

// RNE sets dst to min(127, round-to-even(x·Y10)) as int32 for the 8
// floats at off(SI) (ggml's nearest_int). Y13 = 127.0.
#define RNE(off, dst) \
	VMULPS     off(SI), Y10, Y4; \
	VROUNDPS   $0, Y4, Y4; \
	VMINPS     Y13, Y4, Y4; \
	VCVTTPS2DQ Y4, dst

// func qRound256SIMD(x *float32, is *float32, nb int, q *int8, bsums *int16)
// Q8_K: q = min(127, nearestInt(x·is[b])) and the sums of each 16.
TEXT ·qRound256SIMD(SB), NOSPLIT, $0-40
	MOVQ    x+0(FP), SI
	MOVQ    is+8(FP), DX
	MOVQ    nb+16(FP), CX
	MOVQ    q+24(FP), DI
	MOVQ    bsums+32(FP), BX
	BCAST32($0x42fe0000, Y13, X13)
	VMOVDQU packperm<>(SB), Y11

r256block:
	VBROADCASTSS (DX), Y10
	MOVQ         $8, R9

r256loop:
	RNE(0, Y0)
	RNE(32, Y1)
	RNE(64, Y2)
	RNE(96, Y3)
	// bsums of elements 0-15 and 16-31.
	VPADDD       Y1, Y0, Y4
	VPADDD       Y3, Y2, Y5
	VPHADDD      Y5, Y4, Y6
	VPHADDD      Y6, Y6, Y6
	VEXTRACTI128 $1, Y6, X7
	VPADDD       X7, X6, X6
	VPACKSSDW    X6, X6, X6
	VMOVD        X6, (BX)
	PACK32
	VMOVDQU      Y0, (DI)
	ADDQ         $128, SI
	ADDQ         $32, DI
	ADDQ         $4, BX
	DECQ         R9
	JNZ          r256loop
	ADDQ         $4, DX
	DECQ         CX
	JNZ          r256block
	VZEROUPPER
	RET
