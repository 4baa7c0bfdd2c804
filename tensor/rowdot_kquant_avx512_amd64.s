// AVX-512 single-token row dots of the K-quants: qdotQ4_KSIMD
// (rowdot_quant_amd64.s) with the super-block's integer sums on 512-bit
// registers, selected by hasKZ (rowdot_kquant_avx512_amd64.go; AVX-512F,
// BW and VNNI). Same arguments, same contract, same bits: the int32 lanes
// are exact, so computing them in another way changes nothing, and every
// float step (K4FINISH, FOLD8) is the ymm kernel's instruction for
// instruction. So batch invariance needs no new canonical order: the
// multi-token kernels (qdotQ4_Kx4SIMD), which reproduce the ymm kernel,
// reproduce this one (TestKQuantZBitwise, TestMatMulBatchInvariant).
//
// The ymm kernel's integer part, per super-block: lane l (l = 0..7) of
// Y5 = Σ_j sc_j · Σ_{e=4l..4l+3} q_j[e]·a_j[e] over the eight 32-element
// sub-blocks j (q the unsigned nibbles, a the int8 activations), from
// VPMADDUBSW (pairs into int16) and VPMADDWD by the scale words. Here one
// zmm holds 64 elements, sub-blocks 2g and 2g+1 of group g (g = 0..3),
// which are the low and high nibbles of the same 32 bytes: the bytes are
// broadcast to both 256-bit halves (VBROADCASTI64X4), the upper half
// shifted right by 4 (VPSRLW under the word mask K2) and both masked to
// 0x0f — then elements 64g..64g+63 lie in activation order, and one
// VPMADDUBSW against the activations' 64 bytes and one VPDPWSSD (VNNI:
// int16 pairs × scale words added into int32) by [sc_2g ×16 | sc_2g+1
// ×16] add lane l (sub-block 2g) and lane 8+l (sub-block 2g+1). After the
// four groups, lanes l and 8+l are added: the ymm kernel's Y5, exactly.
// Half the ymm kernel's integer instructions per super-block.

#include "textflag.h"
#include "rowdot_amd64.h"

// VPSHUFB masks, one 64-byte entry per group g: scale word 2g in the low
// 256 bits, word 2g+1 in the high 256 bits (the scales as words in every
// 128-bit lane of the source).
DATA k4zshuf<>+0(SB)/8, $0x0100010001000100
DATA k4zshuf<>+8(SB)/8, $0x0100010001000100
DATA k4zshuf<>+16(SB)/8, $0x0100010001000100
DATA k4zshuf<>+24(SB)/8, $0x0100010001000100
DATA k4zshuf<>+32(SB)/8, $0x0302030203020302
DATA k4zshuf<>+40(SB)/8, $0x0302030203020302
DATA k4zshuf<>+48(SB)/8, $0x0302030203020302
DATA k4zshuf<>+56(SB)/8, $0x0302030203020302
DATA k4zshuf<>+64(SB)/8, $0x0504050405040504
DATA k4zshuf<>+72(SB)/8, $0x0504050405040504
DATA k4zshuf<>+80(SB)/8, $0x0504050405040504
DATA k4zshuf<>+88(SB)/8, $0x0504050405040504
DATA k4zshuf<>+96(SB)/8, $0x0706070607060706
DATA k4zshuf<>+104(SB)/8, $0x0706070607060706
DATA k4zshuf<>+112(SB)/8, $0x0706070607060706
DATA k4zshuf<>+120(SB)/8, $0x0706070607060706
DATA k4zshuf<>+128(SB)/8, $0x0908090809080908
DATA k4zshuf<>+136(SB)/8, $0x0908090809080908
DATA k4zshuf<>+144(SB)/8, $0x0908090809080908
DATA k4zshuf<>+152(SB)/8, $0x0908090809080908
DATA k4zshuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zshuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zshuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zshuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k4zshuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zshuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zshuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zshuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k4zshuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zshuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zshuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k4zshuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k4zshuf<>(SB), RODATA|NOPTR, $256

// K4ZSETUP sets the constants: Z15 = 0x0f bytes, Y14 = ones (words), Y13
// = 0x3f, Y12 = 0x30 bytes (K4SCALES), K2 = the upper 16 words.
#define K4ZSETUP \
	BCAST32($0x0f0f0f0f, Z15, X15); \
	BCAST32($0x00010001, Y14, X14); \
	BCAST32($0x3f3f3f3f, Y13, X13); \
	BCAST32($0x30303030, Y12, X12); \
	MOVL  $0xffff0000, AX; \
	KMOVD AX, K2

// K4ZNIB loads group g's 64 values (32 bytes at off(SI): low nibbles then
// high nibbles) into V in element order.
#define K4ZNIB(off, V) \
	VBROADCASTI64X4 off(SI), V; \
	VPSRLW          $4, V, K2, V; \
	VPANDD          Z15, V, V

// K4ZDOT adds group g's scaled products (values in V, activations at
// aoff(DI), scale words of every 128-bit lane in Z10) into the int32
// accumulator ACC. T is clobbered.
#define K4ZDOT(g, aoff, V, T, ACC) \
	VPMADDUBSW aoff(DI), V, V; \
	VPSHUFB    k4zshuf<>+64*g(SB), Z10, T; \
	VPDPWSSD   T, V, ACC

// K4ZSUM sets Y5 to the ymm kernel's integer lanes from the accumulators
// Z5 (groups 0, 2) and Z6 (groups 1, 3).
#define K4ZSUM \
	VPADDD        Z6, Z5, Z5; \
	VEXTRACTI64X4 $1, Z5, Y6; \
	VPADDD        Y6, Y5, Y5

// func qdotQ4_KZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// qdotQ4_KSIMD's registers: Y0 the float accumulator, Y2 (Y1 next) the
// scale words, Y3 the mins, Y4 the min products, Y5 the integer sums.
TEXT ·qdotQ4_KZ(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), R8
	MOVQ w+16(FP), R10
	K4ZSETUP

q4kzrow:
	ROWSTART
	VXORPS Y0, Y0, Y0
	K4SCALES(SI, Y2, X2, Y3, X3, X8, X9)

	PCALIGN $64

q4kzloop:
	PREFETCHT0 2048(SI) // as qdotQ4_KSIMD
	PREFETCHT0 2112(SI)
	VSHUFI64X2 $0, Z2, Z2, Z10
	K4MIN
	K4NEXT(144)
	K4SCALES(R9, Y1, X1, Y3, X3, X8, X9)
	VPXORD     Z5, Z5, Z5
	VPXORD     Z6, Z6, Z6
	K4ZNIB(16, Z16)
	K4ZNIB(48, Z17)
	K4ZNIB(80, Z18)
	K4ZNIB(112, Z19)
	K4ZDOT(0, 0, Z16, Z20, Z5)
	K4ZDOT(1, 64, Z17, Z21, Z6)
	K4ZDOT(2, 128, Z18, Z22, Z5)
	K4ZDOT(3, 192, Z19, Z23, Z6)
	K4ZSUM
	K4FINISH
	VMOVDQA Y1, Y2
	ADDQ    $144, SI
	ADDQ    $256, DI
	ADDQ    $4, DX
	ADDQ    $32, BX
	DECQ    CX
	JNZ     q4kzloop

	FOLD8(Y0, X0)
	ROWEND(q4kzrow)
