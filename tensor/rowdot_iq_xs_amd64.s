// IQ4_XS and IQ3_S tiles on 256-bit registers (AVX2), several tokens per
// row unpacked once (dotQRowsXSTile, rowdot_iq_xs_tile.go).
//
// Canonical arithmetic (rowdot_iq_ref.go): per super-block eight int32
// lanes, lane l = Σ_ib sc_ib · (the sum over elements 4l..4l+3 of
// sub-block ib's level·a), then acc_l ← acc_l + float32(s·float32(P_l)),
// s = float32(dw·da), super-block after super-block; the row's value is
// fold8. Both tiles keep those lanes exactly:
//
//   - IQ4_XS (qdotXSTileK): two rows × four tokens with the elements in
//     the vector lanes, as in the row dot: per sub-block and (row, token)
//     the token's 32 activations signed by the row's levels (VPSIGNB),
//     VPMADDUBSW by the levels' magnitudes (|pair| ≤ 2·127·127 < 2^15),
//     VPMADDWD by the scale as words — lane j is then the canonical lane
//     j's term — and VPADDD; the rows' levels and the tokens' activations
//     are each loaded once for the eight products.
//   - IQ3_S (qdotXSTileY3S): one row × 8 tokens, the tokens in the lanes:
//     lane l of the row dot is a register (Y0-Y7, one token per dword),
//     and the 4-element chunk c (sub-block c/8, lane c%8) of the 8 tokens'
//     activations meets the row's four levels broadcast.
//
// The token-lane form ran IQ4_XS too, at ~1.9 cycles per 32
// multiply-adds against the K-lane tile's ~1.6 (three loads per chunk,
// two of them broadcasts, against ten per eight products) and with a
// packed copy of the activations: TinyLlama-shaped IQ4_XS pp128 60-68 →
// 81-98 tok/s, pp512 64-74 → 80-97 (Zen 3, 2 threads, interleaved x3,
// 2026-12-07).

#include "textflag.h"
#include "rowdot_amd64.h"

// The unpacked row (xsUnpack): per super-block 576 bytes — the 256
// |level| in element order, the 256 signed levels (at 256), the eight
// sub-block scales as word pairs (sc, sc) (at 512), dw as float32 (at
// 544). The packed tokens of IQ3_S's tile (xsPack): per super-block 2080
// bytes — chunk c's 8 tokens × 4 activations (biased, a+128) at 32c, the
// 8 tokens' da at 2048.

// XSACC(l, L): acc_l (frame at 32l) += float32(s·float32(P_l)), s in Y14.
#define XSACC(l, L) \
	VCVTDQ2PS L, L; \
	VMULPS    Y14, L, L; \
	VADDPS    32*l(SP), L, L; \
	VMOVUPS   L, 32*l(SP)

// XSZEROFRAME zeroes the eight float lanes in the frame (0-255(SP)).
#define XSZEROFRAME \
	VXORPS  Y0, Y0, Y0; \
	VMOVUPS Y0, 0(SP); \
	VMOVUPS Y0, 32(SP); \
	VMOVUPS Y0, 64(SP); \
	VMOVUPS Y0, 96(SP); \
	VMOVUPS Y0, 128(SP); \
	VMOVUPS Y0, 160(SP); \
	VMOVUPS Y0, 192(SP); \
	VMOVUPS Y0, 224(SP)

// XSSTEP: the super-block's float steps, s = dw·da for the 8 tokens and
// XSACC for the eight lanes Y0-Y7, then on to the next super-block.
#define XSSTEP \
	VBROADCASTSS 544(SI), Y14; \
	VMULPS       2048(DI), Y14, Y14; \
	XSACC(0, Y0); \
	XSACC(1, Y1); \
	XSACC(2, Y2); \
	XSACC(3, Y3); \
	XSACC(4, Y4); \
	XSACC(5, Y5); \
	XSACC(6, Y6); \
	XSACC(7, Y7); \
	ADDQ         $576, SI; \
	ADDQ         $2080, DI

// XSFOLD: fold8 of the frame's lanes, ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7))
// per token, to out (R8).
#define XSFOLD \
	VMOVUPS 0(SP), Y0; \
	VADDPS  32(SP), Y0, Y0; \
	VMOVUPS 64(SP), Y2; \
	VADDPS  96(SP), Y2, Y2; \
	VADDPS  Y2, Y0, Y0; \
	VMOVUPS 128(SP), Y4; \
	VADDPS  160(SP), Y4, Y4; \
	VMOVUPS 192(SP), Y6; \
	VADDPS  224(SP), Y6, Y6; \
	VADDPS  Y6, Y4, Y4; \
	VADDPS  Y4, Y0, Y0; \
	VMOVUPS Y0, (R8); \
	VZEROUPPER

