// AVX2 integer dot products of quantized weight rows with 8-bit quantized
// activations (quantizedActs), mirroring the reference dotQ* functions of
// rowdot_quant_ref.go. Integer parts are exact; only the per-block float scaling
// and the final lane sums are reordered.
//
// Every kernel has the signature
//
//	func qdotXxxSIMD(dst *float32, rows int, w *byte, stride uintptr,
//	                 q *int8, d *float32, aux unsafe.Pointer, nb int)
//
// and sets dst[i] = Σ over the nb blocks of weight row i (at w + i·stride)
// against the activations q (int8), d (block scales) and aux (int16 bsums
// for the K-quants). rows ≥ 1, nb ≥ 1. The row loop lives here so a
// matrix-vector chunk costs one call. (Q4_0, Q4_1, Q5_0 and Q5_1 run on
// their rows packed eight at a time: rowdot_q4x8_amd64.s.)
//
// Building blocks:
//   - VPMADDUBSW multiplies unsigned bytes by signed bytes and adds adjacent
//     pairs into int16 (no overflow: |pair| ≤ 2·63·127);
//   - VPMADDWD multiplies int16 pairs by int16 scales (or ones) and adds
//     them into int32;
//   - signed×signed bytes go through VPABSB/VPSIGNB: |w| · (a·sign(w)).
//
// Registers: R8 walks dst, R10 the row starts; SI, DI, DX, BX walk the
// weights, activations, activation scales and aux within a row; CX counts
// blocks. The row count and stride stay in the argument slots.

#include "textflag.h"
#include "rowdot_amd64.h"

// HSUM folds Y0 into X0's low float.
#define HSUM \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VHADDPS      X0, X0, X0; \
	VHADDPS      X0, X0, X0

// X4SETUP, X4ROWSTART and X4ROWEND serve the multi-token kernels at the
// end of the file (defined here, before any TEXT, for go vet).
// X4SETUP loads the token offsets and sets the 0x0f byte mask Y15.
#define X4SETUP \
	MOVQ offs+64(FP), AX; \
	MOVQ 8(AX), R9; \
	MOVQ 16(AX), R12; \
	MOVQ 24(AX), R13; \
	MOVQ 40(AX), DX; \
	MOVQ 48(AX), R14; \
	MOVQ 56(AX), R11; \
	MOVQ dst+0(FP), R8; \
	MOVQ w+16(FP), R10; \
	BCAST32($0x0f0f0f0f, Y15, X15)

#define X4ROWSTART \
	MOVQ R10, SI; \
	MOVQ q+32(FP), DI; \
	MOVQ bs+40(FP), BX; \
	MOVQ dxv+48(FP), CX; \
	MOVQ nb+56(FP), AX

// X4ROWEND adds the halves of the float accumulator F (XF its low half)
// and stores the four tokens' results of this row, then moves to the next
// row, jumping to label if any are left.
#define X4ROWEND(F, XF, label) \
	VEXTRACTF128 $1, F, X10; \
	VADDPS       X10, XF, XF; \
	X4STORE4(XF, label)

// X4STORE4 stores the four tokens' results of this row (lane t of XF =
// token t) and moves to the next row, jumping to label if any are left.
#define X4STORE4(XF, label) \
	VMOVSS       XF, (R8); \
	MOVQ         offs+64(FP), AX; \
	MOVQ         72(AX), AX; \
	VEXTRACTPS   $1, XF, (R8)(AX*1); \
	MOVQ         offs+64(FP), AX; \
	MOVQ         80(AX), AX; \
	VEXTRACTPS   $2, XF, (R8)(AX*1); \
	MOVQ         offs+64(FP), AX; \
	MOVQ         88(AX), AX; \
	VEXTRACTPS   $3, XF, (R8)(AX*1); \
	ADDQ         $4, R8; \
	ADDQ         stride+24(FP), R10; \
	DECQ         rows+8(FP); \
	JNZ          label; \
	VZEROUPPER; \
	RET

// X4ZF zeroes the four tokens' float accumulators of the multi-token
// K-quant kernels (8 lanes each, at 0, 32, 64, 96(SP)) and the int32
// accumulators Y0-Y3.
#define X4ZF \
	VPXOR   Y0, Y0, Y0; \
	VMOVUPS Y0, 0(SP); \
	VMOVUPS Y0, 32(SP); \
	VMOVUPS Y0, 64(SP); \
	VMOVUPS Y0, 96(SP); \
	VPXOR   Y1, Y1, Y1; \
	VPXOR   Y2, Y2, Y2; \
	VPXOR   Y3, Y3, Y3

// X4ROWENDF folds each token's float accumulator (FOLD8, as the
// single-token kernels fold theirs) and stores the four results of this
// row, then moves to the next row, jumping to label if any are left.
// X2ROWENDF does so for groups of two (token 1's value stored for tokens
// 1-3, whose offsets are equal).
#define X4STOREF(f, o) \
	VMOVUPS f(SP), Y0; \
	FOLD8(Y0, X0); \
	MOVQ    offs+64(FP), AX; \
	MOVQ    o(AX), AX; \
	VMOVSS  X0, (R8)(AX*1)

#define X4NEXTROW(label) \
	ADDQ stride+24(FP), R10; \
	ADDQ $4, R8; \
	DECQ rows+8(FP); \
	JNZ  label; \
	VZEROUPPER; \
	RET

