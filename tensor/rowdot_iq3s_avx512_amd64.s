// IQ3_S on 512-bit registers without gathers: the grid lookup as word
// permutes (rowdot_iq3s_avx512_amd64.go explains the table iq3sNib and why).
//
// S3PLOOK turns the 32 groups of four sub-blocks (128 weights, 32 qs
// bytes, 32 qh bits) into their 128 magnitudes in element order:
//
//  1. the 9-bit indices as words: VPMOVZXBW of the qs bytes, plus 0x100
//     under the qh bits (KMOVD: bit w of the four qh bytes is group w);
//  2. VPERMW reorders the words (s3pperm) so that step 5's in-lane byte
//     unpacks come out in element order;
//  3. eight VPERMT2W look the low six index bits up in the eight 64-word
//     pieces of iq3sNib (piece t: entries 64t..64t+63, two zmm each);
//  4. a tree of seven VPBLENDMW keeps piece t = bits 6, 7, 8 of the index
//     (masks from VPTESTMW);
//  5. the words hold four magnitudes as nibbles: low and high nibbles of
//     each byte split (VPSRLW, VPANDD) and interleaved (VPUNPCKLBW,
//     VPUNPCKHBW): 64 bytes for the first two sub-blocks, 64 for the next
//     two.
//
// After step 2, word 8L+i of the index register (L the 128-bit lane,
// i < 8) is group 4L+i for i < 4 and group 16+4L+i−4 above: the low unpack
// of lane L then reads words 8L..8L+3 (groups 4L..4L+3, elements
// 16L..16L+15) and the high unpack words 8L+4..8L+7 (elements 64+16L…).
//
// The integer sums are exact, so the lanes and the float step are
// the ymm kernel's (qdotIQ3_SSIMD) and the reference's bit for bit (TestIQRowDotsBitwise,
// TestIQ3SZx8, TestIQ3SPermLookup).

#include "textflag.h"
#include "rowdot_amd64.h"

// The index word order of step 2 (VPERMW indices).
DATA s3pperm<>+0(SB)/8, $0x0003000200010000
DATA s3pperm<>+8(SB)/8, $0x0013001200110010
DATA s3pperm<>+16(SB)/8, $0x0007000600050004
DATA s3pperm<>+24(SB)/8, $0x0017001600150014
DATA s3pperm<>+32(SB)/8, $0x000b000a00090008
DATA s3pperm<>+40(SB)/8, $0x001b001a00190018
DATA s3pperm<>+48(SB)/8, $0x000f000e000d000c
DATA s3pperm<>+56(SB)/8, $0x001f001e001d001c
GLOBL s3pperm<>(SB), RODATA|NOPTR, $64

// Scales: VPSHUFB indices making word w (< 8) of each 128-bit lane the
// scales byte w/2 (high byte zero), and the shift counts 4·(w%2) that
// leave sub-block w's nibble in the low bits.
DATA s3pdup<>+0(SB)/8, $0x8001800180008000
DATA s3pdup<>+8(SB)/8, $0x8003800380028002
GLOBL s3pdup<>(SB), RODATA|NOPTR, $16
DATA s3psh<>+0(SB)/8, $0x0004000000040000
DATA s3psh<>+8(SB)/8, $0x0004000000040000
GLOBL s3psh<>(SB), RODATA|NOPTR, $16

// VPSHUFB masks, one 64-byte entry per pair k: scale word 2k in the low
// 256 bits, word 2k+1 in the high 256 bits.
#define S3PSHUF(k, lo, hi) \
	DATA s3pshuf<>+(64*k)(SB)/8, $lo; \
	DATA s3pshuf<>+(64*k+8)(SB)/8, $lo; \
	DATA s3pshuf<>+(64*k+16)(SB)/8, $lo; \
	DATA s3pshuf<>+(64*k+24)(SB)/8, $lo; \
	DATA s3pshuf<>+(64*k+32)(SB)/8, $hi; \
	DATA s3pshuf<>+(64*k+40)(SB)/8, $hi; \
	DATA s3pshuf<>+(64*k+48)(SB)/8, $hi; \
	DATA s3pshuf<>+(64*k+56)(SB)/8, $hi

S3PSHUF(0, 0x0100010001000100, 0x0302030203020302)
S3PSHUF(1, 0x0504050405040504, 0x0706070607060706)
S3PSHUF(2, 0x0908090809080908, 0x0b0a0b0a0b0a0b0a)
S3PSHUF(3, 0x0d0c0d0c0d0c0d0c, 0x0f0e0f0e0f0e0f0e)
GLOBL s3pshuf<>(SB), RODATA|NOPTR, $256

