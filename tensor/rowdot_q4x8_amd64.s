#include "textflag.h"
#include "rowdot_amd64.h"

// The Q4_0 kernels over rows packed eight at a time (rowdot_q4x8.go). One
// packed block of a group is 144 bytes: the eight rows' fp16 scales, then
// four 32-byte chunks; chunk c holds, as dword r, bytes 4c..4c+3 of row r's
// nibbles. Its low nibbles are elements 4c..4c+3 of the eight rows, its
// high nibbles elements 16+4c..16+4c+3: one VPMADDUBSW against the token's
// four activations broadcast to every dword gives row r's four products,
// pairwise summed, in dword r. Eight of them (the block's 32 elements)
// summed as words, VPMADDWD by ones and the bias −8·Σq added give the
// eight rows' exact block sums Σ (nib−8)·q in the lanes; then, per row
// (lane), dotQ4_0's float steps: p = fl(fl(dw·da)·s), acc = fl(acc + p).
//
// Word sums cannot overflow: a pair of products is at most 2·15·127 =
// 3810, eight pairs 30480.

// Q4X8C: 0x0F bytes (the nibble mask) and 0x0001 words (VPMADDWD's ones).
DATA q4x8c<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4x8c<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4x8c<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4x8c<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA q4x8c<>+32(SB)/8, $0x0001000100010001
DATA q4x8c<>+40(SB)/8, $0x0001000100010001
DATA q4x8c<>+48(SB)/8, $0x0001000100010001
DATA q4x8c<>+56(SB)/8, $0x0001000100010001
GLOBL q4x8c<>(SB), RODATA|NOPTR, $64

// X4START zeroes the four-token kernels' accumulators and points DI, CX
// at the activations and blocks of a group (defined before any TEXT, for
// go vet).
// PREFETCH5 prefetches the weight stream 2 KB ahead, every line of a
// 272-byte block. Q8_0's four-token kernel takes it too: 8-15% faster
// (5632x2048, 4 and 8 tokens, 1 and 2 threads, interleaved x2, Zen 3).
// The other four-token kernels (Q4_0, Q5_0, IQ4_NL measured) stayed
// within noise with PREFETCH3: their 4-bit unpacking, not the stream,
// sets their pace, so they keep none.
#define PREFETCH5 \
	PREFETCHT0 2048(SI); \
	PREFETCHT0 2112(SI); \
	PREFETCHT0 2176(SI); \
	PREFETCHT0 2240(SI); \
	PREFETCHT0 2304(SI)

#define X4START \
	MOVQ   xs+24(FP), DI; \
	MOVQ   nb+32(FP), CX; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	VXORPS Y12, Y12, Y12; \
	VXORPS Y13, Y13, Y13

// XSETUP loads the arguments every packed kernel starts with: dst (R8),
// groups (R9), w (SI).
#define XSETUP \
	MOVQ dst+0(FP), R8; \
	MOVQ groups+8(FP), R9; \
	MOVQ w+16(FP), SI

// T1GROUP starts a group of the one-token kernels: DI, DX, BX at the
// token's activations, scales and aux (bias or Q8_1 sums), CX the block
// count, the accumulator Y0 zeroed.
#define T1GROUP \
	MOVQ   q+24(FP), DI; \
	MOVQ   d+32(FP), DX; \
	MOVQ   aux+40(FP), BX; \
	MOVQ   nb+48(FP), CX; \
	VXORPS Y0, Y0, Y0

// PREFETCH3 prefetches the weight stream 2 KB ahead, every line of it
// (three per block of at most 192 bytes).
#define PREFETCH3 \
	PREFETCHT0 2048(SI); \
	PREFETCHT0 2112(SI); \
	PREFETCHT0 2176(SI)

// T1NEXT moves a one-token kernel to its next block (bb packed bytes),
// looping to label while blocks are left.
#define T1NEXT(bb, label) \
	ADDQ $bb, SI; \
	ADDQ $32, DI; \
	ADDQ $4, DX; \
	ADDQ $4, BX; \
	DECQ CX; \
	JNZ  label

// T1END stores a group's eight results and loops to label while groups
// are left; then returns.
#define T1END(label) \
	VMOVUPS Y0, (R8); \
	ADDQ    $32, R8; \
	DECQ    R9; \
	JNZ     label; \
	VZEROUPPER; \
	RET

// X4STORE stores the four tokens' accumulators Y10-Y13 of the group at
// R8 + offs[t] (offs at R10) and moves R8 to the next group, jumping to
// label while groups are left (R9).
#define X4STORE(label) \
	MOVQ    0(R10), AX; \
	VMOVUPS Y10, (R8)(AX*1); \
	MOVQ    8(R10), AX; \
	VMOVUPS Y11, (R8)(AX*1); \
	MOVQ    16(R10), AX; \
	VMOVUPS Y12, (R8)(AX*1); \
	MOVQ    24(R10), AX; \
	VMOVUPS Y13, (R8)(AX*1); \
	ADDQ    $32, R8; \
	DECQ    R9; \
	JNZ     label

// T4NEXT moves a four-token kernel to its next block (bb packed bytes),
// looping to label while blocks are left; T4END stores the group and
// loops to label while groups are left, then returns.
#define T4NEXT(bb, label) \
	ADDQ $bb, SI; \
	ADDQ $160, DI; \
	DECQ CX; \
	JNZ  label

#define T4END(label) \
	X4STORE(label); \
	VZEROUPPER; \
	RET

