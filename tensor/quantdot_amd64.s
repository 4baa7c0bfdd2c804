// AVX2 integer dot products of quantized weight rows with 8-bit quantized
// activations (QuantizedActs), mirroring the reference dotQ* functions of
// quant_dot.go. Integer parts are exact; only the per-block float scaling
// and the final lane sums are reordered.
//
// Every kernel has the signature
//
//	func qdotXxxSIMD(dst *float32, rows int, w *byte, stride uintptr,
//	                 q *int8, d *float32, aux unsafe.Pointer, nb int)
//
// and sets dst[i] = Σ over the nb blocks of weight row i (at w + i·stride)
// against the activations q (int8), d (block scales) and aux (Q8_1 block
// sums for Q4_1/Q5_1, int16 bsums for the K-quants). rows ≥ 1, nb ≥ 1. The
// row loop lives here so a matrix-vector chunk costs one call.
//
// Building blocks:
//   - VPMADDUBSW multiplies unsigned bytes by signed bytes and adds adjacent
//     pairs into int16 (no overflow: |pair| ≤ 2·63·127);
//   - VPMADDWD multiplies int16 pairs by int16 scales (or ones) and adds
//     them into int32;
//   - signed×signed bytes go through VPABSB/VPSIGNB: |w| · (a·sign(w));
//   - 32 "high bits" (Q5_0/Q5_1 qh) become 32 bytes by broadcasting the
//     word, VPSHUFB-ing byte k/8 to byte k, OR-ing every bit but k%8 and
//     comparing with all ones (0xFF where the bit is set).
//
// Registers: R8 walks dst, R10 the row starts; SI, DI, DX, BX walk the
// weights, activations, activation scales and aux within a row; CX counts
// blocks. The row count and stride stay in the argument slots.

#include "textflag.h"

// HSUM folds Y0 into X0's low float.
#define HSUM \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VHADDPS      X0, X0, X0; \
	VHADDPS      X0, X0, X0

// ROWSTART points the walkers at the start of the current row.
#define ROWSTART \
	MOVQ R10, SI; \
	MOVQ q+32(FP), DI; \
	MOVQ d+40(FP), DX; \
	MOVQ aux+48(FP), BX; \
	MOVQ nb+56(FP), CX

// ROWEND stores X0's low float as this row's result and moves to the next
// row, jumping to label if any are left.
#define ROWEND(label) \
	VMOVSS X0, (R8); \
	ADDQ   $4, R8; \
	ADDQ   stride+24(FP), R10; \
	DECQ   rows+8(FP); \
	JNZ    label; \
	VZEROUPPER; \
	RET

#define BCAST32(val, reg, xreg) \
	MOVL         val, AX; \
	VMOVD        AX, xreg; \
	VPBROADCASTD xreg, reg

// Bit expansion constants (see the header).
DATA bitshuf<>+0(SB)/8, $0x0000000000000000
DATA bitshuf<>+8(SB)/8, $0x0101010101010101
DATA bitshuf<>+16(SB)/8, $0x0202020202020202
DATA bitshuf<>+24(SB)/8, $0x0303030303030303
GLOBL bitshuf<>(SB), RODATA|NOPTR, $32

// ---------------------------------------------------------------- Q8_0

// Q80BLK adds block (off(SI), aoff(DI), doff(DX)) into acc.
#define Q80BLK(off, aoff, doff, acc) \
	VMOVDQU      aoff(DI), Y3; \
	VPABSB       off+2(SI), Y2; \
	VPSIGNB      off+2(SI), Y3, Y3; \
	VPMADDUBSW   Y3, Y2, Y2; \
	VPMADDWD     Y15, Y2, Y2; \
	VCVTDQ2PS    Y2, Y2; \
	VPBROADCASTW off(SI), X4; \
	VCVTPH2PS    X4, Y4; \
	VBROADCASTSS doff(DX), Y5; \
	VMULPS       Y5, Y4, Y4; \
	VFMADD231PS  Y4, Y2, acc

// func qdotQ8_0SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// Q8_0 block (34 bytes): f16 d, 32 int8. Four blocks per step into four
// accumulators, so the FMA latency chain never limits. Each step prefetches
// the two cache lines 2 KB ahead (the rows of a chunk are contiguous, so
// this runs into the next row): measured +17% (median of 10 paired runs)
// on the 2-thread decode of a DRAM-resident (5632, 2048) matrix, where the
// hardware prefetcher alone left the kernel at ~60% of read bandwidth.
TEXT ·qdotQ8_0SIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x00010001, Y15, X15)