// S3PCONST loads the constants both kernels keep in registers: Z16 the
// word order, Z17 = 0x100, Z18 = 0x40, Z19 = 0x80 (words), Z20 = 0x0f
// (bytes), Z21, Z22 the scale shuffle and shifts, Z13 = 0x0f, Z14 = 1
// (words), Z12 = 0; BX = iq3sNib. AX clobbered.
#define S3PCONST \
	VMOVDQU64       s3pperm<>(SB), Z16; \
	BCAST32($0x01000100, Z17, X17); \
	BCAST32($0x00400040, Z18, X18); \
	BCAST32($0x00800080, Z19, X19); \
	BCAST32($0x0f0f0f0f, Z20, X20); \
	VBROADCASTI32X4 s3pdup<>(SB), Z21; \
	VBROADCASTI32X4 s3psh<>(SB), Z22; \
	BCAST32($0x000f000f, Z13, X13); \
	BCAST32($0x00010001, Z14, X14); \
	VPXORD          Z12, Z12, Z12; \
	LEAQ            ·iq3sNib(SB), BX

// S3PPIECE looks the index words Z24 up in piece t of iq3sNib into V.
#define S3PPIECE(t, V) \
	VMOVDQU64 (128*t)(BX), V; \
	VPERMT2W  (128*t+64)(BX), Z24, V

// S3PLOOK sets O0, O1 to the magnitudes of sub-blocks 4h..4h+3 of the
// super-block at SI (qs at 2+32h, qh at 66+4h), element order; Z24-Z28,
// K4, K6, K7 clobbered.
#define S3PLOOK(h, O0, O1) \
	VPMOVZXBW  (2+32*h)(SI), Z24; \
	KMOVD      (66+4*h)(SI), K4; \
	VPADDW     Z17, Z24, K4, Z24; \
	VPERMW     Z24, Z16, Z24; \
	VPTESTMW   Z18, Z24, K4; \
	VPTESTMW   Z19, Z24, K6; \
	VPTESTMW   Z17, Z24, K7; \
	S3PPIECE(0, Z25); \
	S3PPIECE(1, Z26); \
	VPBLENDMW  Z26, Z25, K4, Z25; \
	S3PPIECE(2, Z26); \
	S3PPIECE(3, Z27); \
	VPBLENDMW  Z27, Z26, K4, Z26; \
	VPBLENDMW  Z26, Z25, K6, Z25; \
	S3PPIECE(4, Z26); \
	S3PPIECE(5, Z27); \
	VPBLENDMW  Z27, Z26, K4, Z26; \
	S3PPIECE(6, Z27); \
	S3PPIECE(7, Z28); \
	VPBLENDMW  Z28, Z27, K4, Z27; \
	VPBLENDMW  Z27, Z26, K6, Z26; \
	VPBLENDMW  Z26, Z25, K7, Z25; \
	VPSRLW     $4, Z25, Z26; \
	VPANDD     Z20, Z25, Z25; \
	VPANDD     Z20, Z26, Z26; \
	VPUNPCKLBW Z26, Z25, O0; \
	VPUNPCKHBW Z26, Z25, O1

// S3PSCALES sets Z29's words w < 8 (every 128-bit lane) to the odd scale
// 1+2s of sub-block w; pair k's scale words are then VPSHUFB
// s3pshuf<>+64k of Z29.
#define S3PSCALES \
	VPBROADCASTD 106(SI), Z29; \
	VPSHUFB      Z21, Z29, Z29; \
	VPSRLVW      Z22, Z29, Z29; \
	VPANDD       Z13, Z29, Z29; \
	VPSLLW       $1, Z29, Z29; \
	VPORD        Z14, Z29, Z29

// S3PDOT adds pair k (magnitudes V, activations at 64k(DI)) into the
// int32 lanes Z1; Z2, Z3, K1 clobbered.
#define S3PDOT(k, V) \
	KMOVQ      (74+8*k)(SI), K1; \
	VMOVDQU64  (64*k)(DI), Z3; \
	VPSUBB     Z3, Z12, K1, Z3; \
	VPMADDUBSW Z3, V, Z3; \
	VPSHUFB    s3pshuf<>+(64*k)(SB), Z29, Z2; \
	VPDPWSSD   Z2, Z3, Z1

