// AVX2 + FMA vector exp and the loops built on it (softmax, SwiGLU); see
// vecops_amd64.go.
//
// expc holds each constant of Cephes' expf replicated eight times, so the
// loops use them as 256-bit memory operands.

#include "textflag.h"

// log2e at 0
DATA expc<>+0(SB)/4, $0x3fb8aa3b
DATA expc<>+4(SB)/4, $0x3fb8aa3b
DATA expc<>+8(SB)/4, $0x3fb8aa3b
DATA expc<>+12(SB)/4, $0x3fb8aa3b
DATA expc<>+16(SB)/4, $0x3fb8aa3b
DATA expc<>+20(SB)/4, $0x3fb8aa3b
DATA expc<>+24(SB)/4, $0x3fb8aa3b
DATA expc<>+28(SB)/4, $0x3fb8aa3b
// ln2hi at 32
DATA expc<>+32(SB)/4, $0x3f318000
DATA expc<>+36(SB)/4, $0x3f318000
DATA expc<>+40(SB)/4, $0x3f318000
DATA expc<>+44(SB)/4, $0x3f318000
DATA expc<>+48(SB)/4, $0x3f318000
DATA expc<>+52(SB)/4, $0x3f318000
DATA expc<>+56(SB)/4, $0x3f318000
DATA expc<>+60(SB)/4, $0x3f318000
// ln2lo at 64
DATA expc<>+64(SB)/4, $0xb95e8083
DATA expc<>+68(SB)/4, $0xb95e8083
DATA expc<>+72(SB)/4, $0xb95e8083
DATA expc<>+76(SB)/4, $0xb95e8083
DATA expc<>+80(SB)/4, $0xb95e8083
DATA expc<>+84(SB)/4, $0xb95e8083
DATA expc<>+88(SB)/4, $0xb95e8083
DATA expc<>+92(SB)/4, $0xb95e8083
// p0 at 96
DATA expc<>+96(SB)/4, $0x39506967
DATA expc<>+100(SB)/4, $0x39506967
DATA expc<>+104(SB)/4, $0x39506967
DATA expc<>+108(SB)/4, $0x39506967
DATA expc<>+112(SB)/4, $0x39506967
DATA expc<>+116(SB)/4, $0x39506967
DATA expc<>+120(SB)/4, $0x39506967
DATA expc<>+124(SB)/4, $0x39506967
// p1 at 128
DATA expc<>+128(SB)/4, $0x3ab743ce
DATA expc<>+132(SB)/4, $0x3ab743ce
DATA expc<>+136(SB)/4, $0x3ab743ce
DATA expc<>+140(SB)/4, $0x3ab743ce
DATA expc<>+144(SB)/4, $0x3ab743ce
DATA expc<>+148(SB)/4, $0x3ab743ce
DATA expc<>+152(SB)/4, $0x3ab743ce
DATA expc<>+156(SB)/4, $0x3ab743ce
// p2 at 160
DATA expc<>+160(SB)/4, $0x3c088908
DATA expc<>+164(SB)/4, $0x3c088908
DATA expc<>+168(SB)/4, $0x3c088908
DATA expc<>+172(SB)/4, $0x3c088908
DATA expc<>+176(SB)/4, $0x3c088908
DATA expc<>+180(SB)/4, $0x3c088908
DATA expc<>+184(SB)/4, $0x3c088908
DATA expc<>+188(SB)/4, $0x3c088908
// p3 at 192
DATA expc<>+192(SB)/4, $0x3d2aa9c1
DATA expc<>+196(SB)/4, $0x3d2aa9c1
DATA expc<>+200(SB)/4, $0x3d2aa9c1
DATA expc<>+204(SB)/4, $0x3d2aa9c1
DATA expc<>+208(SB)/4, $0x3d2aa9c1
DATA expc<>+212(SB)/4, $0x3d2aa9c1
DATA expc<>+216(SB)/4, $0x3d2aa9c1
DATA expc<>+220(SB)/4, $0x3d2aa9c1
// p4 at 224
DATA expc<>+224(SB)/4, $0x3e2aaaaa
DATA expc<>+228(SB)/4, $0x3e2aaaaa
DATA expc<>+232(SB)/4, $0x3e2aaaaa
DATA expc<>+236(SB)/4, $0x3e2aaaaa
DATA expc<>+240(SB)/4, $0x3e2aaaaa
DATA expc<>+244(SB)/4, $0x3e2aaaaa
DATA expc<>+248(SB)/4, $0x3e2aaaaa
DATA expc<>+252(SB)/4, $0x3e2aaaaa
// p5 at 256
DATA expc<>+256(SB)/4, $0x3f000000
DATA expc<>+260(SB)/4, $0x3f000000
DATA expc<>+264(SB)/4, $0x3f000000
DATA expc<>+268(SB)/4, $0x3f000000
DATA expc<>+272(SB)/4, $0x3f000000
DATA expc<>+276(SB)/4, $0x3f000000
DATA expc<>+280(SB)/4, $0x3f000000
DATA expc<>+284(SB)/4, $0x3f000000
// one at 288
DATA expc<>+288(SB)/4, $0x3f800000
DATA expc<>+292(SB)/4, $0x3f800000
DATA expc<>+296(SB)/4, $0x3f800000
DATA expc<>+300(SB)/4, $0x3f800000
DATA expc<>+304(SB)/4, $0x3f800000
DATA expc<>+308(SB)/4, $0x3f800000
DATA expc<>+312(SB)/4, $0x3f800000
DATA expc<>+316(SB)/4, $0x3f800000
// hi at 320
DATA expc<>+320(SB)/4, $0x42b0c0a5
DATA expc<>+324(SB)/4, $0x42b0c0a5
DATA expc<>+328(SB)/4, $0x42b0c0a5
DATA expc<>+332(SB)/4, $0x42b0c0a5
DATA expc<>+336(SB)/4, $0x42b0c0a5
DATA expc<>+340(SB)/4, $0x42b0c0a5
DATA expc<>+344(SB)/4, $0x42b0c0a5
DATA expc<>+348(SB)/4, $0x42b0c0a5
// lo at 352
DATA expc<>+352(SB)/4, $0xc2aeac4f
DATA expc<>+356(SB)/4, $0xc2aeac4f
DATA expc<>+360(SB)/4, $0xc2aeac4f
DATA expc<>+364(SB)/4, $0xc2aeac4f
DATA expc<>+368(SB)/4, $0xc2aeac4f
DATA expc<>+372(SB)/4, $0xc2aeac4f
DATA expc<>+376(SB)/4, $0xc2aeac4f
DATA expc<>+380(SB)/4, $0xc2aeac4f
// sign at 384
DATA expc<>+384(SB)/4, $0x80000000
DATA expc<>+388(SB)/4, $0x80000000
DATA expc<>+392(SB)/4, $0x80000000
DATA expc<>+396(SB)/4, $0x80000000
DATA expc<>+400(SB)/4, $0x80000000
DATA expc<>+404(SB)/4, $0x80000000
DATA expc<>+408(SB)/4, $0x80000000
DATA expc<>+412(SB)/4, $0x80000000
GLOBL expc<>(SB), RODATA|NOPTR, $416

