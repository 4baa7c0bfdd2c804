#include "textflag.h"

// func fmaAVX2(acc *[fmaChains][8]float32, ab *[2][8]float32, n int)
// n iterations of twelve independent chains acc[c] += a·b (VFMADD231PS,
// 8 lanes): 12·8·2 FLOPs per iteration. Twelve chains cover an FMA
// latency of up to 6 cycles at 2 FMAs per cycle, so the loop is bound by
// FMA throughput, not by the chains' latency.
TEXT ·fmaAVX2(SB), NOSPLIT, $0-24
	MOVQ    acc+0(FP), DI
	MOVQ    ab+8(FP), SI
	MOVQ    n+16(FP), CX
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	VMOVUPS 256(DI), Y8
	VMOVUPS 288(DI), Y9
	VMOVUPS 320(DI), Y10
	VMOVUPS 352(DI), Y11
	VMOVUPS 0(SI), Y12
	VMOVUPS 32(SI), Y13
	TESTQ   CX, CX
	JLE     fdone

floop:
	VFMADD231PS Y13, Y12, Y0
	VFMADD231PS Y13, Y12, Y1
	VFMADD231PS Y13, Y12, Y2
	VFMADD231PS Y13, Y12, Y3
	VFMADD231PS Y13, Y12, Y4
	VFMADD231PS Y13, Y12, Y5
	VFMADD231PS Y13, Y12, Y6
	VFMADD231PS Y13, Y12, Y7
	VFMADD231PS Y13, Y12, Y8
	VFMADD231PS Y13, Y12, Y9
	VFMADD231PS Y13, Y12, Y10
	VFMADD231PS Y13, Y12, Y11
	DECQ        CX
	JNZ         floop

fdone:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VMOVUPS Y8, 256(DI)
	VMOVUPS Y9, 288(DI)
	VMOVUPS Y10, 320(DI)
	VMOVUPS Y11, 352(DI)
	VZEROUPPER
	RET

// func fmaAVX512(acc *[fmaChains][16]float32, ab *[2][16]float32, n int)
// fmaAVX2 on 512-bit registers (AVX-512F): twelve chains of 16 lanes,
// 12·16·2 FLOPs per iteration. On cores with full-width 512-bit FMA units
// (Zen 5, Intel server cores with two FMA ports) this is twice the ymm
// rate and the real ceiling of the zmm float kernels.
TEXT ·fmaAVX512(SB), NOSPLIT, $0-24
	MOVQ    acc+0(FP), DI
	MOVQ    ab+8(FP), SI
	MOVQ    n+16(FP), CX
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VMOVUPS 640(DI), Z10
	VMOVUPS 704(DI), Z11
	VMOVUPS 0(SI), Z12
	VMOVUPS 64(SI), Z13
	TESTQ   CX, CX
	JLE     zdone

zloop:
	VFMADD231PS Z13, Z12, Z0
	VFMADD231PS Z13, Z12, Z1
	VFMADD231PS Z13, Z12, Z2
	VFMADD231PS Z13, Z12, Z3
	VFMADD231PS Z13, Z12, Z4
	VFMADD231PS Z13, Z12, Z5
	VFMADD231PS Z13, Z12, Z6
	VFMADD231PS Z13, Z12, Z7
	VFMADD231PS Z13, Z12, Z8
	VFMADD231PS Z13, Z12, Z9
	VFMADD231PS Z13, Z12, Z10
	VFMADD231PS Z13, Z12, Z11
	DECQ        CX
	JNZ         zloop

zdone:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	VZEROUPPER
	RET

// One chain step of the quantized dot kernels: t = VPMADDUBSW(u, s)
// (16 int16 sums of two u8·s8 products, saturated), VPMADDWD(t, ones)
// (8 int32 sums of two), acc += that.
#define I8STEP(acc, t) \
	VPMADDUBSW Y13, Y12, t; \
	VPMADDWD   Y14, t, t; \
	VPADDD     t, acc, acc

// func int8AVX2(acc *[int8Chains][8]int32, us *[3][32]byte, n int)
// n iterations of eight chains acc[c] += madd(maddubs(u, s), ones): 8·32
// int8 products, 8·32·2 ops per iteration. Only the VPADDD carries a
// dependency; the multiplies of all iterations are independent, so the
// loop is bound by the multiply units' throughput.
TEXT ·int8AVX2(SB), NOSPLIT, $0-24
	MOVQ    acc+0(FP), DI
	MOVQ    us+8(FP), SI
	MOVQ    n+16(FP), CX
	VMOVDQU 0(DI), Y0
	VMOVDQU 32(DI), Y1
	VMOVDQU 64(DI), Y2
	VMOVDQU 96(DI), Y3
	VMOVDQU 128(DI), Y4
	VMOVDQU 160(DI), Y5
	VMOVDQU 192(DI), Y6
	VMOVDQU 224(DI), Y7
	VMOVDQU 0(SI), Y12  // u: unsigned bytes
	VMOVDQU 32(SI), Y13 // s: signed bytes
	VMOVDQU 64(SI), Y14 // ones: int16
	TESTQ   CX, CX
	JLE     idone

iloop:
	I8STEP(Y0, Y8)
	I8STEP(Y1, Y9)
	I8STEP(Y2, Y10)
	I8STEP(Y3, Y11)
	I8STEP(Y4, Y8)
	I8STEP(Y5, Y9)
	I8STEP(Y6, Y10)
	I8STEP(Y7, Y11)
	DECQ CX
	JNZ  iloop

idone:
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	VMOVDQU Y4, 128(DI)
	VMOVDQU Y5, 160(DI)
	VMOVDQU Y6, 192(DI)
	VMOVDQU Y7, 224(DI)
	VZEROUPPER
	RET
