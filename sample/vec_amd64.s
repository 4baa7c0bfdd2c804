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
#define C_SUB31 576
#define C_KEYBASE 608
#define C_KMIN 640
#define C_EFLOOR 672

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
// exactly as the Go loop skips x < xmin; a group of 8 clamped lanes skips the
// exps.
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
	VCMPPD    $0, C_LO(DX), Y0, Y1 // x <= xmin: weight 0
	VCMPPD    $0, C_LO(DX), Y8, Y9
	VANDPD    Y9, Y1, Y1
	VMOVMSKPD Y1, AX
	CMPL      AX, $15
	JEQ       wzero
	EXPCORE(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	EXPCORE(Y8, Y9, Y10, Y11, Y12, Y13, Y14)
	TOWEIGHT(Y4, Y0, Y1, Y15)
	TOWEIGHT(Y12, Y8, Y9, Y15)
	VMOVDQU   Y4, (DI)
	VMOVDQU   Y12, 32(DI)
	VPADDQ    Y4, Y7, Y7
	VPADDQ    Y12, Y7, Y7

wnext:
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

wzero: // all eight weights are 0: skip the exps
	VPXOR   Y4, Y4, Y4
	VMOVDQU Y4, (DI)
	VMOVDQU Y4, 32(DI)
	JMP     wnext

// TOWEIGHTKEY is TOWEIGHT that also sets key = histKey(weight): the weight
// itself below 64, else 32·(b−5) + the 5 bits after the leading one, where
// b − 5 = be − k + 48 and those bits are M's bits 51..47.
#define TOWEIGHTKEY(e, be, cr, key, kreg) \
	VPSRLQ    $52, e, be;              \
	VPSUBQ    be, kreg, cr;            \
	VPSUBQ    kreg, be, be; /* be - k */ \
	VPAND     C_MANT(DX), e, e;        \
	VPOR      C_IMPLIED(DX), e, e; /* M */ \
	VPSRLQ    $47, e, key;             \
	VPAND     C_SUB31(DX), key, key;   \
	VPSRLVQ   cr, e, cr;               \
	VPSLLVQ   be, e, e;                \
	VPOR      cr, e, e; /* weight */   \
	VPSLLQ    $5, be, be;              \
	VPADDQ    C_KEYBASE(DX), be, be; /* 32·(b−5) */ \
	VPOR      be, key, key;            \
	VPCMPGTQ  C_MASK63(DX), e, cr; /* weight > 63 */ \
	VBLENDVPD cr, key, e, key

// SCATTER adds the four weights in wt (wtx its low half) to hist[key lane]
// (R12). Clobbers tmpx, AX, BX, R9, R10, R11, R13.
#define SCATTER(key, keyx, wt, wtx, tmpx) \
	VMOVQ        keyx, AX;        \
	VPEXTRQ      $1, keyx, BX;    \
	VMOVQ        wtx, R11;        \
	VPEXTRQ      $1, wtx, R13;    \
	ADDQ         R11, (R12)(AX*8); \
	ADDQ         R13, (R12)(BX*8); \
	VEXTRACTI128 $1, key, tmpx;   \
	VMOVQ        tmpx, R9;        \
	VPEXTRQ      $1, tmpx, R10;   \
	VEXTRACTI128 $1, wt, tmpx;    \
	VMOVQ        tmpx, R11;       \
	VPEXTRQ      $1, tmpx, R13;   \
	ADDQ         R11, (R12)(R9*8); \
	ADDQ         R13, (R12)(R10*8)

// func weightsHistAVX2(w *uint64, l *float32, n int, c *expConsts, tab *[64]float64, hist *[histBins]uint64) (sum uint64)
// weightsAVX2 that also adds each weight to hist[histKey(weight)], except
// in groups of four whose keys are all below kmin; keys stay below 1888
// because weights are < 2^63.
TEXT ·weightsHistAVX2(SB), NOSPLIT, $0-56
	MOVQ    w+0(FP), DI
	MOVQ    l+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    c+24(FP), DX
	MOVQ    tab+32(FP), R8
	MOVQ    hist+40(FP), R12
	VPXOR   Y7, Y7, Y7
	VMOVDQU C_K(DX), Y15
	SHRQ    $3, CX
	JZ      hdone

hloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y8
	VSUBPD    C_M(DX), Y0, Y0
	VSUBPD    C_M(DX), Y8, Y8
	VMULPD    C_INVT(DX), Y0, Y0
	VMULPD    C_INVT(DX), Y8, Y8
	VMAXPD    C_LO(DX), Y0, Y0
	VMAXPD    C_LO(DX), Y8, Y8
	VCMPPD    $0, C_LO(DX), Y0, Y1 // x <= xmin: weight 0
	VCMPPD    $0, C_LO(DX), Y8, Y9
	VANDPD    Y9, Y1, Y1
	VMOVMSKPD Y1, AX
	CMPL      AX, $15
	JEQ       hzero
	EXPCORE(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	EXPCORE(Y8, Y9, Y10, Y11, Y12, Y13, Y14)
	TOWEIGHTKEY(Y4, Y0, Y1, Y2, Y15)
	TOWEIGHTKEY(Y12, Y8, Y9, Y10, Y15)
	VMOVDQU   Y4, (DI)
	VMOVDQU   Y12, 32(DI)
	VPADDQ    Y4, Y7, Y7
	VPADDQ    Y12, Y7, Y7
	VPCMPGTQ  C_KMIN(DX), Y2, Y3 // key >= kmin
	VMOVMSKPD Y3, AX
	TESTL     AX, AX
	JZ        hskipA
	SCATTER(Y2, X2, Y4, X4, X3)

hskipA:
	VPCMPGTQ  C_KMIN(DX), Y10, Y11
	VMOVMSKPD Y11, AX
	TESTL     AX, AX
	JZ        hskipB
	SCATTER(Y10, X10, Y12, X12, X11)

hskipB:
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       hloop

hdone:
	VEXTRACTI128 $1, Y7, X0
	VPADDQ       X0, X7, X7
	VPSHUFD      $0x4e, X7, X0
	VPADDQ       X0, X7, X7
	MOVQ         X7, AX
	MOVQ         AX, sum+48(FP)
	VZEROUPPER
	RET

hzero: // all eight weights are 0 (bin 0 gains nothing): skip the exps
	VPXOR   Y4, Y4, Y4
	VMOVDQU Y4, (DI)
	VMOVDQU Y4, 32(DI)
	JMP     hskipB

// func expSumAVX2(l *float32, n int, c *expConsts, tab *[64]float64, lanes *[4]float64)
// lanes[j] = Σ e_i over i ≡ j (mod 4), each lane summed in increasing i,
// e_i = expCore(max(l[i] − m, -60)) where e_i > expSumFloor, else +0 (which
// leaves a positive sum unchanged).
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
	VSUBPD    C_M(DX), Y0, Y0 // float64(v) - m
	VSUBPD    C_M(DX), Y8, Y8
	VMAXPD    C_LO(DX), Y0, Y0 // max(x, -60)
	VMAXPD    C_LO(DX), Y8, Y8
	EXPCORE(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	EXPCORE(Y8, Y9, Y10, Y11, Y12, Y13, Y6)
	VCMPPD    $0x1e, C_EFLOOR(DX), Y4, Y1 // e > floor
	VCMPPD    $0x1e, C_EFLOOR(DX), Y12, Y9
	VANDPD    Y1, Y4, Y4
	VANDPD    Y9, Y12, Y12
	VADDPD    Y4, Y7, Y7
	VADDPD    Y12, Y7, Y7
	ADDQ      $32, SI
	DECQ      CX
	JNZ       sloop

sdone:
	VMOVUPD Y7, (DI)
	VZEROUPPER
	RET

// func weightsExpSumAVX2(w *uint64, l *float32, n int, c *expConsts, tab *[64]float64, lanes *[4]float64) (sum uint64)
// weightsAVX2 with invT = 1 and expSumAVX2 in one pass. x is clamped to -60
// (c.lo) rather than xmin: the weight there is 0 all the same.
TEXT ·weightsExpSumAVX2(SB), NOSPLIT, $0-56
	MOVQ    w+0(FP), DI
	MOVQ    l+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    c+24(FP), DX
	MOVQ    tab+32(FP), R8
	MOVQ    lanes+40(FP), R9
	VPXOR   Y7, Y7, Y7
	VPXOR   Y14, Y14, Y14
	VMOVDQU C_K(DX), Y15
	SHRQ    $3, CX
	JZ      xdone

xloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y8
	VSUBPD    C_M(DX), Y0, Y0
	VSUBPD    C_M(DX), Y8, Y8
	VMAXPD    C_LO(DX), Y0, Y0
	VMAXPD    C_LO(DX), Y8, Y8
	EXPCORE(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	EXPCORE(Y8, Y9, Y10, Y11, Y12, Y13, Y6)
	VCMPPD    $0x1e, C_EFLOOR(DX), Y4, Y1
	VCMPPD    $0x1e, C_EFLOOR(DX), Y12, Y9
	VANDPD    Y1, Y4, Y1
	VANDPD    Y9, Y12, Y9
	VADDPD    Y1, Y14, Y14
	VADDPD    Y9, Y14, Y14
	TOWEIGHT(Y4, Y0, Y1, Y15)
	TOWEIGHT(Y12, Y8, Y9, Y15)
	VMOVDQU   Y4, (DI)
	VMOVDQU   Y12, 32(DI)
	VPADDQ    Y4, Y7, Y7
	VPADDQ    Y12, Y7, Y7
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       xloop

xdone:
	VMOVUPD      Y14, (R9)
	VEXTRACTI128 $1, Y7, X0
	VPADDQ       X0, X7, X7
	VPSHUFD      $0x4e, X7, X0
	VPADDQ       X0, X7, X7
	MOVQ         X7, AX
	MOVQ         AX, sum+48(FP)
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

// func indexBetweenAVX2(l *float32, n int, a, b float32) int
// The first i < n with a <= l[i] <= b, or n.
TEXT ·indexBetweenAVX2(SB), NOSPLIT, $0-32
	MOVQ         l+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS a+16(FP), Y0
	VBROADCASTSS b+20(FP), Y1
	XORQ         AX, AX

bloop:
	CMPQ      AX, CX
	JGE       bnone
	VMOVUPS   (SI)(AX*4), Y2
	VCMPPS    $0x12, Y2, Y0, Y3 // a <= l[i], ordered
	VCMPPS    $0x12, Y1, Y2, Y4 // l[i] <= b
	VANDPS    Y4, Y3, Y3
	VMOVMSKPS Y3, BX
	TESTL     BX, BX
	JNZ       bfound
	ADDQ      $8, AX
	JMP       bloop

bfound:
	BSFL BX, BX
	ADDQ BX, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

bnone:
	MOVQ CX, ret+24(FP)
	VZEROUPPER
	RET