q80row:
	ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	SUBQ   $4, CX
	JL     q80tail

	PCALIGN $64

q80loop4:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	Q80BLK(0, 0, 0, Y0)
	Q80BLK(34, 32, 4, Y1)
	Q80BLK(68, 64, 8, Y6)
	Q80BLK(102, 96, 12, Y7)
	ADDQ $136, SI
	ADDQ $128, DI
	ADDQ $16, DX
	SUBQ $4, CX
	JGE  q80loop4

q80tail:
	ADDQ $4, CX
	JZ   q80sum

q80loop1:
	Q80BLK(0, 0, 0, Y0)
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q80loop1

q80sum:
	VADDPS Y1, Y0, Y0
	VADDPS Y7, Y6, Y6
	VADDPS Y6, Y0, Y0
	HSUM
	ROWEND(q80row)

// ---------------------------------------------------------------- Q4_0, Q4_1, Q5_0, Q5_1

// NIB32 loads the 16 bytes at off(SI) as 32 nibbles into reg: byte j < 16
// is the low nibble of byte j, byte 16+j its high nibble (element order of
// the 32-element blocks). tmp is clobbered. Y15 = 0x0F bytes.
#define NIB32(off, reg, xreg, tmp) \
	VMOVDQU     off(SI), xreg; \
	VPSRLW      $4, xreg, tmp; \
	VINSERTI128 $1, tmp, reg, reg; \
	VPAND       Y15, reg, reg

// HBITS expands the 32 bits at off(SI) into reg: 0xFF bytes where the bit
// is set. Y12 = bitshuf, Y11 = ^(1<<(k%8)) bytes, Y10 = all ones.
#define HBITS(off, reg) \
	VPBROADCASTD off(SI), reg; \
	VPSHUFB      Y12, reg, reg; \
	VPOR         Y11, reg, reg; \
	VPCMPEQB     Y10, reg, reg

// SDOT: acc += dw·da · Σ q·a for signed bytes q in Y2 (Y2 clobbered),
// activations at aoff(DI), f16 dw at doff(SI), da at daoff(DX).
#define SDOT(aoff, doff, daoff, acc) \
	VMOVDQU      aoff(DI), Y3; \
	VPSIGNB      Y2, Y3, Y3; \
	VPABSB       Y2, Y2; \
	VPMADDUBSW   Y3, Y2, Y2; \
	VPMADDWD     Y14, Y2, Y2; \
	VCVTDQ2PS    Y2, Y2; \
	VPBROADCASTW doff(SI), X4; \
	VCVTPH2PS    X4, Y4; \
	VBROADCASTSS daoff(DX), Y5; \
	VMULPS       Y5, Y4, Y4; \
	VFMADD231PS  Y4, Y2, acc

// UDOT: as SDOT for unsigned bytes q in Y2, plus macc += mw·sa with f16 mw
// at moff(SI) and sa at saoff(BX) (the Q8_1 block sum).
#define UDOT(aoff, doff, daoff, moff, saoff, acc, macc) \
	VPMADDUBSW   aoff(DI), Y2, Y2; \
	VPMADDWD     Y14, Y2, Y2; \
	VCVTDQ2PS    Y2, Y2; \
	VPBROADCASTW doff(SI), X4; \
	VCVTPH2PS    X4, Y4; \
	VBROADCASTSS daoff(DX), Y5; \
	VMULPS       Y5, Y4, Y4; \
	VFMADD231PS  Y4, Y2, acc; \
	VPBROADCASTW moff(SI), X4; \
	VCVTPH2PS    X4, X4; \
	VFMADD231SS  saoff(BX), X4, macc

// Q40BLK: block {d; qs[16]} at off(SI); value nib−8.
#define Q40BLK(off, aoff, daoff, acc) \
	NIB32(off+2, Y2, X2, X3); \
	VPSUBB Y13, Y2, Y2; \
	SDOT(aoff, off, daoff, acc)