#define X4ROWENDF(label) \
	VMOVUPS 0(SP), Y0; \
	FOLD8(Y0, X0); \
	VMOVSS  X0, (R8); \
	X4STOREF(32, 72); \
	X4STOREF(64, 80); \
	X4STOREF(96, 88); \
	X4NEXTROW(label)

#define X2ROWENDF(label) \
	VMOVUPS 0(SP), Y0; \
	FOLD8(Y0, X0); \
	VMOVSS  X0, (R8); \
	VMOVUPS 32(SP), Y0; \
	FOLD8(Y0, X0); \
	MOVQ    offs+64(FP), AX; \
	MOVQ    72(AX), AX; \
	VMOVSS  X0, (R8)(AX*1); \
	MOVQ    offs+64(FP), AX; \
	MOVQ    80(AX), AX; \
	VMOVSS  X0, (R8)(AX*1); \
	MOVQ    offs+64(FP), AX; \
	MOVQ    88(AX), AX; \
	VMOVSS  X0, (R8)(AX*1); \
	X4NEXTROW(label)

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
// Q8_0 block (34 bytes): f16 d, 32 int8. The canonical Q8_0 arithmetic
// where the AVX-512 Q8_0 kernels run (hasQ8Z, hasVNNI; on AVX2 alone the
// rows are packed instead, rowdot_q4x8.go, with the reference dotQ8_0's
// steps) (batch invariance, see matmul.go): per row and token one 8-lane float
// accumulator, acc += (dw·da)·float(int32 lane sums) block after block,
// folded by FOLD8 — exactly what qdotQ8_0x4SIMD does per token, so one
// token and a group of four give the same bits. (It used to keep four
// accumulators, blocks mod 4, against the FMA latency: a decode is bound
// by memory, not by that chain — BenchmarkMatVec Q8_0 from DRAM kept its
// rate, 17-18 against 15-17 GB/s per CPU-second; a variant running two
// rows at once for two chains lost a third of it to the two interleaved
// streams.) Each step prefetches the two cache lines 2 KB ahead (the rows
// of a chunk are contiguous, so this runs into the next row): measured
// +17% (median of 10 paired runs) on the 2-thread decode of a
// DRAM-resident (5632, 2048) matrix, where the hardware prefetcher alone
// left the kernel at ~60% of read bandwidth.
TEXT ·qdotQ8_0SIMD(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	BCAST32($0x00010001, Y15, X15)

q80row:
	ROWSTART
	VXORPS Y0, Y0, Y0
	SUBQ   $4, CX
	JL     q80tail

	PCALIGN $64

q80loop4:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	Q80BLK(0, 0, 0, Y0)
	Q80BLK(34, 32, 4, Y0)
	Q80BLK(68, 64, 8, Y0)
	Q80BLK(102, 96, 12, Y0)
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
	FOLD8(Y0, X0)
	ROWEND(q80row)

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

	FOLD8(Y0, X0)
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
	// As Q4_K's loop, three lines per 176-byte super-block (it had none:
	// TinyLlama-shaped Q5_K_M decode 27.6/26.7/28.1 -> 30.3/31.2/31.6
	// tok/s interleaved, one thread from DRAM 11.1-11.7 -> 12.6-13.4 GB/s).
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
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

	FOLD8(Y0, X0)
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
// masked with Y13 = 0x30 bytes. Each 32-byte quarter goes to QM: Q6KQ for
// one token, Q6KX4Q / Q6KX2Q for four / two (the multi-token kernels).
#define Q6KHALF(qloff, qhoff, aoff, QM) \
	VMOVDQU qloff(SI), Y9; \
	VMOVDQU qloff+32(SI), Y10; \
	VMOVDQU qhoff(SI), Y11; \
	VPAND   Y15, Y9, Y7; \
	VPSLLW  $4, Y11, Y12; \
	VPAND   Y13, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	QM(aoff, 0); \
	VPAND   Y15, Y10, Y7; \
	VPSLLW  $2, Y11, Y12; \
	VPAND   Y13, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	QM(aoff+32, 1); \
	VPSRLW  $4, Y9, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPAND   Y13, Y11, Y12; \
	VPOR    Y12, Y7, Y7; \
	QM(aoff+64, 2); \
	VPSRLW  $4, Y10, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPSRLW  $2, Y11, Y12; \
	VPAND   Y13, Y12, Y12; \
	VPOR    Y12, Y7, Y7; \
	QM(aoff+96, 3)

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
	Q6KHALF(0, 128, 0, Q6KQ)
	VPERMQ    $0xEE, Y2, Y6
	Q6KHALF(64, 160, 128, Q6KQ)
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

	FOLD8(Y0, X0)
	ROWEND(q6krow)

// ---------------------------------------------------------------- several tokens
//
// Multi-token row dots for the K-quants: as qdotQ4_KSIMD etc., but each
// weight super-block, once unpacked in registers, meets four tokens, so a
// decode step of a few sequences unpacks W once per four tokens instead of
// once per token (see dotQRowsX4). Every kernel has the signature
//
//	func qdotXxx_Kx4SIMD(dst *float32, rows int, w *byte, stride uintptr,
//	                     q *int8, bs *int16, dxv *float32, nb int,
//	                     offs *qx4Offs)
//
// and for token t < 4 sets dst[offs.dst[t] + 4i] (bytes) = the dot of
// weight row i with the activations q + offs.q[t] (int8; bsums at
// bs + offs.bs[t]); offs.*[0] = 0. dxv (nb, 8) holds per super-block the
// four tokens' activation scales, twice: [da0 da1 da2 da3 da0 da1 da2 da3].
// A group of fewer than four tokens repeats its last token (same offsets),
// which computes the same value twice and stores it twice.
//
// Batch invariance (matmul.go): each token gets exactly the arithmetic of
// the single-token kernel — its int32 lane sums of a super-block are
// scaled lane by lane (K4TOKEND, Q6TOKEND: the K4FINISH steps) into its own
// 8-lane float accumulator (0, 32, 64, 96(SP)), folded by FOLD8 at the
// end of the row, so a token's result never depends on the other three.
// (They used to be folded across lanes per super-block, tokens in lanes:
// a cheaper float step, but other bits than the row dot.)
//
// Registers: Y0-Y3 the tokens' int32 accumulators of a super-block. SI
// walks the row, DI the activations (R9, R12, R13: offsets of tokens 1-3),
// BX the bsums (DX, R14, R11: offsets), CX dxv, AX counts super-blocks.

DATA k4c3f<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA k4c3f<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL k4c3f<>(SB), RODATA|NOPTR, $16
DATA k4c30<>+0(SB)/8, $0x3030303030303030
DATA k4c30<>+8(SB)/8, $0x3030303030303030
GLOBL k4c30<>(SB), RODATA|NOPTR, $16

// K4SCALESM is K4SCALES with its 0x3f and 0x30 masks from memory.
#define K4SCALESM(ptr, ysc, xsc, ymn, xmn, xt1, xt2) \
	VMOVQ       4(ptr), xsc; \
	VMOVD       12(ptr), xmn; \
	VPSRLW      $2, xsc, xt1; \
	VPAND       k4c3f<>(SB), xsc, xsc; \
	VPAND       k4c30<>(SB), xt1, xt1; \
	VPSRLW      $4, xmn, xt2; \
	VPUNPCKLDQ  xt2, xmn, xmn; \
	VPAND       X15, xmn, xmn; \
	VPOR        xt1, xmn, xmn; \
	VPUNPCKLDQ  xmn, xsc, xsc; \
	VPSRLDQ     $8, xsc, xmn; \
	VPMOVZXBD   xmn, ymn; \
	VPMOVZXBW   xsc, xsc; \
	VINSERTI128 $1, xsc, ysc, ysc

// K4X4START unpacks the super-block's scales (words in Y12) and mins (in
// both words of each dword of Y13, for K4TOKEND) and zeroes the int32
// accumulators Y0-Y3.
#define K4X4START \
	K4SCALESM(SI, Y12, X12, Y13, X13, X10, X11); \
	VPSLLD $16, Y13, Y10; \
	VPOR   Y10, Y13, Y13; \
	VPXOR  Y0, Y0, Y0; \
	VPXOR  Y1, Y1, Y1; \
	VPXOR  Y2, Y2, Y2; \
	VPXOR  Y3, Y3, Y3

// K4TOKEND ends a super-block for one token exactly as K4FINISH does in
// the single-token kernel, lane by lane (no folding across lanes, so
// the bits are the row dot's): with its int32 sums in acc, its bsums at
// bs and its scale da at dao, F += da·(d·float(acc) − dmin·float(m·bsums))
// into its float accumulator at f(SP). Y10 = d, Y11 = dmin; Y14
// clobbered.
#define K4TOKEND(acc, bs, dao, f) \
	VCVTDQ2PS    acc, acc; \
	VMULPS       Y10, acc, acc; \
	VPMADDWD     bs, Y13, Y14; \
	VCVTDQ2PS    Y14, Y14; \
	VFNMADD231PS Y11, Y14, acc; \
	VBROADCASTSS dao, Y14; \
	VFMADD213PS  f(SP), Y14, acc; \
	VMOVUPS      acc, f(SP)

#define K4DMIN \
	VPBROADCASTW (SI), X10; \
	VCVTPH2PS    X10, Y10; \
	VPBROADCASTW 2(SI), X11; \
	VCVTPH2PS    X11, Y11

// K4X4END and K4X2END end a super-block for four and two tokens.
#define K4X4END \
	K4DMIN; \
	K4TOKEND(Y0, (BX), 0(CX), 0); \
	K4TOKEND(Y1, (BX)(DX*1), 4(CX), 32); \
	K4TOKEND(Y2, (BX)(R14*1), 8(CX), 64); \
	K4TOKEND(Y3, (BX)(R11*1), 12(CX), 96)

#define K4X2END \
	K4DMIN; \
	K4TOKEND(Y0, (BX), 0(CX), 0); \
	K4TOKEND(Y1, (BX)(DX*1), 4(CX), 32)

// Q6TOKEND ends a Q6_K super-block for one token as qdotQ6_KSIMD does:
// F += (d·da)·float(acc). Y12 = d; Y14 clobbered.
#define Q6TOKEND(acc, dao, f) \
	VCVTDQ2PS    acc, acc; \
	VBROADCASTSS dao, Y14; \
	VMULPS       Y12, Y14, Y14; \
	VFMADD213PS  f(SP), Y14, acc; \
	VMOVUPS      acc, f(SP)

// X4TOK: one token's 64 elements: low-nibble values Y6 × activations at
// lo, high Y7 × hi, scaled by the words in Y8, Y9, into acc.
#define X4TOK(lo, hi, acc) \
	VPMADDUBSW lo, Y6, Y10; \
	VPMADDUBSW hi, Y7, Y11; \
	VPMADDWD   Y8, Y10, Y10; \
	VPMADDWD   Y9, Y11, Y11; \
	VPADDD     Y10, acc, acc; \
	VPADDD     Y11, acc, acc

// K4X4TOKS runs group j (values in Y6, Y7) for the four tokens.
#define K4X4TOKS(j) \
	VPSHUFB k4shuf<>+64*j(SB), Y12, Y8; \
	VPSHUFB k4shuf<>+64*j+32(SB), Y12, Y9; \
	X4TOK(64*j(DI), 64*j+32(DI), Y0); \
	X4TOK(64*j(DI)(R9*1), 64*j+32(DI)(R9*1), Y1); \
	X4TOK(64*j(DI)(R12*1), 64*j+32(DI)(R12*1), Y2); \
	X4TOK(64*j(DI)(R13*1), 64*j+32(DI)(R13*1), Y3)

#define Q4KX4GROUP(j) \
	VMOVDQU 16+32*j(SI), Y7; \
	VPAND   Y15, Y7, Y6; \
	VPSRLW  $4, Y7, Y7; \
	VPAND   Y15, Y7, Y7; \
	K4X4TOKS(j)

// func qdotQ4_Kx4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
TEXT ·qdotQ4_Kx4SIMD(SB), NOSPLIT, $128-72
	X4SETUP

q4kx4row:
	X4ROWSTART
	X4ZF

	PCALIGN $64

q4kx4loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	K4X4START
	Q4KX4GROUP(0)
	Q4KX4GROUP(1)
	Q4KX4GROUP(2)
	Q4KX4GROUP(3)
	K4X4END
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, BX
	ADDQ $32, CX
	DECQ AX
	JNZ  q4kx4loop

	X4ROWENDF(q4kx4row)

// Q5KX4GROUP is Q4KX4GROUP plus the fifth bits (qh shifted by 2j in Y4).
#define Q5KX4GROUP(j) \
	VMOVDQU 48+32*j(SI), Y7; \
	VPAND   Y15, Y7, Y6; \
	VPSRLW  $4, Y7, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPSLLW  $4, Y4, Y10; \
	VPSLLW  $3, Y4, Y11; \
	VPAND   bit4<>(SB), Y10, Y10; \
	VPAND   bit4<>(SB), Y11, Y11; \
	VPOR    Y10, Y6, Y6; \
	VPOR    Y11, Y7, Y7; \
	VPSRLW  $2, Y4, Y4; \
	K4X4TOKS(j)

// func qdotQ5_Kx4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
TEXT ·qdotQ5_Kx4SIMD(SB), NOSPLIT, $128-72
	X4SETUP

q5kx4row:
	X4ROWSTART
	X4ZF

	PCALIGN $64

q5kx4loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	K4X4START
	VMOVDQU 16(SI), Y4
	Q5KX4GROUP(0)
	Q5KX4GROUP(1)
	Q5KX4GROUP(2)
	Q5KX4GROUP(3)
	K4X4END
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $32, BX
	ADDQ $32, CX
	DECQ AX
	JNZ  q5kx4loop

	X4ROWENDF(q5kx4row)

// Q6KX4Q: the 32 values in Y7 (scale words picked with mask k from Y6)
// against the four tokens' activations at aoff; Y14 temp.
#define Q6KX4Q(aoff, k) \
	VPSHUFB    q6kshuf<>+(32*k)(SB), Y6, Y8; \
	VPMADDUBSW aoff(DI), Y7, Y14; \
	VPMADDWD   Y8, Y14, Y14; \
	VPADDD     Y14, Y0, Y0; \
	VPMADDUBSW aoff(DI)(R9*1), Y7, Y14; \
	VPMADDWD   Y8, Y14, Y14; \
	VPADDD     Y14, Y1, Y1; \
	VPMADDUBSW aoff(DI)(R12*1), Y7, Y14; \
	VPMADDWD   Y8, Y14, Y14; \
	VPADDD     Y14, Y2, Y2; \
	VPMADDUBSW aoff(DI)(R13*1), Y7, Y14; \
	VPMADDWD   Y8, Y14, Y14; \
	VPADDD     Y14, Y3, Y3


// func qdotQ6_Kx4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
// The −32 offset enters each token's integer sum up front:
// acc_t = −32·Σ_sub sc_sub·bsum_sub (Y12 = −sc words); float accumulator Y4.
TEXT ·qdotQ6_Kx4SIMD(SB), NOSPLIT, $128-72
	X4SETUP
	BCAST32($0x30303030, Y13, X13)

q6kx4row:
	X4ROWSTART
	X4ZF

	PCALIGN $64

q6kx4loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	VPMOVSXBW 192(SI), Y5
	VPXOR     Y12, Y12, Y12
	VPSUBW    Y5, Y12, Y12
	VPMADDWD  (BX), Y12, Y0
	VPMADDWD  (BX)(DX*1), Y12, Y1
	VPMADDWD  (BX)(R14*1), Y12, Y2
	VPMADDWD  (BX)(R11*1), Y12, Y3
	VPSLLD    $5, Y0, Y0
	VPSLLD    $5, Y1, Y1
	VPSLLD    $5, Y2, Y2
	VPSLLD    $5, Y3, Y3
	VPERMQ    $0x44, Y5, Y6
	Q6KHALF(0, 128, 0, Q6KX4Q)
	VPERMQ    $0xEE, Y5, Y6
	Q6KHALF(64, 160, 128, Q6KX4Q)
	VPBROADCASTW 208(SI), X12
	VCVTPH2PS    X12, Y12
	Q6TOKEND(Y0, 0(CX), 0)
	Q6TOKEND(Y1, 4(CX), 32)
	Q6TOKEND(Y2, 8(CX), 64)
	Q6TOKEND(Y3, 12(CX), 96)

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, BX
	ADDQ $32, CX
	DECQ AX
	JNZ  q6kx4loop

	X4ROWENDF(q6kx4row)

// The x2 kernels are the x4 ones for groups of two tokens (offs as for
// x4, tokens 2 and 3 repeating token 1): only tokens 0 and 1 are
// multiplied, and token 1's sums are copied to lanes 2 and 3 before the
// fold, so the repeated stores write token 1's value.

// K4X2TOKS runs group j (values in Y6, Y7) for tokens 0 and 1.
#define K4X2TOKS(j) \
	VPSHUFB k4shuf<>+64*j(SB), Y12, Y8; \
	VPSHUFB k4shuf<>+64*j+32(SB), Y12, Y9; \
	X4TOK(64*j(DI), 64*j+32(DI), Y0); \
	X4TOK(64*j(DI)(R9*1), 64*j+32(DI)(R9*1), Y1)

#define Q4KX2GROUP(j) \
	VMOVDQU 16+32*j(SI), Y7; \
	VPAND   Y15, Y7, Y6; \
	VPSRLW  $4, Y7, Y7; \
	VPAND   Y15, Y7, Y7; \
	K4X2TOKS(j)

#define Q5KX2GROUP(j) \
	VMOVDQU 48+32*j(SI), Y7; \
	VPAND   Y15, Y7, Y6; \
	VPSRLW  $4, Y7, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPSLLW  $4, Y4, Y10; \
	VPSLLW  $3, Y4, Y11; \
	VPAND   bit4<>(SB), Y10, Y10; \
	VPAND   bit4<>(SB), Y11, Y11; \
	VPOR    Y10, Y6, Y6; \
	VPOR    Y11, Y7, Y7; \
	VPSRLW  $2, Y4, Y4; \
	K4X2TOKS(j)

// func qdotQ4_Kx2SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
TEXT ·qdotQ4_Kx2SIMD(SB), NOSPLIT, $128-72
	X4SETUP

q4kx2row:
	X4ROWSTART
	X4ZF

	PCALIGN $64

q4kx2loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	K4X4START
	Q4KX2GROUP(0)
	Q4KX2GROUP(1)
	Q4KX2GROUP(2)
	Q4KX2GROUP(3)
	K4X2END
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, BX
	ADDQ $32, CX
	DECQ AX
	JNZ  q4kx2loop

	X2ROWENDF(q4kx2row)

// func qdotQ5_Kx2SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
TEXT ·qdotQ5_Kx2SIMD(SB), NOSPLIT, $128-72
	X4SETUP

q5kx2row:
	X4ROWSTART
	X4ZF

	PCALIGN $64

q5kx2loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	K4X4START
	VMOVDQU 16(SI), Y4
	Q5KX2GROUP(0)
	Q5KX2GROUP(1)
	Q5KX2GROUP(2)
	Q5KX2GROUP(3)
	K4X2END
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $32, BX
	ADDQ $32, CX
	DECQ AX
	JNZ  q5kx2loop

	X2ROWENDF(q5kx2row)

// Q6KX2Q is Q6KX4Q for tokens 0 and 1.
#define Q6KX2Q(aoff, k) \
	VPSHUFB    q6kshuf<>+(32*k)(SB), Y6, Y8; \
	VPMADDUBSW aoff(DI), Y7, Y14; \
	VPMADDWD   Y8, Y14, Y14; \
	VPADDD     Y14, Y0, Y0; \
	VPMADDUBSW aoff(DI)(R9*1), Y7, Y14; \
	VPMADDWD   Y8, Y14, Y14; \
	VPADDD     Y14, Y1, Y1


// func qdotQ6_Kx2SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
TEXT ·qdotQ6_Kx2SIMD(SB), NOSPLIT, $128-72
	X4SETUP
	BCAST32($0x30303030, Y13, X13)

q6kx2row:
	X4ROWSTART
	X4ZF

	PCALIGN $64

q6kx2loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	VPMOVSXBW 192(SI), Y5
	VPXOR     Y12, Y12, Y12
	VPSUBW    Y5, Y12, Y12
	VPMADDWD  (BX), Y12, Y0
	VPMADDWD  (BX)(DX*1), Y12, Y1
	VPSLLD    $5, Y0, Y0
	VPSLLD    $5, Y1, Y1
	VPERMQ    $0x44, Y5, Y6
	Q6KHALF(0, 128, 0, Q6KX2Q)
	VPERMQ    $0xEE, Y5, Y6
	Q6KHALF(64, 160, 128, Q6KX2Q)
	VPBROADCASTW 208(SI), X12
	VCVTPH2PS    X12, Y12
	Q6TOKEND(Y0, 0(CX), 0)
	Q6TOKEND(Y1, 4(CX), 32)

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, BX
	ADDQ $32, CX
	DECQ AX
	JNZ  q6kx2loop

	X2ROWENDF(q6kx2row)

// Q8X4TOK: the block's weights (Y4, |w| in Y5, f16 scale as floats in Y6)
// against one token's 32 activations at aoff with scale at doff, into
// the float accumulator F (the signs of w moved onto the activations, as
// in Q80BLK).
#define Q8X4TOK(aoff, doff, F) Q0X4TOK(aoff, doff, F, Y4, Y5, Y6, Y7, Y8, Y15)

// Q0X4TOK is Q8X4TOK with its registers named: the block's signed weights
// W, their magnitudes AW, its dw broadcast in DW, temporaries T and S,
// 0x0001 words in ONES.
#define Q0X4TOK(aoff, doff, F, W, AW, DW, T, S, ONES) \
	VMOVDQU      aoff, T; \
	VPSIGNB      W, T, T; \
	VPMADDUBSW   T, AW, T; \
	VPMADDWD     ONES, T, T; \
	VCVTDQ2PS    T, T; \
	VBROADCASTSS doff, S; \
	VMULPS       S, DW, S; \
	VFMADD231PS  S, T, F

// Q8X4BLK runs the Q8_0 block at off(SI) (activations at aoff(DI),
// scales at doff(CX)) for the four tokens.
#define Q8X4BLK(off, aoff, doff) \
	VMOVDQU      off+2(SI), Y4; \
	VPABSB       Y4, Y5; \
	VPBROADCASTW off(SI), X6; \
	VCVTPH2PS    X6, Y6; \
	Q8X4TOK(aoff(DI), doff(CX), Y0); \
	Q8X4TOK(aoff(DI)(R9*1), doff(CX)(DX*1), Y1); \
	Q8X4TOK(aoff(DI)(R12*1), doff(CX)(R14*1), Y2); \
	Q8X4TOK(aoff(DI)(R13*1), doff(CX)(R11*1), Y3)

// func qdotQ8_0x4SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
// Q8_0 weights against four tokens of Q8_0 activations: dxv is token 0's
// block scales and offs.bs the byte offsets of the other tokens' (bs is
// unused). Every block needs its own float step per token, so the tokens
// keep float accumulators Y0-Y3, folded (VHADDPS) at the end of the row.
TEXT ·qdotQ8_0x4SIMD(SB), NOSPLIT, $0-72
	X4SETUP
	BCAST32($0x00010001, Y15, X15)

q80x4row:
	X4ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SUBQ   $2, AX
	JL     q80x4tail

	PCALIGN $64

q80x4loop2:
	PREFETCHT0 2048(SI)
	Q8X4BLK(0, 0, 0)
	Q8X4BLK(34, 32, 4)
	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $8, CX
	SUBQ $2, AX
	JGE  q80x4loop2

q80x4tail:
	ADDQ $2, AX
	JZ   q80x4sum
	Q8X4BLK(0, 0, 0)

q80x4sum:
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	X4ROWEND(Y0, X0, q80x4row)

#define Q8X2BLK(off, aoff, doff) \
	VMOVDQU      off+2(SI), Y4; \
	VPABSB       Y4, Y5; \
	VPBROADCASTW off(SI), X6; \
	VCVTPH2PS    X6, Y6; \
	Q8X4TOK(aoff(DI), doff(CX), Y0); \
	Q8X4TOK(aoff(DI)(R9*1), doff(CX)(DX*1), Y1)

// func qdotQ8_0x2SIMD(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
// qdotQ8_0x4SIMD for two tokens (tokens 2 and 3 of offs repeat token 1).
TEXT ·qdotQ8_0x2SIMD(SB), NOSPLIT, $0-72
	X4SETUP
	BCAST32($0x00010001, Y15, X15)

q80x2row:
	X4ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	SUBQ   $2, AX
	JL     q80x2tail

	PCALIGN $64

q80x2loop2:
	PREFETCHT0 2048(SI)
	Q8X2BLK(0, 0, 0)
	Q8X2BLK(34, 32, 4)
	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $8, CX
	SUBQ $2, AX
	JGE  q80x2loop2

q80x2tail:
	ADDQ $2, AX
	JZ   q80x2sum
	Q8X2BLK(0, 0, 0)

q80x2sum:
	VMOVAPS Y1, Y2
	VMOVAPS Y1, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	X4ROWEND(Y0, X0, q80x2row)

// ---------------------------------------------------------------- Q8_0 multi-token, AVX-512 VNNI

// The VNNI variants of qdotQ8_0x4SIMD/x2 compute the same int32 lane sums
// (lane l of a block = Σ of products 4l..4l+3, exact) with one VPDPBUSD
// per token instead of VPSIGNB, VPMADDUBSW and VPMADDWD. VPDPBUSD takes
// unsigned × signed bytes, so the activations are biased: a+128 (a XOR
// 0x80) times w sums to Σ a·w + 128·Σ w; the block's 128·Σ w (per lane,
// one VPDPBUSD of 0x80 bytes by w) is subtracted first by starting each
// token's sum at −128·Σ w. No intermediate saturates (VPDPBUSD sums into
// int32). The tokens' scale products dw·da come from one 4-lane VMULPS
// of dw by the block's four da (dxv, (nb, 4), see qx4ScalesQ8), stored
// and broadcast per token — the same float products. So the int32 lanes
// and the float steps (VCVTDQ2PS, dw·da, VFMADD231PS into the token's
// accumulator, the same fold) are those of qdotQ8_0SIMD bit for bit
// (TestDotQRowsX4). Y13 = 0x80 bytes; Y12 = −128·Σ w of the block; Y4 = w.

// Q8VBLK sets Y12 and stores the four products dw·da at 0(SP) for the
// block at off(SI) with scales at doff(CX).
#define Q8VBLK(off, doff) \
	VMOVDQU      off+2(SI), Y4; \
	VPXOR        Y12, Y12, Y12; \
	VPDPBUSD     Y4, Y13, Y12; \
	VPXOR        Y5, Y5, Y5; \
	VPSUBD       Y12, Y5, Y12; \
	VPBROADCASTW off(SI), X6; \
	VCVTPH2PS    X6, X6; \
	VMULPS       doff(CX), X6, X6

// Q8VTOK: token t's activations at aoff, scale product at 4t(SP), into F.
#define Q8VTOK(aoff, t, F, T) \
	VPXOR        aoff, Y13, Y7; \
	VMOVDQA      Y12, Y9; \
	VPDPBUSD     Y4, Y7, Y9; \
	VCVTDQ2PS    Y9, Y9; \
	VPERMPS      Y6, t, T; \
	VFMADD231PS  T, Y9, F

#define Q8VX4BLK(off, aoff, doff) \
	Q8VBLK(off, doff); \
	Q8VTOK(aoff(DI), Y16, Y0, Y8); \
	Q8VTOK(aoff(DI)(R9*1), Y17, Y1, Y10); \
	Q8VTOK(aoff(DI)(R12*1), Y18, Y2, Y11); \
	Q8VTOK(aoff(DI)(R13*1), Y19, Y3, Y14)

#define Q8VX2BLK(off, aoff, doff) \
	Q8VBLK(off, doff); \
	Q8VTOK(aoff(DI), Y16, Y0, Y8); \
	Q8VTOK(aoff(DI)(R9*1), Y17, Y1, Y10)

// func qdotQ8_0x4VNNI(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
// qdotQ8_0x4SIMD with VPDPBUSD (AVX512_VNNI, AVX512VL); dxv (nb, 4) holds
// the four tokens' block scales (offs.bs is unused).
TEXT ·qdotQ8_0x4VNNI(SB), NOSPLIT, $16-72
	X4SETUP
	BCAST32($0x80808080, Y13, X13)
	BCAST32($0, Y16, X16)
	BCAST32($1, Y17, X17)
	BCAST32($2, Y18, X18)
	BCAST32($3, Y19, X19)

q80vx4row:
	X4ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SUBQ   $2, AX
	JL     q80vx4tail

	PCALIGN $64

q80vx4loop2:
	PREFETCHT0 2048(SI)
	Q8VX4BLK(0, 0, 0)
	Q8VX4BLK(34, 32, 16)
	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $32, CX
	SUBQ $2, AX
	JGE  q80vx4loop2

q80vx4tail:
	ADDQ $2, AX
	JZ   q80vx4sum
	Q8VX4BLK(0, 0, 0)

q80vx4sum:
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	X4ROWEND(Y0, X0, q80vx4row)

// func qdotQ8_0x2VNNI(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dxv *float32, nb int, offs *qx4Offs)
// qdotQ8_0x4VNNI for two tokens (tokens 2 and 3 of offs repeat token 1).
TEXT ·qdotQ8_0x2VNNI(SB), NOSPLIT, $16-72
	X4SETUP
	BCAST32($0x80808080, Y13, X13)
	BCAST32($0, Y16, X16)
	BCAST32($1, Y17, X17)
	BCAST32($2, Y18, X18)
	BCAST32($3, Y19, X19)

q80vx2row:
	X4ROWSTART
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	SUBQ   $2, AX
	JL     q80vx2tail

	PCALIGN $64

q80vx2loop2:
	PREFETCHT0 2048(SI)
	Q8VX2BLK(0, 0, 0)
	Q8VX2BLK(34, 32, 16)
	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $32, CX
	SUBQ $2, AX
	JGE  q80vx2loop2

q80vx2tail:
	ADDQ $2, AX
	JZ   q80vx2sum
	Q8VX2BLK(0, 0, 0)

q80vx2sum:
	VMOVAPS Y1, Y2
	VMOVAPS Y1, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	X4ROWEND(Y0, X0, q80vx2row)

// ---------------------------------------------------------------- Q8_0 eight tokens, AVX-512 VNNI (zmm)

// func qdotQ8_0x8Z(dst *float32, rows int, w *byte, stride uintptr, p *byte, dx *float32, nb int, ldd uintptr)
// Q8_0 weights against eight consecutive tokens, two per 512-bit register
// (lanes 0-7 token 2k, lanes 8-15 token 2k+1; see dotQRowsX8): per row
// and block, the block's 32 weights are loaded once into both halves of
// Z4 and multiplied by the four token pairs' biased activations (p, the
// packed buffer of qx8Pack: per block 4 × 64 bytes, a XOR 0x80) with one
// VPDPBUSD each, from −128·Σw (Z12, as in the ymm VNNI kernels). dx
// (nb, 8) holds the eight tokens' block scales; one 16-lane VMULPS forms
// dw·da of all eight (twice) and a VPERMPS spreads token 2k's and 2k+1's
// products over their halves. Per (row, token) the int32 lanes, the
// product dw·da, VCVTDQ2PS, the VFMADD231PS into the token's 8-lane
// accumulator in block order and the final fold are those of qdotQ8_0SIMD,
// so the results are its bits (TestDotQRowsX8). dst[t·ldd/4 + i] receives
// token t, row i (ldd in bytes).
// Registers: Z0-Z3 accumulators of pairs 0-3; Z4 weights; Z5 scales; Z6
// products; Z12 −128·Σw; Z13 0x80 bytes; Z16-Z19 VPERMPS indices of pairs
// 0-3; Z20-Z31 per-pair temporaries.

// Q8ZPAIR: pair k's activations at aoff(DI), permutation index I, into
// accumulator F (temporaries A, T, S).
#define Q8ZPAIR(aoff, I, F, A, T, S) \
	VMOVDQU64   aoff(DI), A; \
	VMOVDQA64   Z12, T; \
	VPDPBUSD    Z4, A, T; \
	VCVTDQ2PS   T, T; \
	VPERMPS     Z6, I, S; \
	VFMADD231PS S, T, F

// Q8ZBLK runs the block at off(SI) (packed activations at aoff(DI), scales
// at doff(CX)) for the eight tokens.
#define Q8ZBLK(off, aoff, doff) \
	VBROADCASTI64X4 off+2(SI), Z4; \
	VPXORD          Z12, Z12, Z12; \
	VPDPBUSD        Z4, Z13, Z12; \
	VPSUBD          Z12, Z14, Z12; \
	VPBROADCASTW    off(SI), Y6; \
	VCVTPH2PS       Y6, Z6; \
	VBROADCASTF64X4 doff(CX), Z5; \
	VMULPS          Z5, Z6, Z6; \
	Q8ZPAIR(aoff, Z16, Z0, Z20, Z24, Z28); \
	Q8ZPAIR(aoff+64, Z17, Z1, Z21, Z25, Z29); \
	Q8ZPAIR(aoff+128, Z18, Z2, Z22, Z26, Z30); \
	Q8ZPAIR(aoff+192, Z19, Z3, Z23, Z27, Z31)

DATA q8zidx<>+0(SB)/8, $0x0000000000000000
DATA q8zidx<>+8(SB)/8, $0x0000000000000000
DATA q8zidx<>+16(SB)/8, $0x0000000000000000
DATA q8zidx<>+24(SB)/8, $0x0000000000000000
DATA q8zidx<>+32(SB)/8, $0x0000000100000001
DATA q8zidx<>+40(SB)/8, $0x0000000100000001
DATA q8zidx<>+48(SB)/8, $0x0000000100000001
DATA q8zidx<>+56(SB)/8, $0x0000000100000001
GLOBL q8zidx<>(SB), RODATA|NOPTR, $64

TEXT ·qdotQ8_0x8Z(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	MOVQ ldd+56(FP), R11
	LEAQ (R11)(R11*2), R12 // 3·ldd
	LEAQ (R8)(R11*4), R9   // tokens 4-7
	BCAST32($0x80808080, Z13, X13)
	VPXORD  Z14, Z14, Z14

	// Indices: pair k takes products 2k (lanes 0-7) and 2k+1 (lanes 8-15).
	VMOVDQU64 q8zidx<>(SB), Z16
	BCAST32($2, Z15, X15)
	VPADDD    Z15, Z16, Z17
	VPADDD    Z15, Z17, Z18
	VPADDD    Z15, Z18, Z19

q80zrow:
	MOVQ   R10, SI
	MOVQ   p+32(FP), DI
	MOVQ   dx+40(FP), CX
	MOVQ   nb+48(FP), AX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	SUBQ   $2, AX
	JL     q80ztail

	PCALIGN $64

q80zloop2:
	PREFETCHT0 2048(SI)
	Q8ZBLK(0, 0, 0)
	Q8ZBLK(34, 256, 32)
	ADDQ $68, SI
	ADDQ $512, DI
	ADDQ $64, CX
	SUBQ $2, AX
	JGE  q80zloop2

q80ztail:
	ADDQ $2, AX
	JZ   q80zsum
	Q8ZBLK(0, 0, 0)

q80zsum:
	Q8ZFOLD(Z0, Y0, X0, Z1, Y1)
	Q8ZFOLD(Z2, Y2, X2, Z3, Y3)
	VMOVSS     X0, (R8)
	VEXTRACTPS $1, X0, (R8)(R11*1)
	VEXTRACTPS $2, X0, (R8)(R11*2)
	VEXTRACTPS $3, X0, (R8)(R12*1)
	VMOVSS     X2, (R9)
	VEXTRACTPS $1, X2, (R9)(R11*1)
	VEXTRACTPS $2, X2, (R9)(R11*2)
	VEXTRACTPS $3, X2, (R9)(R12*1)
	ADDQ       $4, R8
	ADDQ       $4, R9
	ADDQ       stride+24(FP), R10
	DECQ       rows+8(FP)
	JNZ        q80zrow
	VZEROUPPER
	RET