// UNPACK8(off) loads the four chunks at off(SI) into Y1-Y4 (low nibbles)
// and Y5-Y8 (high).
#define UNPACK8(off) \
	VMOVDQU off(SI), Y1; \
	VMOVDQU off+32(SI), Y2; \
	VMOVDQU off+64(SI), Y3; \
	VMOVDQU off+96(SI), Y4; \
	VPSRLW  $4, Y1, Y5; \
	VPSRLW  $4, Y2, Y6; \
	VPSRLW  $4, Y3, Y7; \
	VPSRLW  $4, Y4, Y8; \
	VPAND   q4x8c<>+0(SB), Y1, Y1; \
	VPAND   q4x8c<>+0(SB), Y2, Y2; \
	VPAND   q4x8c<>+0(SB), Y3, Y3; \
	VPAND   q4x8c<>+0(SB), Y4, Y4; \
	VPAND   q4x8c<>+0(SB), Y5, Y5; \
	VPAND   q4x8c<>+0(SB), Y6, Y6; \
	VPAND   q4x8c<>+0(SB), Y7, Y7; \
	VPAND   q4x8c<>+0(SB), Y8, Y8

// CHUNK2 loads the chunk at off(SI) as its low nibbles (Y1) and high
// nibbles (Y2). Y15 = 0x0F bytes.
#define CHUNK2(off) \
	VMOVDQU off(SI), Y1; \
	VPSRLW  $4, Y1, Y2; \
	VPAND   Y15, Y1, Y1; \
	VPAND   Y15, Y2, Y2

// Q4X8CHUNK1 adds chunk off(SI)'s products with the activations at aoff
// (low nibbles) and aoff+16 (high) of DI into the word sums S.
#define Q4X8CHUNK1(off, aoff, S) \
	CHUNK2(off); \
	VPBROADCASTD aoff(DI), Y3; \
	VPMADDUBSW   Y3, Y1, Y1; \
	VPBROADCASTD aoff+16(DI), Y3; \
	VPMADDUBSW   Y3, Y2, Y2; \
	VPADDW       Y1, S, S; \
	VPADDW       Y2, S, S

// Q4X8STEP is one row's float steps in every lane: S (word sums) to the
// exact int32 block sums with the bias at nsoff, converted, times
// T = fl(dw·da), added to ACC.
#define Q4X8STEP(S, T, nsaddr, ACC) \
	VPMADDWD     q4x8c<>+32(SB), S, S; \
	VPBROADCASTD nsaddr, Y3; \
	VPADDD       Y3, S, S; \
	VCVTDQ2PS    S, S; \
	VMULPS       T, S, S; \
	VADDPS       S, ACC, ACC

// func qdotQ4_0x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)
//
// One token: dst[8g+r] = row 8g+r's dot for g < groups, the packed groups
// at w (nb blocks each, one after another).
TEXT ·qdotQ4_0x8T1(SB), NOSPLIT, $0-56
	XSETUP
	VMOVDQU q4x8c<>+0(SB), Y15

q4x8t1group:
	T1GROUP

q4x8t1block:
	PREFETCH3
	VCVTPH2PS    (SI), Y9
	VBROADCASTSS (DX), Y10
	VMULPS       Y10, Y9, Y9
	VPXOR        Y4, Y4, Y4
	Q4X8CHUNK1(16, 0, Y4)
	Q4X8CHUNK1(48, 4, Y4)
	Q4X8CHUNK1(80, 8, Y4)
	Q4X8CHUNK1(112, 12, Y4)
	Q4X8STEP(Y4, Y9, (BX), Y0)
	T1NEXT(144, q4x8t1block)

	T1END(q4x8t1group)

// WPROD and WADD are one word step of the packed kernels' integer sums:
// the token's four activations at aoff(DI), broadcast (Y14), times the
// unpacked register R by VPMADDUBSW, into (WPROD) or added to (WADD, as
// words) S; WSUM4 is four of them over the registers a, b, c, e (elements
// aoff.. of the block in fours). Y14 clobbered.
#define WPROD(aoff, R, S) \
	VPBROADCASTD aoff(DI), Y14; \
	VPMADDUBSW   Y14, R, S

#define WADD(aoff, R, S) \
	VPBROADCASTD aoff(DI), Y14; \
	VPMADDUBSW   Y14, R, Y14; \
	VPADDW       Y14, S, S

#define WSUM4(aoff, a, b, c, e, S) \
	WPROD(aoff, a, S); \
	WADD(aoff+4, b, S); \
	WADD(aoff+8, c, S); \
	WADD(aoff+12, e, S)

// Q4X8ISUM sums one token's products with the unpacked Y1-Y8 (elements
// 0-3, 4-7, …, 28-31 of the eight rows): its 32 activations at toff(DI),
// word sums (at most 30480, the values being nibbles) to dwords in Y15.
// Y14 clobbered.
#define Q4X8ISUM(toff) \
	WSUM4(toff, Y1, Y2, Y3, Y4, Y15); \
	WADD(toff+16, Y5, Y15); \
	WADD(toff+20, Y6, Y15); \
	WADD(toff+24, Y7, Y15); \
	WADD(toff+28, Y8, Y15); \
	VPMADDWD q4x8c<>+32(SB), Y15, Y15

// X4TOKEND finishes one token of a four-token kernel: its int32 sums in
// Y15 plus its bias at doff+16(DI), converted, times fl(dw·da) (dw in
// Y9, da at doff(DI)), added to ACC. Y14 clobbered.
#define X4TOKEND(doff, ACC) \
	VPBROADCASTD doff+16(DI), Y14; \
	VPADDD       Y14, Y15, Y15; \
	VCVTDQ2PS    Y15, Y15; \
	VBROADCASTSS doff(DI), Y14; \
	VMULPS       Y9, Y14, Y14; \
	VMULPS       Y14, Y15, Y15; \
	VADDPS       Y15, ACC, ACC

// Q4X8TOK is one token's block against the unpacked Y1-Y8 and the
// scales Y9: the token's 32 activations at toff(DI), its da at doff(DI),
// its bias at doff+16(DI). Y14, Y15 are clobbered.
#define Q4X8TOK(toff, doff, ACC) \
	Q4X8ISUM(toff); \
	X4TOKEND(doff, ACC)

// func qdotQ4_0x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)
//
// Four tokens: their activations interleaved per block in xs (q4x8Acts:
// 4·32 values, 4 da, 4 biases = 160 bytes), token t's result for row 8g+r
// at dst + offs[t] + 4(8g+r).
TEXT ·qdotQ4_0x8T4(SB), NOSPLIT, $0-48
	XSETUP
	MOVQ offs+40(FP), R10