// Q50BLK: block {d; qh u32; qs[16]} at off(SI); value nib | hbit<<4 − 16,
// i.e. nib | 0xF0 where the high bit is clear. Y13 = 0xF0 bytes.
#define Q50BLK(off, aoff, daoff, acc) \
	NIB32(off+6, Y2, X2, X3); \
	HBITS(off+2, Y6); \
	VPANDN Y13, Y6, Y6; \
	VPOR   Y6, Y2, Y2; \
	SDOT(aoff, off, daoff, acc)

// Q41BLK: block {d, m; qs[16]} at off(SI); value d·nib + m.
#define Q41BLK(off, aoff, daoff, saoff, acc, macc) \
	NIB32(off+4, Y2, X2, X3); \
	UDOT(aoff, off, daoff, off+2, saoff, acc, macc)

// Q51BLK: block {d, m; qh u32; qs[16]} at off(SI); value d·(nib |
// hbit<<4) + m. Y13 = 0x10 bytes.
#define Q51BLK(off, aoff, daoff, saoff, acc, macc) \
	NIB32(off+8, Y2, X2, X3); \
	HBITS(off+4, Y6); \
	VPAND Y13, Y6, Y6; \
	VPOR  Y6, Y2, Y2; \
	UDOT(aoff, off, daoff, off+2, saoff, acc, macc)

// SMALLCONST sets the constants the 32-element kernels share.
#define SMALLCONST \
	BCAST32($0x0f0f0f0f, Y15, X15); \
	BCAST32($0x00010001, Y14, X14); \
	VMOVDQU bitshuf<>(SB), Y12; \
	MOVQ    $0x7fbfdfeff7fbfdfe, AX; \
	VMOVQ   AX, X11; \
	VPBROADCASTQ X11, Y11; \
	VPCMPEQB Y10, Y10, Y10

// func qdotQ4_0SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotQ4_0SIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	SMALLCONST
	BCAST32($0x08080808, Y13, X13)

q40row:
	ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	SUBQ   $2, CX
	JL     q40tail

	PCALIGN $64

q40loop2:
	Q40BLK(0, 0, 0, Y0)
	Q40BLK(18, 32, 4, Y1)
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX
	JGE  q40loop2

q40tail:
	ADDQ $2, CX
	JZ   q40sum
	Q40BLK(0, 0, 0, Y0)

q40sum:
	VADDPS Y1, Y0, Y0
	HSUM
	ROWEND(q40row)

// func qdotQ5_0SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotQ5_0SIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	SMALLCONST
	BCAST32($0xf0f0f0f0, Y13, X13)

q50row:
	ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	SUBQ   $2, CX
	JL     q50tail

	PCALIGN $64

q50loop2:
	Q50BLK(0, 0, 0, Y0)
	Q50BLK(22, 32, 4, Y1)
	ADDQ $44, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX
	JGE  q50loop2

q50tail:
	ADDQ $2, CX
	JZ   q50sum
	Q50BLK(0, 0, 0, Y0)

q50sum:
	VADDPS Y1, Y0, Y0
	HSUM
	ROWEND(q50row)

// func qdotQ4_1SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotQ4_1SIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	SMALLCONST

q41row:
	ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	SUBQ   $2, CX
	JL     q41tail

	PCALIGN $64

q41loop2:
	Q41BLK(0, 0, 0, 0, Y0, X8)
	Q41BLK(20, 32, 4, 4, Y1, X9)
	ADDQ $40, SI
	ADDQ $64, DI
	ADDQ $8, DX
	ADDQ $8, BX
	SUBQ $2, CX
	JGE  q41loop2

q41tail:
	ADDQ $2, CX
	JZ   q41sum
	Q41BLK(0, 0, 0, 0, Y0, X8)

q41sum:
	VADDPS Y1, Y0, Y0
	HSUM
	VADDSS X9, X8, X8
	VADDSS X8, X0, X0
	ROWEND(q41row)

// func qdotQ5_1SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
TEXT ·qdotQ5_1SIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	SMALLCONST
	BCAST32($0x10101010, Y13, X13)

q51row:
	ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	SUBQ   $2, CX
	JL     q51tail

	PCALIGN $64

q51loop2:
	Q51BLK(0, 0, 0, 0, Y0, X8)
	Q51BLK(24, 32, 4, 4, Y1, X9)
	ADDQ $48, SI
	ADDQ $64, DI
	ADDQ $8, DX
	ADDQ $8, BX
	SUBQ $2, CX
	JGE  q51loop2

