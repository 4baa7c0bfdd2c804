// AVX2 versions of the vocabulary-wide kernels in vec.go. They must return
// the same bits as the Go versions: every float operation below is one of
// expCore's, applied per lane in the same order (no FMA anywhere), and the
// comments name the Go expression each step reproduces. n is a multiple of 8.

#include "textflag.h"

// Offsets into expConsts (each field is four 8-byte lanes).
#define C_M 0
#define C_INVT 32
#define C_LO 64
#define C_INVLN2 96
#define C_SHIFTER 128
#define C_NBIAS 160
#define C_LN2HI 192
#define C_LN2LO 224
#define C_C5 256
#define C_C4 288
#define C_C3 320
#define C_C2 352
#define C_ONE 384
#define C_MASK63 416
#define C_NOTM63 448
#define C_K 480
#define C_MANT 512
#define C_IMPLIED 544

// EXPCORE sets q = expCore(x) for four lanes, x in [-708, 0]. DX points at
// the constants, R8 at exp2Table. Clobbers t, fn, r, tj, msk.
#define EXPCORE(x, t, fn, r, q, tj, msk) \
	VMULPD     C_INVLN2(DX), x, t; /* x*invLn2x64 */ \
	VADDPD     C_SHIFTER(DX), t, t; /* t = float64(x*invLn2x64) + shifter */ \
	VSUBPD     C_SHIFTER(DX), t, fn; /* fn = t - shifter */ \
	VPSUBQ     C_NBIAS(DX), t, t; /* t = n + 1023·64 (int64 lanes) */ \
	VMULPD     C_LN2HI(DX), fn, r; /* fn*ln2o64Hi */ \
	VSUBPD     r, x, r; /* x - float64(fn*ln2o64Hi) */ \
	VMULPD     C_LN2LO(DX), fn, fn; /* fn*ln2o64Lo */ \
	VSUBPD     fn, r, r; /* r */ \
	VMULPD     C_C5(DX), r, q; /* r*(1.0/120) */ \
	VADDPD     C_C4(DX), q, q; /* + 1.0/24 */ \
	VMULPD     r, q, q;              \
	VADDPD     C_C3(DX), q, q; /* + 1.0/6 */ \
	VMULPD     r, q, q;              \
	VADDPD     C_C2(DX), q, q; /* + 0.5 */ \
	VMULPD     r, q, q;              \
	VADDPD     C_ONE(DX), q, q; /* + 1 */ \
	VMULPD     r, q, q; /* q = r * q */ \
	VPAND      C_MASK63(DX), t, r; /* n & 63 */ \
	VPCMPEQQ   msk, msk, msk;        \
	VGATHERQPD msk, (R8)(r*8), tj; /* tj = exp2Table[n&63] */ \
	VMULPD     tj, q, q; /* tj*q */ \
	VADDPD     tj, q, q; /* tj + float64(tj*q) */ \
	VPAND      C_NOTM63(DX), t, t; /* 64·(n>>6 + 1023) */ \
	VPSLLQ     $46, t, t; /* bits of 2^(n>>6) */ \
	VMULPD     t, q, q /* e */

// TOWEIGHT turns e (in [2^-63, 1], normal) into uint64(e*2^shift) with
// integer operations: e*2^shift is exact, and its integer part is e's
// 53-bit significand M shifted right by k−be (or left by be−k), be = e's
// biased exponent, k = 1075−shift. A shift count of 64 or more (including a
// "negative" one) gives 0, so one of the two shifts is always 0.
#define TOWEIGHT(e, be, cr, kreg) \
	VPSRLQ  $52, e, be;        \
	VPSUBQ  be, kreg, cr; /* k - be */ \
	VPSUBQ  kreg, be, be; /* be - k */ \
	VPAND   C_MANT(DX), e, e;  \
	VPOR    C_IMPLIED(DX), e, e; /* M */ \
	VPSRLVQ cr, e, cr;         \
	VPSLLVQ be, e, e;          \
	VPOR    cr, e, e