q4x8t4group:
	X4START

q4x8t4block:
	UNPACK8(16)
	VCVTPH2PS (SI), Y9
	Q4X8TOK(0, 128, Y10)
	Q4X8TOK(32, 132, Y11)
	Q4X8TOK(64, 136, Y12)
	Q4X8TOK(96, 140, Y13)
	T4NEXT(144, q4x8t4block)

	T4END(q4x8t4group)

// ---------------------------------------------------------------- IQ4_NL, MXFP4

// The same packed groups for the table formats, whose canonical
// arithmetic is Q4_0's (one float per row, acc = fl(acc + fl(fl(dw·da)·P))
// block after block, rowdot_iq_ref.go): IQ4_NL keeps its fp16 dw, MXFP4
// its E8M0 scale halved as a bf16 (exact: a power of two). A nibble's code
// picks its level by VPSHUFB.

// nl8lv: the IQ4_NL levels (kIQ4NL) in both 128-bit lanes, for VPSHUFB.
DATA nl8lv<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA nl8lv<>+8(SB)/8, $0x7159453526190d01
DATA nl8lv<>+16(SB)/8, $0xf6eaddcfbfad9881
DATA nl8lv<>+24(SB)/8, $0x7159453526190d01
GLOBL nl8lv<>(SB), RODATA|NOPTR, $32

// nl8abs: their magnitudes.
DATA nl8abs<>+0(SB)/8, $0x0a1623314153687f
DATA nl8abs<>+8(SB)/8, $0x7159453526190d01
DATA nl8abs<>+16(SB)/8, $0x0a1623314153687f
DATA nl8abs<>+24(SB)/8, $0x7159453526190d01
GLOBL nl8abs<>(SB), RODATA|NOPTR, $32

// fp8lv: the MXFP4 levels (kFP4) plus 12, unsigned 0..24.
DATA fp8lv<>+0(SB)/8, $0x181412100f0e0d0c
DATA fp8lv<>+8(SB)/8, $0x00040608090a0b0c
DATA fp8lv<>+16(SB)/8, $0x181412100f0e0d0c
DATA fp8lv<>+24(SB)/8, $0x00040608090a0b0c
GLOBL fp8lv<>(SB), RODATA|NOPTR, $32

// SIGNDOT adds one token's products with eight rows' signed bytes to the
// int32 sums ACC: the token's four activations at aoff(DI) broadcast (Y3)
// and given the signs of SIGNS (VPSIGNB), against the magnitudes MAG
// (VPMADDUBSW into T), pairs summed to dwords by ONES (0x0001 words).
// A pair of products is at most 2·128·127 in magnitude: no saturation.
#define SIGNDOT(aoff, SIGNS, MAG, T, ONES, ACC) \
	VPBROADCASTD aoff(DI), Y3; \
	VPSIGNB      SIGNS, Y3, Y3; \
	VPMADDUBSW   Y3, MAG, T; \
	VPMADDWD     ONES, T, T; \
	VPADDD       T, ACC, ACC

// NL8CHUNK adds chunk off(SI)'s products with the activations at aoff
// (low nibbles) and aoff+16 (high) of DI into the int32 sums Y4: IQ4_NL
// levels moved to the activations as signs (VPSIGNB), their magnitudes
// the unsigned operand (a pair of products is at most 2·127·127, so each
// VPMADDUBSW goes to dwords at once). Y15 = 0x0F bytes, Y14 = 0x0001
// words, Y13 the levels, Y12 their magnitudes.
#define NL8CHUNK(off, aoff) \
	CHUNK2(off); \
	VPSHUFB      Y1, Y13, Y5; \
	VPSHUFB      Y1, Y12, Y1; \
	VPSHUFB      Y2, Y13, Y6; \
	VPSHUFB      Y2, Y12, Y2; \
	SIGNDOT(aoff, Y5, Y1, Y1, Y14, Y4); \
	SIGNDOT(aoff+16, Y6, Y2, Y2, Y14, Y4)

// func qdotIQ4_NLx8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)
//
// qdotQ4_0x8T1 for packed IQ4_NL (aux unused: no bias).
TEXT ·qdotIQ4_NLx8T1(SB), NOSPLIT, $0-56
	XSETUP
	VMOVDQU q4x8c<>+0(SB), Y15
	VMOVDQU q4x8c<>+32(SB), Y14
	VMOVDQU nl8lv<>(SB), Y13
	VMOVDQU nl8abs<>(SB), Y12

nl8t1group:
	T1GROUP

nl8t1block:
	PREFETCH3
	VCVTPH2PS    (SI), Y9
	VBROADCASTSS (DX), Y10
	VMULPS       Y10, Y9, Y9
	VPXOR        Y4, Y4, Y4
	NL8CHUNK(16, 0)
	NL8CHUNK(48, 4)
	NL8CHUNK(80, 8)
	NL8CHUNK(112, 12)
	VCVTDQ2PS    Y4, Y4
	VMULPS       Y9, Y4, Y4
	VADDPS       Y4, Y0, Y0
	T1NEXT(144, nl8t1block)

	T1END(nl8t1group)

// FP8CHUNK adds chunk off(SI)'s products with the activations at aoff
// (low nibbles, into the word sums Y4) and aoff+16 (high, Y6): MXFP4
// levels plus 12 (0..24) as the unsigned operand, so four chunks' pairs
// stay within a word (4·2·24·127 = 24384). Y13 = the biased levels.
#define FP8CHUNK(off, aoff) \
	CHUNK2(off); \
	VPSHUFB      Y1, Y13, Y1; \
	VPSHUFB      Y2, Y13, Y2; \
	VPBROADCASTD aoff(DI), Y3; \
	VPMADDUBSW   Y3, Y1, Y1; \
	VPADDW       Y1, Y4, Y4; \
	VPBROADCASTD aoff+16(DI), Y3; \
	VPMADDUBSW   Y3, Y2, Y2; \
	VPADDW       Y2, Y6, Y6