q51tail:
	ADDQ $2, CX
	JZ   q51sum
	Q51BLK(0, 0, 0, 0, Y0, X8)

q51sum:
	VADDPS Y1, Y0, Y0
	HSUM
	VADDSS X9, X8, X8
	VADDSS X8, X0, X0
	ROWEND(q51row)

// ---------------------------------------------------------------- Q4_K, Q5_K

// VPSHUFB masks broadcasting scale word k (k = 0..7) to all 16 words.
DATA k4shuf<>+0(SB)/8, $0x0100010001000100
DATA k4shuf<>+8(SB)/8, $0x0100010001000100
DATA k4shuf<>+16(SB)/8, $0x0100010001000100
DATA k4shuf<>+24(SB)/8, $0x0100010001000100
DATA k4shuf<>+32(SB)/8, $0x0302030203020302
DATA k4shuf<>+40(SB)/8, $0x0302030203020302
DATA k4shuf<>+48(SB)/8, $0x0302030203020302
DATA k4shuf<>+56(SB)/8, $0x0302030203020302
DATA k4shuf<>+64(SB)/8, $0x0504050405040504
DATA k4shuf<>+72(SB)/8, $0x0504050405040504
DATA k4shuf<>+80(SB)/8, $0x0504050405040504
DATA k4shuf<>+88(SB)/8, $0x0504050405040504
DATA k4shuf<>+96(SB)/8, $0x0706070607060706
DATA k4shuf<>+104(SB)/8, $0x0706070607060706
DATA k4shuf<>+112(SB)/8, $0x0706070607060706
DATA k4shuf<>+120(SB)/8, $0x0706070607060706
DATA k4shuf<>+128(SB)/8, $0x0908090809080908
DATA k4shuf<>+136(SB)/8, $0x0908090809080908
DATA k4shuf<>+144(SB)/8, $0x0908090809080908
DATA k4shuf<>+152(SB)/8, $0x0908090809080908
DATA k4shuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4shuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4shuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4shuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4shuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4shuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k4shuf<>(SB), RODATA|NOPTR, $256

// K4SCALES unpacks the 12 packed scale bytes at 4(SI) of a Q4_K/Q5_K
// super-block: the eight 6-bit scales as words in both 128-bit halves of
// Y2, the eight 6-bit mins as dwords in Y3 (see scaleMinK4). With
// u0, u1, u2 the three little-endian words of the packed bytes:
//
//	sc[0..3] = u0 & 0x3f..            m[0..3] = u1 & 0x3f..
//	sc[4..7] = u2 & 0x0f.. | (u0>>2) & 0x30..
//	m[4..7]  = (u2>>4) & 0x0f.. | (u1>>2) & 0x30..
//
// computed for scales and mins together on [u0 u1] and [u2 u2>>4] and
// interleaved into [sc0-3 sc4-7 m0-3 m4-7]. Y13 = 0x3f, Y12 = 0x30 bytes,
// Y15 = 0x0f bytes.
#define K4SCALES(ptr, ysc, xsc, ymn, xmn, xt1, xt2) \
	VMOVQ       4(ptr), xsc; \
	VMOVD       12(ptr), xmn; \
	VPSRLW      $2, xsc, xt1; \
	VPAND       X13, xsc, xsc; \
	VPAND       X12, xt1, xt1; \
	VPSRLW      $4, xmn, xt2; \
	VPUNPCKLDQ  xt2, xmn, xmn; \
	VPAND       X15, xmn, xmn; \
	VPOR        xt1, xmn, xmn; \
	VPUNPCKLDQ  xmn, xsc, xsc; \
	VPSRLDQ     $8, xsc, xmn; \
	VPMOVZXBD   xmn, ymn; \
	VPMOVZXBW   xsc, xsc; \
	VINSERTI128 $1, xsc, ysc, ysc

// K4NEXT points R9 at the next super-block of bb bytes, or at this one
// for the row's last (so the prefetched scales never read past the row).
#define K4NEXT(bb) \
	LEAQ    bb(SI), R9; \
	CMPQ    CX, $1; \
	CMOVQEQ SI, R9

// K4MIN sets Y4 = Σ-ready min products m_j·(bsums[2j]+bsums[2j+1]) (int32
// per lane j). Y14 = ones (words).
#define K4MIN \
	VPMADDWD (BX), Y14, Y4; \
	VPMULLD  Y3, Y4, Y4

