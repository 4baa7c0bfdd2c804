// AVX-512 row dot of IQ4_XS: qdotIQ4_XSSIMD (rowdot_iq_amd64.s) with the
// super-block's integer lanes on 512-bit registers, selected by hasKZ
// (AVX-512F, BW, VNNI). The lanes are exact int32 sums and the float step
// (ACCLANES: VCVTDQ2PS, VMULPS by d·da, VADDPS) and the fold are the ymm
// kernel's instructions, so the results are its bits — and the Go
// reference's (rowdot_iq_ref.go), which the ymm kernel reproduces
// (TestKQuantZBitwise, TestIQRowDotsBitwise).
//
// A zmm holds the 64 values of sub-blocks 2g and 2g+1 in activation
// order: the 32 code bytes at 8+32g, 128-bit lanes [bytes 0-15, bytes
// 0-15, bytes 16-31, bytes 16-31] (VSHUFI64X2), lanes 1 and 3 shifted
// right by 4 (VPSRLW under K4), masked to 0x0f. VPSHUFB looks the codes up
// in a table of |level| (every level ≠ 0; codes 0-7 are the negative
// ones), the activations are negated where the code is < 8 (VPTESTNMB of
// 0x08, masked VPSUBB from zero: VPSIGNB's result, which AVX-512 lacks),
// VPMADDUBSW (|pair| ≤ 2·127·127) and VPDPWSSD by the sub-block scale
// words (ls−32, [ls_2g ×16 | ls_2g+1 ×16]) add dword j = elements
// 4j..4j+3 of the group: canonical lane j of sub-block 2g for j < 8, lane
// j−8 of sub-block 2g+1 above; lanes j and j+8 are added at the end.

#include "textflag.h"
#include "rowdot_amd64.h"

// |kIQ4NL| by code, in every 128-bit lane.
DATA iq4zabs<>+0(SB)/8, $0x0a1623314153687f
DATA iq4zabs<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4zabs<>(SB), RODATA|NOPTR, $16

// The scale words: VPSHUFB indices into the qword [h0 h1 l0 l1 l2 l3 . .]
// (bytes 2-9 of the super-block): word ib = scales_l byte ib/2 (xsli) and
// scales_h (xshi); then shifted right by 4·(ib%2) (xslc) and 2·ib (xshc).
DATA xsli<>+0(SB)/8, $0x8003800380028002
DATA xsli<>+8(SB)/8, $0x8005800580048004
GLOBL xsli<>(SB), RODATA|NOPTR, $16
DATA xshi<>+0(SB)/8, $0x0100010001000100
DATA xshi<>+8(SB)/8, $0x0100010001000100
GLOBL xshi<>(SB), RODATA|NOPTR, $16
DATA xslc<>+0(SB)/8, $0x0004000000040000
DATA xslc<>+8(SB)/8, $0x0004000000040000
GLOBL xslc<>(SB), RODATA|NOPTR, $16
DATA xshc<>+0(SB)/8, $0x0006000400020000
DATA xshc<>+8(SB)/8, $0x000e000c000a0008
GLOBL xshc<>(SB), RODATA|NOPTR, $16

// VPSHUFB masks, one 64-byte entry per group g: scale word 2g in the low
// 256 bits, word 2g+1 in the high 256 bits.
DATA xszshuf<>+0(SB)/8, $0x0100010001000100
DATA xszshuf<>+8(SB)/8, $0x0100010001000100
DATA xszshuf<>+16(SB)/8, $0x0100010001000100
DATA xszshuf<>+24(SB)/8, $0x0100010001000100
DATA xszshuf<>+32(SB)/8, $0x0302030203020302
DATA xszshuf<>+40(SB)/8, $0x0302030203020302
DATA xszshuf<>+48(SB)/8, $0x0302030203020302
DATA xszshuf<>+56(SB)/8, $0x0302030203020302
DATA xszshuf<>+64(SB)/8, $0x0504050405040504
DATA xszshuf<>+72(SB)/8, $0x0504050405040504
DATA xszshuf<>+80(SB)/8, $0x0504050405040504
DATA xszshuf<>+88(SB)/8, $0x0504050405040504
DATA xszshuf<>+96(SB)/8, $0x0706070607060706
DATA xszshuf<>+104(SB)/8, $0x0706070607060706
DATA xszshuf<>+112(SB)/8, $0x0706070607060706
DATA xszshuf<>+120(SB)/8, $0x0706070607060706
DATA xszshuf<>+128(SB)/8, $0x0908090809080908
DATA xszshuf<>+136(SB)/8, $0x0908090809080908
DATA xszshuf<>+144(SB)/8, $0x0908090809080908
DATA xszshuf<>+152(SB)/8, $0x0908090809080908
DATA xszshuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA xszshuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA xszshuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA xszshuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA xszshuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA xszshuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA xszshuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA xszshuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA xszshuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA xszshuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA xszshuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA xszshuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL xszshuf<>(SB), RODATA|NOPTR, $256