// func qdotMXFP4x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)
//
// qdotQ4_0x8T1 for packed MXFP4: the bf16 scales widened by a shift, the
// bias aux = −12·Σq.
TEXT ·qdotMXFP4x8T1(SB), NOSPLIT, $0-56
	XSETUP
	VMOVDQU q4x8c<>+0(SB), Y15
	VMOVDQU q4x8c<>+32(SB), Y14
	VMOVDQU fp8lv<>(SB), Y13

fp8t1group:
	T1GROUP

fp8t1block:
	PREFETCH3
	VPMOVZXWD    (SI), Y9
	VPSLLD       $16, Y9, Y9
	VBROADCASTSS (DX), Y10
	VMULPS       Y10, Y9, Y9
	VPXOR        Y4, Y4, Y4
	VPXOR        Y6, Y6, Y6
	FP8CHUNK(16, 0)
	FP8CHUNK(48, 4)
	FP8CHUNK(80, 8)
	FP8CHUNK(112, 12)
	VPMADDWD     Y14, Y4, Y4
	VPMADDWD     Y14, Y6, Y6
	VPADDD       Y6, Y4, Y4
	VPBROADCASTD (BX), Y3
	VPADDD       Y3, Y4, Y4
	VCVTDQ2PS    Y4, Y4
	VMULPS       Y9, Y4, Y4
	VADDPS       Y4, Y0, Y0
	T1NEXT(144, fp8t1block)

	T1END(fp8t1group)