// K4DOT: 64 elements (sub-blocks 2j, 2j+1) whose values are in Y6 (low
// nibbles) and Y7 (high nibbles) as bytes; multiplies them with the
// activations at 64j(DI) and scales them by words 2j and 2j+1 of Y2,
// leaving int32 results in Y6 and Y7 for the caller to add up.
#define K4DOT(j) \
	VPMADDUBSW 64*j-128(DI), Y6, Y6; \
	VPMADDUBSW 64*j-96(DI), Y7, Y7; \
	VPSHUFB    64*j-128(R11), Y2, Y8; \
	VPSHUFB    64*j-96(R11), Y2, Y9; \
	VPMADDWD   Y8, Y6, Y6; \
	VPMADDWD   Y9, Y7, Y7

#define Q4KGROUP(j) \
	VMOVDQU 16+32*j(SI), Y7; \
	VPAND   Y15, Y7, Y6; \
	VPSRLW  $4, Y7, Y7; \
	VPAND   Y15, Y7, Y7; \
	K4DOT(j)

// K4FINISH: acc Y0 += da·(d·Σint − dmin·Σmin) with the integer sums in
// Y5 and Y4, f16 d and dmin at 0(SI), 2(SI), da at (DX). Clobbers Y10, Y11.
#define K4FINISH \
	VCVTDQ2PS    Y5, Y5; \
	VCVTDQ2PS    Y4, Y4; \
	VPBROADCASTW (SI), X10; \
	VCVTPH2PS    X10, Y10; \
	VPBROADCASTW 2(SI), X11; \
	VCVTPH2PS    X11, Y11; \
	VMULPS       Y10, Y5, Y5; \
	VFNMADD231PS Y11, Y4, Y5; \
	VBROADCASTSS (DX), Y10; \
	VFMADD231PS  Y10, Y5, Y0

// func qdotQ4_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// Q4_K super-block (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales
// and mins for 8 sub-blocks of 32, 128 bytes of nibbles (32 bytes per 64
// elements: low nibbles sub-block 2j, high nibbles 2j+1).
// Σ = d·da·Σ_j sc_j·Σ q·a − dmin·da·Σ_j m_j·(Σ a over sub-block j).
TEXT ·qdotQ4_KSIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x00010001, Y14, X14)
	BCAST32($0x3f3f3f3f, Y13, X13)
	BCAST32($0x30303030, Y12, X12)

q4krow:
	ROWSTART
	LEAQ   k4shuf<>+128(SB), R11
	ADDQ   $128, DI
	VXORPS Y0, Y0, Y0
	K4SCALES(SI, Y2, X2, Y3, X3, X8, X9)

	PCALIGN $64

q4kloop:
	PREFETCHT0 2048(SI) // see qdotQ8_0SIMD; +25% (median of 10 paired runs)
	PREFETCHT0 2112(SI)
	// The next super-block's scales are unpacked one iteration ahead
	// (into Y1, Y3), taking their load-and-unpack latency off the
	// critical path.
	K4MIN
	K4NEXT(144)
	K4SCALES(R9, Y1, X1, Y3, X3, X8, X9)
	Q4KGROUP(0)
	VPADDD Y6, Y7, Y5
	Q4KGROUP(1)
	VPADDD Y6, Y7, Y6
	VPADDD Y6, Y5, Y5
	Q4KGROUP(2)
	VPADDD Y6, Y7, Y11
	Q4KGROUP(3)
	VPADDD Y6, Y7, Y6
	VPADDD Y6, Y11, Y11
	VPADDD Y11, Y5, Y5
	K4FINISH
	VMOVDQA Y1, Y2
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q4kloop

	HSUM
	ROWEND(q4krow)

DATA bit4<>+0(SB)/8, $0x1010101010101010
DATA bit4<>+8(SB)/8, $0x1010101010101010
DATA bit4<>+16(SB)/8, $0x1010101010101010
DATA bit4<>+24(SB)/8, $0x1010101010101010
GLOBL bit4<>(SB), RODATA|NOPTR, $32