// EXP8 sets Y0 = e^Y0 lane-wise (Y0 clamped to [-87.34, 88.38], where
// 2^n stays a normal float), clobbering Y1-Y3: x = n·ln2 + r with
// n = round(x·log2e), e^r = 1 + r + r²·p(r), 2^n from the exponent bits.
#define EXP8 \
	VMINPS       expc<>+320(SB), Y0, Y0; \
	VMAXPS       expc<>+352(SB), Y0, Y0; \
	VMULPS       expc<>+0(SB), Y0, Y1; \
	VROUNDPS     $0, Y1, Y1; \
	VFNMADD231PS expc<>+32(SB), Y1, Y0; \
	VFNMADD231PS expc<>+64(SB), Y1, Y0; \
	VMOVUPS      expc<>+96(SB), Y2; \
	VFMADD213PS  expc<>+128(SB), Y0, Y2; \
	VFMADD213PS  expc<>+160(SB), Y0, Y2; \
	VFMADD213PS  expc<>+192(SB), Y0, Y2; \
	VFMADD213PS  expc<>+224(SB), Y0, Y2; \
	VFMADD213PS  expc<>+256(SB), Y0, Y2; \
	VMULPS       Y0, Y0, Y3; \
	VFMADD213PS  Y0, Y3, Y2; \
	VADDPS       expc<>+288(SB), Y2, Y2; \
	VCVTPS2DQ    Y1, Y1; \
	VPSLLD       $23, Y1, Y1; \
	VPADDD       expc<>+288(SB), Y1, Y1; \
	VMULPS       Y1, Y2, Y0

// SIGDEN8 sets Y0 = 1 + e^(-Y4), the denominator of σ(Y4) (SiLU's and the
// sigmoid gate's); Y1-Y3 clobbered, Y4 kept.
#define SIGDEN8 \
	VXORPS expc<>+384(SB), Y4, Y0; \
	EXP8; \
	VADDPS expc<>+288(SB), Y0, Y0