// func q4x8DepackY(out *byte, rb uintptr, pk *byte, groups int, nb int, bb uintptr)
//
// q4x8Rows's nibbles (and, for 18-byte blocks, fp16 scales) for whole
// groups: group g's block b goes to rows 8g..8g+7 of out (rb bytes each),
// at b·bb; its four chunks transposed as 8 × 4 dwords (row i's 16 bytes =
// dword i of chunks 0-3).
TEXT ·q4x8DepackY(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ rb+8(FP), R8
	MOVQ pk+16(FP), SI
	MOVQ groups+24(FP), R9
	MOVQ bb+40(FP), R10
	LEAQ (R8)(R8*2), R11 // 3·rb

q4x8dpgroup:
	LEAQ -16(DI)(R10*1), BX // row 0's nibbles of block 0
	LEAQ (BX)(R8*4), R13    // row 4's
	MOVQ nb+32(FP), CX

q4x8dpblock:
	VMOVDQU      16(SI), Y0
	VMOVDQU      48(SI), Y1
	VMOVDQU      80(SI), Y2
	VMOVDQU      112(SI), Y3
	VPUNPCKLDQ   Y1, Y0, Y4
	VPUNPCKHDQ   Y1, Y0, Y5
	VPUNPCKLDQ   Y3, Y2, Y6
	VPUNPCKHDQ   Y3, Y2, Y7
	VPUNPCKLQDQ  Y6, Y4, Y0
	VPUNPCKHQDQ  Y6, Y4, Y1
	VPUNPCKLQDQ  Y7, Y5, Y2
	VPUNPCKHQDQ  Y7, Y5, Y3
	VMOVDQU      X0, (BX)
	VEXTRACTI128 $1, Y0, (R13)
	VMOVDQU      X1, (BX)(R8*1)
	VEXTRACTI128 $1, Y1, (R13)(R8*1)
	VMOVDQU      X2, (BX)(R8*2)
	VEXTRACTI128 $1, Y2, (R13)(R8*2)
	VMOVDQU      X3, (BX)(R11*1)
	VEXTRACTI128 $1, Y3, (R13)(R11*1)
	CMPQ         R10, $18
	JNE          q4x8dpnext
	MOVW         0(SI), AX
	MOVW         AX, -2(BX)
	MOVW         2(SI), AX
	MOVW         AX, -2(BX)(R8*1)
	MOVW         4(SI), AX
	MOVW         AX, -2(BX)(R8*2)
	MOVW         6(SI), AX
	MOVW         AX, -2(BX)(R11*1)
	MOVW         8(SI), AX
	MOVW         AX, -2(R13)
	MOVW         10(SI), AX
	MOVW         AX, -2(R13)(R8*1)
	MOVW         12(SI), AX
	MOVW         AX, -2(R13)(R8*2)
	MOVW         14(SI), AX
	MOVW         AX, -2(R13)(R11*1)

q4x8dpnext:
	ADDQ $144, SI
	ADDQ R10, BX
	ADDQ R10, R13
	DECQ CX
	JNZ  q4x8dpblock

	LEAQ (DI)(R8*8), DI
	DECQ R9
	JNZ  q4x8dpgroup
	VZEROUPPER
	RET

// ---------------------------------------------------------------- Q5_0

// Packed Q5_0 (rowdot_q4x8.go): a group-block is 176 bytes, the eight
// fp16 scales, the eight rows' qh (dword r = row r's), then the four
// nibble chunks. Element 4c+k's fifth bit is bit 4c+k of qh (byte c/2,
// bit 4(c%2)+k), element 16+4c+k's bit 16+4c+k (byte 2+c/2): Q5HB
// broadcasts that byte of each row's qh to the row's four bytes
// (VPSHUFB), keeps bit k of byte k and turns it into 0x10. Values
// nib | hbit<<4 are 0..31; the bias −16·Σq makes them nib|hbit<<4 − 16.
// Word sums hold four chunks' pairs (4·2·31·127 = 31496), so a block's
// low-nibble and high-nibble halves each take their own VPMADDWD.

// q5x8c: VPSHUFB patterns picking byte 0, 1, 2, 3 of each dword into all
// four of its bytes (+0, +32, +64, +96); bit k of byte k, low nibble
// (+128) and high nibble (+160); 0x10 bytes (+192).
DATA q5x8c<>+0(SB)/8, $0x0404040400000000
DATA q5x8c<>+8(SB)/8, $0x0c0c0c0c08080808
DATA q5x8c<>+16(SB)/8, $0x0404040400000000
DATA q5x8c<>+24(SB)/8, $0x0c0c0c0c08080808
DATA q5x8c<>+32(SB)/8, $0x0505050501010101
DATA q5x8c<>+40(SB)/8, $0x0d0d0d0d09090909
DATA q5x8c<>+48(SB)/8, $0x0505050501010101
DATA q5x8c<>+56(SB)/8, $0x0d0d0d0d09090909
DATA q5x8c<>+64(SB)/8, $0x0606060602020202
DATA q5x8c<>+72(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA q5x8c<>+80(SB)/8, $0x0606060602020202
DATA q5x8c<>+88(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA q5x8c<>+96(SB)/8, $0x0707070703030303
DATA q5x8c<>+104(SB)/8, $0x0f0f0f0f0b0b0b0b
DATA q5x8c<>+112(SB)/8, $0x0707070703030303
DATA q5x8c<>+120(SB)/8, $0x0f0f0f0f0b0b0b0b
DATA q5x8c<>+128(SB)/8, $0x0804020108040201
DATA q5x8c<>+136(SB)/8, $0x0804020108040201
DATA q5x8c<>+144(SB)/8, $0x0804020108040201
DATA q5x8c<>+152(SB)/8, $0x0804020108040201
DATA q5x8c<>+160(SB)/8, $0x8040201080402010
DATA q5x8c<>+168(SB)/8, $0x8040201080402010
DATA q5x8c<>+176(SB)/8, $0x8040201080402010
DATA q5x8c<>+184(SB)/8, $0x8040201080402010
DATA q5x8c<>+192(SB)/8, $0x1010101010101010
DATA q5x8c<>+200(SB)/8, $0x1010101010101010
DATA q5x8c<>+208(SB)/8, $0x1010101010101010
DATA q5x8c<>+216(SB)/8, $0x1010101010101010
GLOBL q5x8c<>(SB), RODATA|NOPTR, $224

// Q5HB ORs the fifth bits of one nibble register into dst: qh the rows'
// qh dwords, pat the byte pattern, bsel the nibble's bit selector; tmp
// clobbered.
#define Q5HB(qh, pat, bsel, dst, tmp) \
	VPSHUFB  pat, qh, tmp; \
	VPAND    bsel, tmp, tmp; \
	VPCMPEQB bsel, tmp, tmp; \
	VPAND    q5x8c<>+192(SB), tmp, tmp; \
	VPOR     tmp, dst, dst

// Q5X8CHUNK1 adds chunk off(SI)'s products with the activations at aoff
// (low nibbles, into the word sums Y4) and aoff+16 (high, Y6), the fifth
// bits from Y8 (bytes plo/phi, selector bsel).
#define Q5X8CHUNK1(off, aoff, plo, phi, bsel) \
	CHUNK2(off); \
	Q5HB(Y8, plo, bsel, Y1, Y3); \
	Q5HB(Y8, phi, bsel, Y2, Y3); \
	VPBROADCASTD aoff(DI), Y3; \
	VPMADDUBSW   Y3, Y1, Y1; \
	VPADDW       Y1, Y4, Y4; \
	VPBROADCASTD aoff+16(DI), Y3; \
	VPMADDUBSW   Y3, Y2, Y2; \
	VPADDW       Y2, Y6, Y6

// func qdotQ5_0x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)
//
// qdotQ4_0x8T1 for packed Q5_0 (aux = −16·Σq).
TEXT ·qdotQ5_0x8T1(SB), NOSPLIT, $0-56
	XSETUP
	VMOVDQU q4x8c<>+0(SB), Y15
	VMOVDQU q4x8c<>+32(SB), Y14

q5x8t1group:
	T1GROUP

q5x8t1block:
	PREFETCH3
	VCVTPH2PS    (SI), Y9
	VBROADCASTSS (DX), Y10
	VMULPS       Y10, Y9, Y9
	VMOVDQU      16(SI), Y8
	VPXOR        Y4, Y4, Y4
	VPXOR        Y6, Y6, Y6
	Q5X8CHUNK1(48, 0, q5x8c<>+0(SB), q5x8c<>+64(SB), q5x8c<>+128(SB))
	Q5X8CHUNK1(80, 4, q5x8c<>+0(SB), q5x8c<>+64(SB), q5x8c<>+160(SB))
	Q5X8CHUNK1(112, 8, q5x8c<>+32(SB), q5x8c<>+96(SB), q5x8c<>+128(SB))
	Q5X8CHUNK1(144, 12, q5x8c<>+32(SB), q5x8c<>+96(SB), q5x8c<>+160(SB))
	VPMADDWD     Y14, Y4, Y4
	VPMADDWD     Y14, Y6, Y6
	VPADDD       Y6, Y4, Y4
	VPBROADCASTD (BX), Y3
	VPADDD       Y3, Y4, Y4
	VCVTDQ2PS    Y4, Y4
	VMULPS       Y9, Y4, Y4
	VADDPS       Y4, Y0, Y0
	T1NEXT(176, q5x8t1block)

	T1END(q5x8t1group)

// Q5X8HALF sums one token's products of four unpacked registers (a, b,
// c, e: elements aoff.. of the block in fours) as words into S, then to
// dwords. Y14 clobbered.
#define Q5X8HALF(aoff, a, b, c, e, S) \
	WSUM4(aoff, a, b, c, e, S); \
	VPMADDWD q4x8c<>+32(SB), S, S

// Q5X8ISUM is Q4X8ISUM for five-bit values: the block's halves summed
// apart (Y15, Y0), then added (dwords in Y15).
#define Q5X8ISUM(toff) \
	Q5X8HALF(toff, Y1, Y2, Y3, Y4, Y15); \
	Q5X8HALF(toff+16, Y5, Y6, Y7, Y8, Y0); \
	VPADDD Y0, Y15, Y15

// UNPACK5 is UNPACK8 for the chunks at off(SI) with the fifth bits of
// the rows' qh at qhoff(SI) ORed in (Y9, Y0 clobbered).
#define UNPACK5(qhoff, off) \
	VMOVDQU qhoff(SI), Y9; \
	UNPACK8(off); \
	Q5HB(Y9, q5x8c<>+0(SB), q5x8c<>+128(SB), Y1, Y0); \
	Q5HB(Y9, q5x8c<>+0(SB), q5x8c<>+160(SB), Y2, Y0); \
	Q5HB(Y9, q5x8c<>+32(SB), q5x8c<>+128(SB), Y3, Y0); \
	Q5HB(Y9, q5x8c<>+32(SB), q5x8c<>+160(SB), Y4, Y0); \
	Q5HB(Y9, q5x8c<>+64(SB), q5x8c<>+128(SB), Y5, Y0); \
	Q5HB(Y9, q5x8c<>+64(SB), q5x8c<>+160(SB), Y6, Y0); \
	Q5HB(Y9, q5x8c<>+96(SB), q5x8c<>+128(SB), Y7, Y0); \
	Q5HB(Y9, q5x8c<>+96(SB), q5x8c<>+160(SB), Y8, Y0)

// Q5X8TOK is Q4X8TOK for Q5_0.
#define Q5X8TOK(toff, doff, ACC) \
	Q5X8ISUM(toff); \
	X4TOKEND(doff, ACC)

// func qdotQ5_0x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)
//
// qdotQ4_0x8T4 for packed Q5_0 (xs's biases −16·Σq).
TEXT ·qdotQ5_0x8T4(SB), NOSPLIT, $0-48
	XSETUP
	MOVQ offs+40(FP), R10

q5x8t4group:
	X4START

q5x8t4block:
	UNPACK5(16, 48)
	VCVTPH2PS (SI), Y9
	Q5X8TOK(0, 128, Y10)
	Q5X8TOK(32, 132, Y11)
	Q5X8TOK(64, 136, Y12)
	Q5X8TOK(96, 140, Y13)
	T4NEXT(176, q5x8t4block)

	T4END(q5x8t4group)

// ---------------------------------------------------------------- Q4_1, Q5_1

// Packed Q4_1 (160 bytes a group-block: the eight dw, the eight mw, the
// chunks) and Q5_1 (192: dw, mw, the rows' qh, the chunks). Their values
// are unsigned (nibble, or nibble | fifth bit), so no bias; the reference
// dotQ4_1's float steps per lane: p = fl(fl(dw·da)·s), m = fl(mw·sa),
// acc = fl(acc + fl(p + m)), sa the token's Q8_1 block sum.

// X1STEP is those steps for the int32 sums S (clobbered) with T =
// fl(dw·da) and M = fl(mw·sa).
#define X1STEP(S, T, M, ACC) \
	VCVTDQ2PS S, S; \
	VMULPS    T, S, S; \
	VADDPS    M, S, S; \
	VADDPS    S, ACC, ACC

// X1SCALES sets Y9 = fl(dw·da) and Y11 = fl(mw·sa) for the block at SI
// (da at (DX), sa at (BX)); Y10 clobbered.
#define X1SCALES \
	VCVTPH2PS    (SI), Y9; \
	VBROADCASTSS (DX), Y10; \
	VMULPS       Y10, Y9, Y9; \
	VCVTPH2PS    16(SI), Y11; \
	VBROADCASTSS (BX), Y10; \
	VMULPS       Y10, Y11, Y11

// func qdotQ4_1x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *float32, nb int)
//
// One token against packed Q4_1 (aux: the token's Q8_1 block sums sa).
TEXT ·qdotQ4_1x8T1(SB), NOSPLIT, $0-56
	XSETUP
	VMOVDQU q4x8c<>+0(SB), Y15

q41x8t1group:
	T1GROUP

q41x8t1block:
	PREFETCH3
	X1SCALES
	VPXOR      Y4, Y4, Y4
	Q4X8CHUNK1(32, 0, Y4)
	Q4X8CHUNK1(64, 4, Y4)
	Q4X8CHUNK1(96, 8, Y4)
	Q4X8CHUNK1(128, 12, Y4)
	VPMADDWD   q4x8c<>+32(SB), Y4, Y4
	X1STEP(Y4, Y9, Y11, Y0)
	T1NEXT(160, q41x8t1block)

	T1END(q41x8t1group)

// func qdotQ5_1x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *float32, nb int)
//
// One token against packed Q5_1.
TEXT ·qdotQ5_1x8T1(SB), NOSPLIT, $0-56
	XSETUP
	VMOVDQU q4x8c<>+0(SB), Y15
	VMOVDQU q4x8c<>+32(SB), Y14

q51x8t1group:
	T1GROUP

q51x8t1block:
	PREFETCH3
	X1SCALES
	VMOVDQU    32(SI), Y8
	VPXOR      Y4, Y4, Y4
	VPXOR      Y6, Y6, Y6
	Q5X8CHUNK1(64, 0, q5x8c<>+0(SB), q5x8c<>+64(SB), q5x8c<>+128(SB))
	Q5X8CHUNK1(96, 4, q5x8c<>+0(SB), q5x8c<>+64(SB), q5x8c<>+160(SB))
	Q5X8CHUNK1(128, 8, q5x8c<>+32(SB), q5x8c<>+96(SB), q5x8c<>+128(SB))
	Q5X8CHUNK1(160, 12, q5x8c<>+32(SB), q5x8c<>+96(SB), q5x8c<>+160(SB))
	VPMADDWD   Y14, Y4, Y4
	VPMADDWD   Y14, Y6, Y6
	VPADDD     Y6, Y4, Y4
	X1STEP(Y4, Y9, Y11, Y0)
	T1NEXT(192, q51x8t1block)

	T1END(q51x8t1group)

// X1TOKEND finishes one token of a four-token Q4_1/Q5_1 kernel: its int32
// sums in Y15, its da at doff(DI), its sa at doff+16(DI), dw in Y9 and mw
// at 16(SI). Y0 and Y14 clobbered.
#define X1TOKEND(doff, ACC) \
	VCVTDQ2PS    Y15, Y15; \
	VBROADCASTSS doff(DI), Y14; \
	VMULPS       Y9, Y14, Y14; \
	VMULPS       Y14, Y15, Y15; \
	VCVTPH2PS    16(SI), Y14; \
	VBROADCASTSS doff+16(DI), Y0; \
	VMULPS       Y0, Y14, Y14; \
	VADDPS       Y14, Y15, Y15; \
	VADDPS       Y15, ACC, ACC

// func qdotQ4_1x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)
//
// Four tokens against packed Q4_1: xs as q4x8Acts lays it out with the
// tokens' sa in the biases' place.
TEXT ·qdotQ4_1x8T4(SB), NOSPLIT, $0-48
	XSETUP
	MOVQ offs+40(FP), R10

q41x8t4group:
	X4START

q41x8t4block:
	UNPACK8(32)
	VCVTPH2PS (SI), Y9
	Q4X8ISUM(0)
	X1TOKEND(128, Y10)
	Q4X8ISUM(32)
	X1TOKEND(132, Y11)
	Q4X8ISUM(64)
	X1TOKEND(136, Y12)
	Q4X8ISUM(96)
	X1TOKEND(140, Y13)
	T4NEXT(160, q41x8t4block)

	T4END(q41x8t4group)

// func qdotQ5_1x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)
//
// Four tokens against packed Q5_1 (xs as for Q4_1).
TEXT ·qdotQ5_1x8T4(SB), NOSPLIT, $0-48
	XSETUP
	MOVQ offs+40(FP), R10

q51x8t4group:
	X4START

q51x8t4block:
	UNPACK5(32, 64)
	VCVTPH2PS (SI), Y9
	Q5X8ISUM(0)
	X1TOKEND(128, Y10)
	Q5X8ISUM(32)
	X1TOKEND(132, Y11)
	Q5X8ISUM(64)
	X1TOKEND(136, Y12)
	Q5X8ISUM(96)
	X1TOKEND(140, Y13)
	T4NEXT(192, q51x8t4block)

	T4END(q51x8t4group)

// func qdotMXFP4x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)
//
// Four tokens against packed MXFP4 (xs's biases −12·Σq): levels plus 12
// by VPSHUFB once per block, each token's halves summed apart as Q5_0's
// (four chunks' pairs fit a word: 4·2·24·127).
TEXT ·qdotMXFP4x8T4(SB), NOSPLIT, $0-48
	XSETUP
	MOVQ offs+40(FP), R10

fp8t4group:
	X4START

fp8t4block:
	UNPACK8(16)
	VMOVDQU   fp8lv<>(SB), Y0
	VPSHUFB   Y1, Y0, Y1
	VPSHUFB   Y2, Y0, Y2
	VPSHUFB   Y3, Y0, Y3
	VPSHUFB   Y4, Y0, Y4
	VPSHUFB   Y5, Y0, Y5
	VPSHUFB   Y6, Y0, Y6
	VPSHUFB   Y7, Y0, Y7
	VPSHUFB   Y8, Y0, Y8
	VPMOVZXWD (SI), Y9
	VPSLLD    $16, Y9, Y9
	Q5X8ISUM(0)
	X4TOKEND(128, Y10)
	Q5X8ISUM(32)
	X4TOKEND(132, Y11)
	Q5X8ISUM(64)
	X4TOKEND(136, Y12)
	Q5X8ISUM(96)
	X4TOKEND(140, Y13)
	T4NEXT(144, fp8t4block)

	T4END(fp8t4group)

// ---------------------------------------------------------------- Q8_0

// Packed Q8_0 (q8x8Block, 272 bytes a group-block): the eight rows' fp16
// scales, then eight 32-byte chunks; chunk c, dword r = row r's signed
// bytes 4c..4c+3. VPMADDUBSW wants one unsigned operand: the weights'
// magnitudes (VPABSB), against the activations given the weights' signs
// (VPSIGNB; the activations are in [−127, 127], so no sign flip wraps).
// A pair of products is at most 2·128·127 = 32512 in magnitude, so each
// chunk goes to dwords at once (VPMADDWD by ones) and the eight chunks'
// dwords sum to the exact block sums Σ w·q of eight rows; then per lane
// dotQ8_0's float steps, p = fl(fl(dw·da)·s), acc = fl(acc + p).

// Q8X8CHUNK1 adds chunk off(SI)'s eight rows' products with the token's
// four activations at aoff(DI) to the int32 sums Y4. Y14 = 0x0001 words.
#define Q8X8CHUNK1(off, aoff) \
	VMOVDQU off(SI), Y1; \
	VPABSB  Y1, Y2; \
	SIGNDOT(aoff, Y1, Y2, Y2, Y14, Y4)

// func qdotQ8_0x8T1(dst *float32, groups int, w *byte, q *int8, d *float32, aux *int32, nb int)
//
// qdotQ4_0x8T1 for packed Q8_0 (aux unused: no bias).
TEXT ·qdotQ8_0x8T1(SB), NOSPLIT, $0-56
	XSETUP
	VMOVDQU q4x8c<>+32(SB), Y14

q8x8t1group:
	T1GROUP

q8x8t1block:
	PREFETCH5
	VCVTPH2PS    (SI), Y9
	VBROADCASTSS (DX), Y10
	VMULPS       Y10, Y9, Y9
	VPXOR        Y4, Y4, Y4
	Q8X8CHUNK1(16, 0)
	Q8X8CHUNK1(48, 4)
	Q8X8CHUNK1(80, 8)
	Q8X8CHUNK1(112, 12)
	Q8X8CHUNK1(144, 16)
	Q8X8CHUNK1(176, 20)
	Q8X8CHUNK1(208, 24)
	Q8X8CHUNK1(240, 28)
	VCVTDQ2PS    Y4, Y4
	VMULPS       Y9, Y4, Y4
	VADDPS       Y4, Y0, Y0
	T1NEXT(272, q8x8t1block)

	T1END(q8x8t1group)

// Q8X8TOKC adds one token's products with the chunk (Y1 the signed
// bytes, Y2 their magnitudes) to its int32 sums S: the token's four
// activations at toff(DI). Y3 clobbered, Y15 = 0x0001 words.
#define Q8X8TOKC(toff, S) \
	SIGNDOT(toff, Y1, Y2, Y3, Y15, S)

// Q8X8CHUNK4 is chunk off(SI) against the four tokens' activations, the
// chunk's element group at aoff(DI) of token 0 (token t's 32t further).
#define Q8X8CHUNK4(off, aoff) \
	VMOVDQU off(SI), Y1; \
	VPABSB  Y1, Y2; \
	Q8X8TOKC(aoff, Y4); \
	Q8X8TOKC(aoff+32, Y5); \
	Q8X8TOKC(aoff+64, Y6); \
	Q8X8TOKC(aoff+96, Y7)

// Q8X8TOKEND finishes one token's block: its int32 sums S converted,
// times fl(dw·da) (dw in Y9, da at doff(DI)), added to ACC. Y14 clobbered.
#define Q8X8TOKEND(S, doff, ACC) \
	VCVTDQ2PS    S, S; \
	VBROADCASTSS doff(DI), Y14; \
	VMULPS       Y9, Y14, Y14; \
	VMULPS       Y14, S, S; \
	VADDPS       S, ACC, ACC

// SGZERO4 zeroes the four tokens' int32 sums Y4-Y7 of the signed-level
// four-token kernels (Q8_0, IQ4_NL); SGTOKENDS ends their block: the
// rows' scales (Y9) and each token's float steps into Y10-Y13.
#define SGZERO4 \
	VPXOR Y4, Y4, Y4; \
	VPXOR Y5, Y5, Y5; \
	VPXOR Y6, Y6, Y6; \
	VPXOR Y7, Y7, Y7

#define SGTOKENDS \
	VCVTPH2PS (SI), Y9; \
	Q8X8TOKEND(Y4, 128, Y10); \
	Q8X8TOKEND(Y5, 132, Y11); \
	Q8X8TOKEND(Y6, 136, Y12); \
	Q8X8TOKEND(Y7, 140, Y13)

// func qdotQ8_0x8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)
//
// qdotQ4_0x8T4 for packed Q8_0 (the biases in xs unused).
TEXT ·qdotQ8_0x8T4(SB), NOSPLIT, $0-48
	XSETUP
	MOVQ    offs+40(FP), R10
	VMOVDQU q4x8c<>+32(SB), Y15

q8x8t4group:
	X4START

q8x8t4block:
	PREFETCH5
	SGZERO4
	Q8X8CHUNK4(16, 0)
	Q8X8CHUNK4(48, 4)
	Q8X8CHUNK4(80, 8)
	Q8X8CHUNK4(112, 12)
	Q8X8CHUNK4(144, 16)
	Q8X8CHUNK4(176, 20)
	Q8X8CHUNK4(208, 24)
	Q8X8CHUNK4(240, 28)
	SGTOKENDS
	T4NEXT(272, q8x8t4block)

	T4END(q8x8t4group)

// ---------------------------------------------------------------- IQ4_NL, four tokens

// NL8CHUNK4 is chunk off(SI) of packed IQ4_NL against four tokens: its
// nibbles' signed levels (VPSHUFB of the table Y8; low nibbles Y0, high
// Y1) and their magnitudes (Y2, Y14), then per token the products of the
// low nibbles with its activations at aoff(DI) and of the high with
// aoff+16 (token t's 32t further), added to its int32 sums Y4-Y7.
#define NL8CHUNK4(off, aoff) \
	VMOVDQU off(SI), Y0; \
	VPSRLW  $4, Y0, Y1; \
	VPAND   q4x8c<>+0(SB), Y0, Y0; \
	VPAND   q4x8c<>+0(SB), Y1, Y1; \
	VPSHUFB Y0, Y8, Y0; \
	VPSHUFB Y1, Y8, Y1; \
	VPABSB  Y0, Y2; \
	VPABSB  Y1, Y14; \
	SIGNDOT(aoff, Y0, Y2, Y3, Y15, Y4); \
	SIGNDOT(aoff+16, Y1, Y14, Y3, Y15, Y4); \
	SIGNDOT(aoff+32, Y0, Y2, Y3, Y15, Y5); \
	SIGNDOT(aoff+48, Y1, Y14, Y3, Y15, Y5); \
	SIGNDOT(aoff+64, Y0, Y2, Y3, Y15, Y6); \
	SIGNDOT(aoff+80, Y1, Y14, Y3, Y15, Y6); \
	SIGNDOT(aoff+96, Y0, Y2, Y3, Y15, Y7); \
	SIGNDOT(aoff+112, Y1, Y14, Y3, Y15, Y7)

// func qdotIQ4_NLx8T4(dst *float32, groups int, w *byte, xs *byte, nb int, offs *[4]uintptr)
//
// qdotQ4_0x8T4 for packed IQ4_NL: the levels' signs moved to the
// activations as in qdotQ8_0x8T4 (no bias), the reference dotIQ4_NL's
// float steps.
TEXT ·qdotIQ4_NLx8T4(SB), NOSPLIT, $0-48
	XSETUP
	MOVQ    offs+40(FP), R10
	VMOVDQU q4x8c<>+32(SB), Y15
	VMOVDQU nl8lv<>(SB), Y8

nl8t4group:
	X4START

nl8t4block:
	SGZERO4
	NL8CHUNK4(16, 0)
	NL8CHUNK4(48, 4)
	NL8CHUNK4(80, 8)
	NL8CHUNK4(112, 12)
	SGTOKENDS
	T4NEXT(144, nl8t4block)

	T4END(nl8t4group)