// The K-lane tile (qdotXSTileK): two rows × four tokens with the
// elements in the vector lanes, as the row dot has them — lane j of a
// sub-block's VPMADDUBSW/VPMADDWD is elements 4j..4j+3 times the scale,
// the canonical lane j itself — so each (row, token) is one row dot's
// register, Y(4r+t). Per sub-block the two rows' levels (magnitudes,
// signed) and scale words are loaded once and each token's 32
// activations once, for eight products of four vector ALU instructions:
// ten loads per eight (row, token) sub-block products where a token-lane
// tile takes three per chunk, 24 per product.

// XSKTOK(src, A0, A1): one token's sub-block at src against the two rows'
// levels (Y8/Y9 row 0, Y10/Y11 row 1, scales Y12/Y13) into A0 and A1.
#define XSKTOK(src, A0, A1) \
	VMOVDQU    src, Y14; \
	VPSIGNB    Y9, Y14, Y15; \
	VPMADDUBSW Y15, Y8, Y15; \
	VPMADDWD   Y12, Y15, Y15; \
	VPADDD     Y15, A0, A0; \
	VPSIGNB    Y11, Y14, Y14; \
	VPMADDUBSW Y14, Y10, Y14; \
	VPMADDWD   Y13, Y14, Y14; \
	VPADDD     Y14, A1, A1

// XSKSUB(ib): sub-block ib of the super-block (rows at SI and SI+BX,
// tokens at DI, DI+DX, DI+2DX, R9).
#define XSKSUB(ib) \
	VMOVDQU      32*ib(SI), Y8; \
	VMOVDQU      256+32*ib(SI), Y9; \
	VMOVDQU      32*ib(SI)(BX*1), Y10; \
	VMOVDQU      256+32*ib(SI)(BX*1), Y11; \
	VPBROADCASTD 512+4*ib(SI), Y12; \
	VPBROADCASTD 512+4*ib(SI)(BX*1), Y13; \
	XSKTOK(32*ib(DI), Y0, Y4); \
	XSKTOK(32*ib(DI)(DX*1), Y1, Y5); \
	XSKTOK(32*ib(DI)(DX*2), Y2, Y6); \
	XSKTOK(32*ib(R9), Y3, Y7)

// XSKACC(L, s, off): the float lanes at off(SP) += float32(s·float32(L)).
#define XSKACC(L, s, off) \
	VCVTDQ2PS L, L; \
	VMULPS    s, L, L; \
	VADDPS    off(SP), L, L; \
	VMOVUPS   L, off(SP)

// XSKSTEP: the super-block's float steps, s = dw_r·da_t (dw at 544 of
// each unpacked row, da at R10 + t·R11), for the eight products.
#define XSKSTEP \
	VBROADCASTSS 544(SI), Y8; \
	VBROADCASTSS 544(SI)(BX*1), Y9; \
	VBROADCASTSS (R10), Y10; \
	VBROADCASTSS (R10)(R11*1), Y11; \
	VBROADCASTSS (R10)(R11*2), Y12; \
	VBROADCASTSS (R12), Y13; \
	VMULPS       Y10, Y8, Y14; \
	XSKACC(Y0, Y14, 0); \
	VMULPS       Y11, Y8, Y14; \
	XSKACC(Y1, Y14, 32); \
	VMULPS       Y12, Y8, Y14; \
	XSKACC(Y2, Y14, 64); \
	VMULPS       Y13, Y8, Y14; \
	XSKACC(Y3, Y14, 96); \
	VMULPS       Y10, Y9, Y14; \
	XSKACC(Y4, Y14, 128); \
	VMULPS       Y11, Y9, Y14; \
	XSKACC(Y5, Y14, 160); \
	VMULPS       Y12, Y9, Y14; \
	XSKACC(Y6, Y14, 192); \
	VMULPS       Y13, Y9, Y14; \
	XSKACC(Y7, Y14, 224)

// XSKFOLD4(off, dst): fold8 of the four tokens' lanes at off(SP) (one
// row), ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) each, to the four floats at
// dst (as FOLD4 of the float tiles, which folds that way).
#define XSKFOLD4(off, dst) \
	VMOVUPS      off(SP), Y0; \
	VMOVUPS      off+32(SP), Y1; \
	VMOVUPS      off+64(SP), Y2; \
	VMOVUPS      off+96(SP), Y3; \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVUPS      X0, dst

// func qdotXSTileK(out *float32, ws *byte, wsl uintptr, q *int8, ldq uintptr, d *float32, ldd uintptr, nb int)
// out[4r+t] = the row dot of row r (unpacked, xsUnpack, at ws + r·wsl) and
// token t (Q8_K activations at q + t·ldq, super-block scales at d + t·ldd
// bytes), r < 2, t < 4, over nb super-blocks. Registers: Y0-Y7 the eight
// products' int32 lanes; the float lanes in the frame (32 bytes each at
// 32·(4r+t)); SI rows, BX wsl; DI, DI+DX, DI+2DX, R9 tokens; R10 the
// scales (R12 token 3's), R11 ldd; CX super-blocks left.
TEXT ·qdotXSTileK(SB), NOSPLIT, $256-64
	MOVQ out+0(FP), R8
	MOVQ ws+8(FP), SI
	MOVQ wsl+16(FP), BX
	MOVQ q+24(FP), DI
	MOVQ ldq+32(FP), DX
	MOVQ d+40(FP), R10
	MOVQ ldd+48(FP), R11
	MOVQ nb+56(FP), CX
	LEAQ (DI)(DX*2), R9
	ADDQ DX, R9
	LEAQ (R10)(R11*2), R12
	ADDQ R11, R12
	XSZEROFRAME