// Q5KGROUP is Q4KGROUP plus the fifth bits: bit 2j of qh[l] for the low
// nibble, bit 2j+1 for the high one. Y10 holds qh shifted right by 2j
// (per byte; shifted on after use).
#define Q5KGROUP(j) \
	VMOVDQU 48+32*j(SI), Y7; \
	VPAND   Y15, Y7, Y6; \
	VPSRLW  $4, Y7, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPSLLW  $4, Y10, Y8; \
	VPSLLW  $3, Y10, Y9; \
	VPAND   bit4<>(SB), Y8, Y8; \
	VPAND   bit4<>(SB), Y9, Y9; \
	VPOR    Y8, Y6, Y6; \
	VPOR    Y9, Y7, Y7; \
	VPSRLW  $2, Y10, Y10; \
	K4DOT(j)

// func qdotQ5_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// Q5_K super-block (176 bytes): f16 d, f16 dmin, 12 scale bytes, qh[32],
// qs[128]; as Q4_K with 5-bit values.
TEXT ·qdotQ5_KSIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x00010001, Y14, X14)
	BCAST32($0x3f3f3f3f, Y13, X13)
	BCAST32($0x30303030, Y12, X12)

q5krow:
	ROWSTART
	LEAQ   k4shuf<>+128(SB), R11
	ADDQ   $128, DI
	VXORPS Y0, Y0, Y0
	K4SCALES(SI, Y2, X2, Y3, X3, X8, X9)

	PCALIGN $64

q5kloop:
	K4MIN
	K4NEXT(176)
	K4SCALES(R9, Y1, X1, Y3, X3, X8, X9)
	VMOVDQU 16(SI), Y10
	Q5KGROUP(0)
	VPADDD  Y6, Y7, Y5
	Q5KGROUP(1)
	VPADDD  Y6, Y7, Y6
	VPADDD  Y6, Y5, Y5
	Q5KGROUP(2)
	VPADDD  Y6, Y7, Y11
	Q5KGROUP(3)
	VPADDD  Y6, Y7, Y6
	VPADDD  Y6, Y11, Y11
	VPADDD  Y11, Y5, Y5
	K4FINISH
	VMOVDQA Y1, Y2
	ADDQ    $176, SI
	ADDQ    $256, DI
	ADDQ    $4, DX
	ADDQ    $32, BX
	DECQ    CX
	JNZ     q5kloop

	HSUM
	ROWEND(q5krow)

// ---------------------------------------------------------------- Q6_K

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
// The 2-bit fields are moved to bits 4-5 with one word shift each and
// masked with Y13 = 0x30 bytes.
#define Q6KHALF(qloff, qhoff, aoff) \
	VMOVDQU qloff(SI), Y9; \
	VMOVDQU qloff+32(SI), Y10; \
	VMOVDQU qhoff(SI), Y11; \
	VPAND   Y15, Y9, Y7; \
	VPSLLW  $4, Y11, Y12; \
	VPAND   Y13, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	Q6KQ(aoff, 0); \
	VPAND   Y15, Y10, Y7; \
	VPSLLW  $2, Y11, Y12; \
	VPAND   Y13, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	Q6KQ(aoff+32, 1); \
	VPSRLW  $4, Y9, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPAND   Y13, Y11, Y12; \
	VPOR    Y12, Y7, Y7; \
	Q6KQ(aoff+64, 2); \
	VPSRLW  $4, Y10, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPSRLW  $2, Y11, Y12; \
	VPAND   Y13, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	Q6KQ(aoff+96, 3)

// func qdotQ6_KSIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// Q6_K super-block (210 bytes): ql[128] low nibbles, qh[64] high 2 bits,
// 16 int8 scales (one per 16 elements), f16 d. Values are q−32; the −32 is
// applied once per super-block through the activation sums:
// Σ sc·(q−32)·a = Σ sc·q·a − 32·Σ_sub sc_sub·bsum_sub.
TEXT ·qdotQ6_KSIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x0f0f0f0f, Y15, X15)
	BCAST32($0x30303030, Y13, X13)

q6krow:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $64

q6kloop:
	PREFETCHT0 2048(SI) // see qdotQ8_0SIMD; +21% (median of 10 paired runs)
	PREFETCHT0 2112(SI)
	VPMOVSXBW 192(SI), Y2
	VPMADDWD  (BX), Y2, Y3
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
	ADDQ $32, BX
	DECQ CX
	JNZ  q6kloop

	HSUM
	ROWEND(q6krow)