// func expShiftAVX2(x *float32, n int, mx float32) float32
//
// x[i] = e^(x[i]-mx) for i < n (a multiple of 8); returns Σ x[i].
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS mx+16(FP), Y9
	VXORPS       Y8, Y8, Y8
	SHRQ         $3, CX
	JZ           esdone

esloop:
	VMOVUPS (SI), Y0
	VSUBPS  Y9, Y0, Y0
	EXP8
	VMOVUPS Y0, (SI)
	VADDPS  Y0, Y8, Y8
	ADDQ    $32, SI
	DECQ    CX
	JNZ     esloop

esdone:
	VEXTRACTF128 $1, Y8, X1
	VADDPS       X1, X8, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
//
// max x[i] over i < n (a positive multiple of 8).
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	VMOVUPS (SI), Y0
	ADDQ    $32, SI
	SHRQ    $3, CX
	DECQ    CX
	JZ      mxdone

mxloop:
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	DECQ   CX
	JNZ    mxloop

mxdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

// func swigluAVX2(gate *float32, up *float32, n int)
//
// gate[i] = gate[i]·up[i] / (1 + e^(-gate[i])) for i < n (a multiple of 8).
TEXT ·swigluAVX2(SB), NOSPLIT, $0-24
	MOVQ gate+0(FP), DI
	MOVQ up+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   swdone

swloop:
	VMOVUPS (DI), Y4
	SIGDEN8
	VMULPS  (SI), Y4, Y4
	VDIVPS  Y0, Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     swloop

swdone:
	VZEROUPPER
	RET

// func mulSigmoidAVX2(x *float32, gate *float32, n int)
//
// x[i] = x[i] / (1 + e^(-gate[i])) for i < n (a multiple of 8).
TEXT ·mulSigmoidAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   msdone

msloop:
	VMOVUPS (SI), Y4
	SIGDEN8
	VMOVUPS (DI), Y4
	VDIVPS  Y0, Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     msloop

msdone:
	VZEROUPPER
	RET

// func causalConv4AVX2(out, x, s0, s1, s2, kernel *float32, n int)
//
// CausalConv4 for n channels (a multiple of 8), eight per step. The
// kernel is channel-major, (n, 4): a step loads channels c..c+3 into the
// low lanes of Y0-Y3 and c+4..c+7 into the high lanes (one channel's four
// taps each), and a 4×4 transpose within each 128-bit lane turns them
// into Y0-Y3 = tap 0-3 of the eight channels in order. Then, lane by
// lane, ((0 + s0·k0) + s1·k1) + s2·k2) + x·k3 with every product rounded
// (VMULPS, then VADDPS: the Go loop's sums), and the window moves on.
TEXT ·causalConv4AVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ s0+16(FP), R8
	MOVQ s1+24(FP), R9
	MOVQ s2+32(FP), R10
	MOVQ kernel+40(FP), R11
	MOVQ n+48(FP), CX
	SHLQ $2, CX // bytes of n channels
	XORQ BX, BX // byte offset of channel c

cvloop:
	// Y0-Y3: channels c+i (low lane) and c+4+i (high lane), taps 0-3.
	VMOVUPS     0(R11), X0
	VINSERTF128 $1, 64(R11), Y0, Y0
	VMOVUPS     16(R11), X1
	VINSERTF128 $1, 80(R11), Y1, Y1
	VMOVUPS     32(R11), X2
	VINSERTF128 $1, 96(R11), Y2, Y2
	VMOVUPS     48(R11), X3
	VINSERTF128 $1, 112(R11), Y3, Y3

	// Per lane: rows c0-c3 of [t0 t1 t2 t3] to rows t0-t3 of [c0 c1 c2 c3].
	VUNPCKLPS Y1, Y0, Y4 // c0t0 c1t0 c0t1 c1t1
	VUNPCKHPS Y1, Y0, Y5 // c0t2 c1t2 c0t3 c1t3
	VUNPCKLPS Y3, Y2, Y6 // c2t0 c3t0 c2t1 c3t1
	VUNPCKHPS Y3, Y2, Y7 // c2t2 c3t2 c2t3 c3t3
	VUNPCKLPD Y6, Y4, Y0 // tap 0
	VUNPCKHPD Y6, Y4, Y1 // tap 1
	VUNPCKLPD Y7, Y5, Y2 // tap 2
	VUNPCKHPD Y7, Y5, Y3 // tap 3

	VMOVUPS (R8)(BX*1), Y8   // s0
	VMOVUPS (R9)(BX*1), Y9   // s1
	VMOVUPS (R10)(BX*1), Y10 // s2
	VMOVUPS (SI)(BX*1), Y11  // x
	VXORPS  Y12, Y12, Y12
	VMULPS  Y0, Y8, Y13
	VADDPS  Y13, Y12, Y12
	VMULPS  Y1, Y9, Y13
	VADDPS  Y13, Y12, Y12
	VMULPS  Y2, Y10, Y13
	VADDPS  Y13, Y12, Y12
	VMULPS  Y3, Y11, Y13
	VADDPS  Y13, Y12, Y12
	VMOVUPS Y12, (DI)(BX*1)
	VMOVUPS Y9, (R8)(BX*1)   // s0 ← s1
	VMOVUPS Y10, (R9)(BX*1)  // s1 ← s2
	VMOVUPS Y11, (R10)(BX*1) // s2 ← x

	ADDQ $128, R11
	ADDQ $32, BX
	CMPQ BX, CX
	JLT  cvloop
	VZEROUPPER
	RET