xskloop:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	XSKSUB(0)
	XSKSUB(1)
	XSKSUB(2)
	XSKSUB(3)
	XSKSUB(4)
	XSKSUB(5)
	XSKSUB(6)
	XSKSUB(7)
	XSKSTEP
	ADDQ $576, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $4, R10
	ADDQ $4, R12
	DECQ CX
	JNZ  xskloop

	XSKFOLD4(0, (R8))
	XSKFOLD4(128, 16(R8))
	VZEROUPPER
	RET

// IQ3_S's levels are small (|level| ≤ 15), so its tile takes the
// activations biased to unsigned bytes, a+128 (xsPack with bias), as
// VPMADDUBSW's unsigned operand against the signed levels: pair sums ≤
// 2·255·15, exact, and no VPSIGNB; the lanes start each super-block at
// the row's correction −128·Σ sc·Σ level (xsUnpackIQ3S, at 0 of the
// unpacked super-block), so they hold the row dot's exact int32 sums.
// Three vector ALU instructions per chunk instead of four.

// XS3CHUNK(c, L): chunk c into lane register L (biased activations,
// scale words in Y12).
#define XS3CHUNK(c, L) \
	VMOVDQU      32*(c)(DI), Y8; \
	VPBROADCASTD 256+4*(c)(SI), Y10; \
	VPMADDUBSW   Y10, Y8, Y10; \
	VPMADDWD     Y12, Y10, Y10; \
	VPADDD       Y10, L, L

#define XS3SUB(ib) \
	VPBROADCASTD 512+4*ib(SI), Y12; \
	XS3CHUNK(8*ib, Y0); \
	XS3CHUNK(8*ib+1, Y1); \
	XS3CHUNK(8*ib+2, Y2); \
	XS3CHUNK(8*ib+3, Y3); \
	XS3CHUNK(8*ib+4, Y4); \
	XS3CHUNK(8*ib+5, Y5); \
	XS3CHUNK(8*ib+6, Y6); \
	XS3CHUNK(8*ib+7, Y7)

// func qdotXSTileY3S(out *float32, ws *byte, pk *byte, nb int)
// One IQ3_S row (xsUnpackIQ3S) × the 8 tokens packed at pk (biased).
TEXT ·qdotXSTileY3S(SB), NOSPLIT, $256-32
	MOVQ   out+0(FP), R8
	MOVQ   ws+8(FP), SI
	MOVQ   pk+16(FP), DI
	MOVQ   nb+24(FP), CX
	XSZEROFRAME

xs3sloop:
	VPBROADCASTD 0(SI), Y0
	VPBROADCASTD 4(SI), Y1
	VPBROADCASTD 8(SI), Y2
	VPBROADCASTD 12(SI), Y3
	VPBROADCASTD 16(SI), Y4
	VPBROADCASTD 20(SI), Y5
	VPBROADCASTD 24(SI), Y6
	VPBROADCASTD 28(SI), Y7
	XS3SUB(0)
	XS3SUB(1)
	XS3SUB(2)
	XS3SUB(3)
	XS3SUB(4)
	XS3SUB(5)
	XS3SUB(6)
	XS3SUB(7)
	XSSTEP
	DECQ CX
	JNZ  xs3sloop
	XSFOLD
	RET

// func xsUnpackLevels(ws *byte, w *byte, nb int)
// The levels of one row's nb super-blocks (136 bytes each at w) into ws
// (576 bytes each): per sub-block the 16 code bytes split into 32 nibbles
// in element order, looked up (VPSHUFB) in IQ4_NL's levels (kIQ4NL), stored
// signed (at 256) and as magnitudes (VPABSB). The scales and dw are
// xsUnpack's, in Go.
TEXT ·xsUnpackLevels(SB), NOSPLIT, $0-24
	MOVQ           ws+0(FP), DI
	MOVQ           w+8(FP), SI
	MOVQ           nb+16(FP), CX
	VBROADCASTI128 ·kIQ4NL(SB), Y13
	BCAST32($0x0f0f0f0f, Y15, X15)

xsuloop:
	MOVQ $8, DX
	MOVQ SI, R9
	MOVQ DI, R10

xsusub:
	VMOVDQU     8(R9), X2
	VPSRLW      $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPAND       Y15, Y2, Y2
	VPSHUFB     Y2, Y13, Y2
	VMOVDQU     Y2, 256(R10)
	VPABSB      Y2, Y2
	VMOVDQU     Y2, (R10)
	ADDQ        $16, R9
	ADDQ        $32, R10
	DECQ        DX
	JNZ         xsusub

	ADDQ $136, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  xsuloop
	VZEROUPPER
	RET