// func weightsAVX2(w *uint64, l *float32, n int, c *expConsts, tab *[64]float64) (sum uint64)
// x = (float64(l[i]) − m)·invT is clamped to xmin (c.lo), whose weight is 0,
// exactly as the Go loop skips x < xmin.
TEXT ·weightsAVX2(SB), NOSPLIT, $0-48
	MOVQ    w+0(FP), DI
	MOVQ    l+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    c+24(FP), DX
	MOVQ    tab+32(FP), R8
	VPXOR   Y7, Y7, Y7
	VMOVDQU C_K(DX), Y15
	SHRQ    $3, CX
	JZ      wdone

wloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y8
	VSUBPD    C_M(DX), Y0, Y0
	VSUBPD    C_M(DX), Y8, Y8
	VMULPD    C_INVT(DX), Y0, Y0
	VMULPD    C_INVT(DX), Y8, Y8
	VMAXPD    C_LO(DX), Y0, Y0
	VMAXPD    C_LO(DX), Y8, Y8
	EXPCORE(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	EXPCORE(Y8, Y9, Y10, Y11, Y12, Y13, Y14)
	TOWEIGHT(Y4, Y0, Y1, Y15)
	TOWEIGHT(Y12, Y8, Y9, Y15)
	VMOVDQU   Y4, (DI)
	VMOVDQU   Y12, 32(DI)
	VPADDQ    Y4, Y7, Y7
	VPADDQ    Y12, Y7, Y7
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       wloop

wdone:
	VEXTRACTI128 $1, Y7, X0
	VPADDQ       X0, X7, X7
	VPSHUFD      $0x4e, X7, X0
	VPADDQ       X0, X7, X7
	MOVQ         X7, AX
	MOVQ         AX, sum+40(FP)
	VZEROUPPER
	RET

// func expSumAVX2(l *float32, n int, c *expConsts, tab *[64]float64, lanes *[4]float64)
// lanes[j] = Σ exp(l[i] − m) over i ≡ j (mod 4) with l[i] − m >= c.lo, each
// lane summed in increasing i. Skipped terms add +0, which leaves a positive
// sum unchanged.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-40
	MOVQ  l+0(FP), SI
	MOVQ  n+8(FP), CX
	MOVQ  c+16(FP), DX
	MOVQ  tab+24(FP), R8
	MOVQ  lanes+32(FP), DI
	VPXOR Y7, Y7, Y7
	SHRQ  $3, CX
	JZ    sdone

sloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y8
	VSUBPD    C_M(DX), Y0, Y0         // x = float64(v) - m
	VSUBPD    C_M(DX), Y8, Y8
	VCMPPD    $5, C_LO(DX), Y0, Y14   // keep = !(x < -60)
	VCMPPD    $5, C_LO(DX), Y8, Y15
	VMAXPD    C_LO(DX), Y0, Y0
	VMAXPD    C_LO(DX), Y8, Y8
	EXPCORE(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	EXPCORE(Y8, Y9, Y10, Y11, Y12, Y13, Y6)
	VANDPD    Y14, Y4, Y4
	VANDPD    Y15, Y12, Y12
	VADDPD    Y4, Y7, Y7
	VADDPD    Y12, Y7, Y7
	ADDQ      $32, SI
	DECQ      CX
	JNZ       sloop

sdone:
	VMOVUPD Y7, (DI)
	VZEROUPPER
	RET

// func maxValidAVX2(l *float32, n int) (m float32, ok bool)
// ok is false if some l[i] is NaN or +Inf: !(l[i] <= MaxFloat32).
TEXT ·maxValidAVX2(SB), NOSPLIT, $0-21
	MOVQ         l+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVL         $0xff800000, AX     // -Inf
	MOVL         AX, X0
	VPBROADCASTD X0, Y0
	VMOVDQA      Y0, Y1
	MOVL         $0x7f7fffff, AX     // MaxFloat32
	MOVL         AX, X2
	VPBROADCASTD X2, Y2
	VPXOR        Y3, Y3, Y3
	SHRQ         $3, CX
	JZ           mdone

mloop:
	VMOVUPS (SI), Y4
	VMAXPS  Y4, Y0, Y0
	VCMPPS  $0x16, Y2, Y4, Y5 // !(v <= MaxFloat32), quiet
	VORPS   Y5, Y3, Y3
	ADDQ    $32, SI
	DECQ    CX
	JNZ     mloop

mdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	MOVSS        X0, m+16(FP)
	VMOVMSKPS    Y3, AX
	TESTL        AX, AX
	SETEQ        ok+20(FP)
	VZEROUPPER
	RET

// func indexAboveAVX2(l *float32, n int, v float32) int
// The first i < n with l[i] > v, or n.
TEXT ·indexAboveAVX2(SB), NOSPLIT, $0-32
	MOVQ         l+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS v+16(FP), Y1
	XORQ         AX, AX

aloop:
	CMPQ      AX, CX
	JGE       anone
	VCMPPS    $0x11, (SI)(AX*4), Y1, Y2 // v < l[i], ordered
	VMOVMSKPS Y2, BX
	TESTL     BX, BX
	JNZ       afound
	ADDQ      $8, AX
	JMP       aloop

afound:
	BSFL BX, BX
	ADDQ BX, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

anone:
	MOVQ CX, ret+24(FP)
	VZEROUPPER
	RET

// func indexEqualAVX2(l *float32, n int, v float32) int
// The first i < n with l[i] == v, or n.
TEXT ·indexEqualAVX2(SB), NOSPLIT, $0-32
	MOVQ         l+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS v+16(FP), Y1
	XORQ         AX, AX

eloop:
	CMPQ      AX, CX
	JGE       enone
	VCMPPS    $0x00, (SI)(AX*4), Y1, Y2 // v == l[i], ordered
	VMOVMSKPS Y2, BX
	TESTL     BX, BX
	JNZ       efound
	ADDQ      $8, AX
	JMP       eloop

efound:
	BSFL BX, BX
	ADDQ BX, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

enone:
	MOVQ CX, ret+24(FP)
	VZEROUPPER
	RET

// func drawAtLeastAVX2(w *uint64, n int, thr, t uint64) (i int, acc uint64)
// Walks w in blocks of 8, summing the weights >= thr (w > thr−1 as signed
// int64: weights are < 2^63), and stops at the first block that takes the
// sum past t: i is that block's start and acc the sum before it (i = n and
// acc = the whole sum if none does).
TEXT ·drawAtLeastAVX2(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVQ         thr+16(FP), AX
	DECQ         AX
	MOVQ         AX, X0
	VPBROADCASTQ X0, Y0
	MOVQ         t+24(FP), DX
	XORQ         BX, BX
	XORQ         DI, DI

dloop:
	CMPQ         DI, CX
	JGE          ddone
	VMOVDQU      (SI)(DI*8), Y1
	VMOVDQU      32(SI)(DI*8), Y2
	VPCMPGTQ     Y0, Y1, Y3
	VPCMPGTQ     Y0, Y2, Y4
	VPAND        Y3, Y1, Y1
	VPAND        Y4, Y2, Y2
	VPADDQ       Y2, Y1, Y1
	VEXTRACTI128 $1, Y1, X2
	VPADDQ       X2, X1, X1
	VPSHUFD      $0x4e, X1, X2
	VPADDQ       X2, X1, X1
	MOVQ         X1, R8
	ADDQ         BX, R8
	CMPQ         R8, DX
	JHI          ddone
	MOVQ         R8, BX
	ADDQ         $8, DI
	JMP          dloop

ddone:
	MOVQ DI, i+32(FP)
	MOVQ BX, acc+40(FP)
	VZEROUPPER
	RET