// func ssmScanRowAVX2(s, b, c *float32, n int, a, xdt float32, lanes *[8]float32)
//
// SSMScanRow over n state values (a multiple of 8), eight per step:
// v = s·a + b·xdt (both products rounded, then the sum), s = v, and the
// lane sums acc += v·c (the product rounded): VMULPS/VADDPS, no FMA, the
// Go loop's arithmetic lane by lane.
TEXT ·ssmScanRowAVX2(SB), NOSPLIT, $0-48
	MOVQ         s+0(FP), DI
	MOVQ         b+8(FP), SI
	MOVQ         c+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS a+32(FP), Y4
	VBROADCASTSS xdt+36(FP), Y5
	MOVQ         lanes+40(FP), AX
	VXORPS       Y6, Y6, Y6
	SHRQ         $3, CX
	JZ           ssdone

ssloop:
	VMULPS  (DI), Y4, Y0
	VMULPS  (SI), Y5, Y1
	VADDPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	VMULPS  (DX), Y0, Y2
	VADDPS  Y2, Y6, Y6
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	DECQ    CX
	JNZ     ssloop

ssdone:
	VMOVUPS Y6, (AX)
	VZEROUPPER
	RET

// func ssmScanHeadAVX2(s, b, c, x, y *float32, n, p int, a, dt float32)
//
// SSMScanHead: for each of p channels, xdt = x·dt (VMULSS, the Go
// product), then ssmScanRowAVX2's loop over the channel's n state values
// (s advances by n floats a channel) and its lane sums folded as
// SSMScanRow folds them, ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), into y.
TEXT ·ssmScanHeadAVX2(SB), NOSPLIT, $0-64
	MOVQ         s+0(FP), DI
	MOVQ         b+8(FP), SI
	MOVQ         c+16(FP), DX
	MOVQ         x+24(FP), R8
	MOVQ         y+32(FP), R9
	MOVQ         n+40(FP), R10
	MOVQ         p+48(FP), R11
	VBROADCASTSS a+56(FP), Y4
	VMOVSS       dt+60(FP), X7
	SHRQ         $3, R10
	TESTQ        R11, R11
	JZ           shdone

shchan:
	VMOVSS       (R8), X5
	VMULSS       X7, X5, X5
	VBROADCASTSS X5, Y5
	VXORPS       Y6, Y6, Y6
	XORQ         AX, AX
	MOVQ         R10, CX

shloop:
	VMULPS  (DI), Y4, Y0
	VMULPS  (SI)(AX*1), Y5, Y1
	VADDPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	VMULPS  (DX)(AX*1), Y0, Y2
	VADDPS  Y2, Y6, Y6
	ADDQ    $32, DI
	ADDQ    $32, AX
	DECQ    CX
	JNZ     shloop

	VEXTRACTF128 $1, Y6, X1
	VADDPS       X1, X6, X6 // l0+l4, l1+l5, l2+l6, l3+l7
	VMOVHLPS     X6, X6, X1 // l2+l6, l3+l7
	VADDPS       X1, X6, X6 // (l0+l4)+(l2+l6), (l1+l5)+(l3+l7)
	VMOVSHDUP    X6, X1
	VADDSS       X1, X6, X6
	VMOVSS       X6, (R9)
	ADDQ         $4, R8
	ADDQ         $4, R9
	DECQ         R11
	JNZ          shchan

shdone:
	VZEROUPPER
	RET