// XSZSCALES sets Z10 to the eight scale words ls−32 in every 128-bit lane
// (Z8, Z9 clobbered): Z16-Z19 the index and count tables, Z20 = 0x000f
// words, Z21 = 0x0003 words, Z22 = 32 (words).
#define XSZSCALES \
	VPBROADCASTQ 2(SI), Z9; \
	VPSHUFB      Z16, Z9, Z8; \
	VPSHUFB      Z17, Z9, Z9; \
	VPSRLVW      Z18, Z8, Z8; \
	VPSRLVW      Z19, Z9, Z9; \
	VPANDD       Z20, Z8, Z8; \
	VPANDD       Z21, Z9, Z9; \
	VPSLLW       $4, Z9, Z9; \
	VPORD        Z9, Z8, Z10; \
	VPSUBW       Z22, Z10, Z10

// XSZGROUP adds group g (sub-blocks 2g, 2g+1) into the int32 accumulator
// ACC: codes at 8+32g(SI), activations at 64g(DI). V, A, S clobbered;
// Z15 = 0x0f bytes, Z14 = 0x08 bytes, Z13 = |levels|, Z12 = 0, K4 = word
// lanes 1 and 3.
#define XSZGROUP(g, V, A, S, ACC) \
	VMOVDQU64   8+32*g(SI), Y30; \
	VSHUFI64X2  $0x50, Z30, Z30, V; \
	VPSRLW      $4, V, K4, V; \
	VPANDD      Z15, V, V; \
	VPTESTNMB   Z14, V, K3; \
	VPSHUFB     V, Z13, V; \
	VMOVDQU64   64*g(DI), A; \
	VPSUBB      A, Z12, K3, A; \
	VPMADDUBSW  A, V, V; \
	VPSHUFB     xszshuf<>+64*g(SB), Z10, S; \
	VPDPWSSD    S, V, ACC

// func qdotIQ4_XSZ(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int)
// Y0 the float accumulator (as qdotIQ4_XSSIMD), Z5 (groups 0, 2) and Z6
// (groups 1, 3) the int32 accumulators, Y2 their lanes, Y4 d·da.
TEXT ·qdotIQ4_XSZ(SB), NOSPLIT, $0-64
	MOVQ             dst+0(FP), R8
	MOVQ             w+16(FP), R10
	BCAST32($0x0f0f0f0f, Z15, X15)
	BCAST32($0x08080808, Z14, X14)
	VBROADCASTI32X4  iq4zabs<>(SB), Z13
	VPXORD           Z12, Z12, Z12
	VBROADCASTI32X4  xsli<>(SB), Z16
	VBROADCASTI32X4  xshi<>(SB), Z17
	VBROADCASTI32X4  xslc<>(SB), Z18
	VBROADCASTI32X4  xshc<>(SB), Z19
	BCAST32($0x000f000f, Z20, X20)
	BCAST32($0x00030003, Z21, X21)
	BCAST32($0x00200020, Z22, X22)
	MOVL             $0xff00ff00, AX
	KMOVD            AX, K4

xszrow:
	ROWSTART
	VXORPS Y0, Y0, Y0

	PCALIGN $64

xszloop:
	PREFETCHT1 16384(SI) // as qdotQ4_KZ (KZPF, rowdot_kquant_avx512_amd64.s)
	PREFETCHT1 16448(SI)
	PREFETCHT1 16512(SI)
	XSZSCALES
	VPXORD     Z5, Z5, Z5
	VPXORD     Z6, Z6, Z6
	XSZGROUP(0, Z24, Z25, Z26, Z5)
	XSZGROUP(1, Z27, Z28, Z29, Z6)
	XSZGROUP(2, Z24, Z25, Z26, Z5)
	XSZGROUP(3, Z27, Z28, Z29, Z6)
	VPADDD        Z6, Z5, Z5
	VEXTRACTI64X4 $1, Z5, Y6
	VPADDD        Y6, Y5, Y2
	VPBROADCASTW  0(SI), X4
	VCVTPH2PS     X4, Y4
	VBROADCASTSS  (DX), Y5
	VMULPS        Y5, Y4, Y4
	VCVTDQ2PS     Y2, Y2
	VMULPS        Y4, Y2, Y2
	VADDPS        Y2, Y0, Y0
	ADDQ          $136, SI
	ADDQ          $256, DI
	ADDQ          $4, DX
	DECQ          CX
	JNZ           xszloop

	FOLD8(Y0, X0)
	ROWEND(xszrow)

// ---------------------------------------------------------------- eight tokens

