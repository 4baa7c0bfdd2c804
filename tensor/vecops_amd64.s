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
	VXORPS  expc<>+384(SB), Y4, Y0
	EXP8
	VADDPS  expc<>+288(SB), Y0, Y0
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