// func qdotIQ3_SZP(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// The row dot (aux unused): per super-block two S3PLOOKs, four S3PDOTs,
// lanes j and j+8 added, then the ymm kernel's float step.
TEXT ·qdotIQ3_SZP(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	S3PCONST

s3prow:
	MOVQ   R10, SI
	MOVQ   q+32(FP), DI
	MOVQ   d+40(FP), DX
	MOVQ   nb+56(FP), CX
	VXORPS Y0, Y0, Y0

	PCALIGN $64

s3ploop:
	PREFETCHT0    2048(SI)
	PREFETCHT0    2112(SI)
	VPXORD        Z1, Z1, Z1
	S3PSCALES
	S3PLOOK(0, Z4, Z5)
	S3PLOOK(1, Z6, Z7)
	S3PDOT(0, Z4)
	S3PDOT(1, Z5)
	S3PDOT(2, Z6)
	S3PDOT(3, Z7)
	VEXTRACTI64X4 $1, Z1, Y2
	VPADDD        Y2, Y1, Y2
	VPBROADCASTW  0(SI), X4
	VCVTPH2PS     X4, Y4
	VBROADCASTSS  (DX), Y5
	VMULPS        Y5, Y4, Y4
	VCVTDQ2PS     Y2, Y2
	VMULPS        Y4, Y2, Y2
	VADDPS        Y2, Y0, Y0
	ADDQ          $110, SI
	ADDQ          $256, DI
	ADDQ          $4, DX
	DECQ          CX
	JNZ           s3ploop

	FOLD8(Y0, X0)
	ROWEND(s3prow)

// S3PX8TOK adds pair values V (sign mask K, scale words S) times the
// token's activations at off A into ACC (Z26, Z27 clobbered).
#define S3PX8TOK(off, A, V, K, S, ACC) \
	VMOVDQU64  off A, Z26; \
	VPSUBB     Z26, Z12, K, Z26; \
	VPMADDUBSW Z26, V, Z27; \
	VPDPWSSD   S, Z27, ACC

// S3PX8PAIR runs the super-block for tokens A and B (activation
// addresses) with their scales at doff(DX) into the float accumulator F:
// each token's lanes j and j+8 added, the pair's two 8-lane sums in one
// zmm (lanes 0-7, 8-15) for the float step.
#define S3PX8PAIR(A, B, doff, F) \
	VPXORD     Z24, Z24, Z24; \
	VPXORD     Z25, Z25, Z25; \
	S3PX8TOK(0, A, Z4, K1, Z8, Z24); \
	S3PX8TOK(0, B, Z4, K1, Z8, Z25); \
	S3PX8TOK(64, A, Z5, K2, Z9, Z24); \
	S3PX8TOK(64, B, Z5, K2, Z9, Z25); \
	S3PX8TOK(128, A, Z6, K3, Z10, Z24); \
	S3PX8TOK(128, B, Z6, K3, Z10, Z25); \
	S3PX8TOK(192, A, Z7, K5, Z11, Z24); \
	S3PX8TOK(192, B, Z7, K5, Z11, Z25); \
	VSHUFI64X2 $0x44, Z25, Z24, Z30; \
	VSHUFI64X2 $0xEE, Z25, Z24, Z31; \
	VPADDD     Z31, Z30, Z30; \
	VMULPS     doff(DX), Z23, Z31; \
	VCVTDQ2PS  Z30, Z30; \
	VMULPS     Z31, Z30, Z30; \
	VADDPS     Z30, F, F

// func qdotIQ3_Sx8ZP(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
// IQ3_S weights against eight consecutive tokens, as qdotIQ4_XSx8Z runs IQ4_XS (see
// dotQRowsKX8; bs unused): per row and super-block the magnitudes (Z4-Z7,
// two S3PLOOKs), sign masks (K1, K2, K3, K5) and scale words (Z8-Z11) are
// unpacked once, then S3PX8PAIR runs each token pair.
TEXT ·qdotIQ3_Sx8ZP(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	MOVQ n+64(FP), R11
	LEAQ (R11)(R11*2), R12
	S3PCONST

s3px8row:
	MOVQ   R10, SI
	MOVQ   q+32(FP), DI
	LEAQ   (DI)(R11*4), R9
	MOVQ   dz+48(FP), DX
	MOVQ   nb+56(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	PCALIGN $64

s3px8loop:
	PREFETCHT0   2048(SI)
	PREFETCHT0   2112(SI)
	S3PLOOK(0, Z4, Z5)
	S3PLOOK(1, Z6, Z7)
	KMOVQ        74(SI), K1
	KMOVQ        82(SI), K2
	KMOVQ        90(SI), K3
	KMOVQ        98(SI), K5
	S3PSCALES
	VPSHUFB      s3pshuf<>+0(SB), Z29, Z8
	VPSHUFB      s3pshuf<>+64(SB), Z29, Z9
	VPSHUFB      s3pshuf<>+128(SB), Z29, Z10
	VPSHUFB      s3pshuf<>+192(SB), Z29, Z11
	VPBROADCASTW 0(SI), Y23
	VCVTPH2PS    Y23, Z23
	S3PX8PAIR((DI), (DI)(R11*1), 0, Z0)
	S3PX8PAIR((DI)(R11*2), (DI)(R12*1), 64, Z1)
	S3PX8PAIR((R9), (R9)(R11*1), 128, Z2)
	S3PX8PAIR((R9)(R11*2), (R9)(R12*1), 192, Z3)
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $256, DX
	DECQ CX
	JNZ  s3px8loop

	X8STORE(s3px8row)

// ---------------------------------------------------------------- VBMI

// With AVX-512 VBMI (hasIQ3V) the lookup runs on bytes: VPERMT2B looks 64
// indices up at once in a 128-byte table, so a super-block's 64 groups
// take four permutes and three blends for the low bytes of their
// iq3sNib words (iq3sNibB[0:512]) and as many for the high bytes
// (iq3sNibB[512:]), the table picked by index bits 7 (the qs byte's top
// bit, VPMOVB2M) and 8 (the qh bit). S3VLOOK first puts the 64 index bytes
// and qh bits in the order π (s3vperm, VPERMB; the qh mask via
// VPMOVM2B/VPMOVB2M): byte p = 16L+4k+i holds group 16k+4L+i, so that
// interleaving low and high bytes into words (VPUNPCKLBW/HBW) and then
// the words' nibbles (as in S3PLOOK) yields the four 64-byte registers of
// magnitudes in element order.

DATA s3vperm<>+0(SB)/8, $0x1312111003020100
DATA s3vperm<>+8(SB)/8, $0x3332313023222120
DATA s3vperm<>+16(SB)/8, $0x1716151407060504
DATA s3vperm<>+24(SB)/8, $0x3736353427262524
DATA s3vperm<>+32(SB)/8, $0x1b1a19180b0a0908
DATA s3vperm<>+40(SB)/8, $0x3b3a39382b2a2928
DATA s3vperm<>+48(SB)/8, $0x1f1e1d1c0f0e0d0c
DATA s3vperm<>+56(SB)/8, $0x3f3e3d3c2f2e2d2c
GLOBL s3vperm<>(SB), RODATA|NOPTR, $64

// S3VCONST: S3PCONST's scale constants, Z15 = π, BX = iq3sNibB.
#define S3VCONST \
	VMOVDQU64       s3vperm<>(SB), Z15; \
	BCAST32($0x0f0f0f0f, Z20, X20); \
	VBROADCASTI32X4 s3pdup<>(SB), Z21; \
	VBROADCASTI32X4 s3psh<>(SB), Z22; \
	BCAST32($0x000f000f, Z13, X13); \
	BCAST32($0x00010001, Z14, X14); \
	VPXORD          Z12, Z12, Z12; \
	LEAQ            ·iq3sNibB(SB), BX

// S3VBYTE looks the π-ordered index bytes Z24 up in the byte table at
// off(BX) (four 128-byte pieces by index bits 7, 8: masks K6, K7) into V;
// T1, T2 clobbered.
#define S3VBYTE(off, V, T1, T2) \
	VMOVDQU64 (off)(BX), V; \
	VPERMT2B  (off+64)(BX), Z24, V; \
	VMOVDQU64 (off+128)(BX), T1; \
	VPERMT2B  (off+192)(BX), Z24, T1; \
	VPBLENDMB T1, V, K6, V; \
	VMOVDQU64 (off+256)(BX), T1; \
	VPERMT2B  (off+320)(BX), Z24, T1; \
	VMOVDQU64 (off+384)(BX), T2; \
	VPERMT2B  (off+448)(BX), Z24, T2; \
	VPBLENDMB T2, T1, K6, T1; \
	VPBLENDMB T1, V, K7, V

// S3VNIB splits the nibble words W into magnitudes in element order: O0
// from the low four words of each 128-bit lane, O1 from the high four; T
// clobbered.
#define S3VNIB(W, T, O0, O1) \
	VPSRLW     $4, W, T; \
	VPANDD     Z20, W, W; \
	VPANDD     Z20, T, T; \
	VPUNPCKLBW T, W, O0; \
	VPUNPCKHBW T, W, O1

// S3VLOOK sets Z4-Z7 to the 256 magnitudes of the super-block at SI;
// Z24-Z28, K4, K6, K7 clobbered.
#define S3VLOOK \
	VMOVDQU64  2(SI), Z24; \
	VPERMB     Z24, Z15, Z24; \
	KMOVQ      66(SI), K4; \
	VPMOVM2B   K4, Z25; \
	VPERMB     Z25, Z15, Z25; \
	VPMOVB2M   Z25, K7; \
	VPMOVB2M   Z24, K6; \
	S3VBYTE(0, Z25, Z26, Z27); \
	S3VBYTE(512, Z26, Z27, Z28); \
	VPUNPCKLBW Z26, Z25, Z27; \
	VPUNPCKHBW Z26, Z25, Z28; \
	S3VNIB(Z27, Z24, Z4, Z5); \
	S3VNIB(Z28, Z25, Z6, Z7)

// func qdotIQ3_SZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// qdotIQ3_SZP with S3VLOOK.
TEXT ·qdotIQ3_SZV(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	S3VCONST

s3vrow:
	MOVQ   R10, SI
	MOVQ   q+32(FP), DI
	MOVQ   d+40(FP), DX
	MOVQ   nb+56(FP), CX
	VXORPS Y0, Y0, Y0

	PCALIGN $64

s3vloop:
	PREFETCHT0    2048(SI)
	PREFETCHT0    2112(SI)
	VPXORD        Z1, Z1, Z1
	S3PSCALES
	S3VLOOK
	S3PDOT(0, Z4)
	S3PDOT(1, Z5)
	S3PDOT(2, Z6)
	S3PDOT(3, Z7)
	VEXTRACTI64X4 $1, Z1, Y2
	VPADDD        Y2, Y1, Y2
	VPBROADCASTW  0(SI), X4
	VCVTPH2PS     X4, Y4
	VBROADCASTSS  (DX), Y5
	VMULPS        Y5, Y4, Y4
	VCVTDQ2PS     Y2, Y2
	VMULPS        Y4, Y2, Y2
	VADDPS        Y2, Y0, Y0
	ADDQ          $110, SI
	ADDQ          $256, DI
	ADDQ          $4, DX
	DECQ          CX
	JNZ           s3vloop

	FOLD8(Y0, X0)
	ROWEND(s3vrow)

// func qdotIQ3_Sx8ZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
// qdotIQ3_Sx8ZP with S3VLOOK.
TEXT ·qdotIQ3_Sx8ZV(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	MOVQ n+64(FP), R11
	LEAQ (R11)(R11*2), R12
	S3VCONST

s3vx8row:
	MOVQ   R10, SI
	MOVQ   q+32(FP), DI
	LEAQ   (DI)(R11*4), R9
	MOVQ   dz+48(FP), DX
	MOVQ   nb+56(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	PCALIGN $64

s3vx8loop:
	PREFETCHT0   2048(SI)
	PREFETCHT0   2112(SI)
	S3VLOOK
	KMOVQ        74(SI), K1
	KMOVQ        82(SI), K2
	KMOVQ        90(SI), K3
	KMOVQ        98(SI), K5
	S3PSCALES
	VPSHUFB      s3pshuf<>+0(SB), Z29, Z8
	VPSHUFB      s3pshuf<>+64(SB), Z29, Z9
	VPSHUFB      s3pshuf<>+128(SB), Z29, Z10
	VPSHUFB      s3pshuf<>+192(SB), Z29, Z11
	VPBROADCASTW 0(SI), Y23
	VCVTPH2PS    Y23, Z23
	S3PX8PAIR((DI), (DI)(R11*1), 0, Z0)
	S3PX8PAIR((DI)(R11*2), (DI)(R12*1), 64, Z1)
	S3PX8PAIR((R9), (R9)(R11*1), 128, Z2)
	S3PX8PAIR((R9)(R11*2), (R9)(R12*1), 192, Z3)
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $256, DX
	DECQ CX
	JNZ  s3vx8loop

	X8STORE(s3vx8row)