// func qdotIQ4_XSx8Z(dst *float32, rows int, w *byte, stride uintptr, q *int8, bs *int16, dz *float32, nb int, n uintptr, ldd uintptr)
// IQ4_XS weights against eight consecutive tokens (prefill; see
// dotQRowsKX8, whose arguments and packed scales dz it shares — bs is
// unused): per row and super-block the four groups' |levels| (Z4-Z7),
// sign masks (K1, K2, K3, K5) and scale words (Z8-Z11) are unpacked once,
// and the tokens meet them two at a time: per token and group the
// activations are loaded, negated under the group's mask, VPMADDUBSW and
// VPDPWSSD into the token's int32 accumulator — qdotIQ4_XSZ's lanes —
// and a pair's two 8-lane sums share one zmm (lanes 0-7, 8-15) for the
// float step (VCVTDQ2PS, VMULPS by d·da, VADDPS into the pair's float
// accumulator): per (row, token) the row dot's bits (TestKQuantZx8). The
// row ends with X8STORE's fold and stores.

// XSZNIB sets V to group g's |levels| and K to its negative codes (Z30
// clobbered).
#define XSZNIB(g, V, K) \
	VMOVDQU64   8+32*g(SI), Y30; \
	VSHUFI64X2  $0x50, Z30, Z30, V; \
	VPSRLW      $4, V, K4, V; \
	VPANDD      Z15, V, V; \
	VPTESTNMB   Z14, V, K; \
	VPSHUFB     V, Z13, V

// XSX8TOK adds group values V (mask K, scale words S) times the token's
// activations at off A into ACC (Z26, Z27 clobbered).
#define XSX8TOK(off, A, V, K, S, ACC) \
	VMOVDQU64  off A, Z26; \
	VPSUBB     Z26, Z12, K, Z26; \
	VPMADDUBSW Z26, V, Z27; \
	VPDPWSSD   S, Z27, ACC

// XSX8PAIR runs the super-block for tokens A and B (activation addresses)
// with their scales at doff(DX) into the float accumulator F.
#define XSX8PAIR(A, B, doff, F) \
	VPXORD        Z24, Z24, Z24; \
	VPXORD        Z25, Z25, Z25; \
	XSX8TOK(0, A, Z4, K1, Z8, Z24); \
	XSX8TOK(0, B, Z4, K1, Z8, Z25); \
	XSX8TOK(64, A, Z5, K2, Z9, Z24); \
	XSX8TOK(64, B, Z5, K2, Z9, Z25); \
	XSX8TOK(128, A, Z6, K3, Z10, Z24); \
	XSX8TOK(128, B, Z6, K3, Z10, Z25); \
	XSX8TOK(192, A, Z7, K5, Z11, Z24); \
	XSX8TOK(192, B, Z7, K5, Z11, Z25); \
	VSHUFI64X2    $0x44, Z25, Z24, Z30; \
	VSHUFI64X2    $0xEE, Z25, Z24, Z31; \
	VPADDD        Z31, Z30, Z30; \
	VMULPS        doff(DX), Z23, Z31; \
	VCVTDQ2PS     Z30, Z30; \
	VMULPS        Z31, Z30, Z30; \
	VADDPS        Z30, F, F

TEXT ·qdotIQ4_XSx8Z(SB), NOSPLIT, $0-80
	MOVQ             dst+0(FP), R8
	MOVQ             w+16(FP), R10
	MOVQ             n+64(FP), R11
	LEAQ             (R11)(R11*2), R12
	BCAST32($0x0f0f0f0f, Z15, X15)
	BCAST32($0x08080808, Z14, X14)
	VBROADCASTI32X4  iq4zabs<>(SB), Z13
	VPXORD           Z12, Z12, Z12
	VBROADCASTI32X4  xsli<>(SB), Z16
	VBROADCASTI32X4  xshi<>(SB), Z17
	VBROADCASTI32X4  xslc<>(SB), Z18
	VBROADCASTI32X4  xshc<>(SB), Z19
	BCAST32($0x000f000f, Z20, X20)
	BCAST32($0x00030003, Z21, X21)
	BCAST32($0x00200020, Z22, X22)
	MOVL             $0xff00ff00, AX
	KMOVD            AX, K4

xsx8row:
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

xsx8loop:
	PREFETCHT0   2048(SI)
	PREFETCHT0   2112(SI)
	XSZSCALES
	VPSHUFB      xszshuf<>+0(SB), Z10, Z8
	VPSHUFB      xszshuf<>+64(SB), Z10, Z9
	VPSHUFB      xszshuf<>+192(SB), Z10, Z11
	VPSHUFB      xszshuf<>+128(SB), Z10, Z10
	XSZNIB(0, Z4, K1)
	XSZNIB(1, Z5, K2)
	XSZNIB(2, Z6, K3)
	XSZNIB(3, Z7, K5)
	VPBROADCASTW 0(SI), Y23
	VCVTPH2PS    Y23, Z23
	XSX8PAIR((DI), (DI)(R11*1), 0, Z0)
	XSX8PAIR((DI)(R11*2), (DI)(R12*1), 64, Z1)
	XSX8PAIR((R9), (R9)(R11*1), 128, Z2)
	XSX8PAIR((R9)(R11*2), (R9)(R12*1), 192, Z3)
	ADDQ $136, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $256, DX
	DECQ CX
	JNZ  xsx8loop

	X8STORE(xsx8row)
