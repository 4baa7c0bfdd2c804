// IQ4_XS tiles on 256-bit registers (AVX2): one row × 8 tokens, tokens in
// the vector lanes (dotQRowsXSTile, rowdot_iq_xs_tile.go).
//
// Canonical arithmetic (rowdot_iq_ref.go): per super-block eight int32
// lanes, lane l = Σ_ib sc_ib · (the sum over elements 4l'..4l'+3 of
// sub-block ib's level·a, l' = l for l < 4 on the low nibbles, the high
// ones for l ≥ 4), then acc_l ← acc_l + float32(s·float32(P_l)), s =
// float32(dw·da), super-block after super-block; the row's value is
// fold8. Here lane l of the row dot is a register (Y0-Y7, one token per
// dword), so every step is the row dot's for 8 tokens at once: the 4-element
// chunk c (sub-block c/8, lane c%8) of the 8 tokens' activations signed by
// the row's four levels broadcast (VPSIGNB), VPMADDUBSW by their
// magnitudes (|pair| ≤ 2·127·127 < 2^15), VPMADDWD by the sub-block's
// scale as words (sums of four times sc, exact), VPADDD into lane c%8.
// Four vector ALU instructions per 32 multiply-adds, where the row dot
// unpacks and reduces per token.

#include "textflag.h"
#include "rowdot_amd64.h"

// The unpacked row (xsUnpack): per super-block 576 bytes — the 256
// |level| in element order, the 256 signed levels (at 256), the eight
// sub-block scales as word pairs (sc, sc) (at 512), dw as float32 (at
// 544). The packed tokens (xsPack): per super-block 2080 bytes — chunk c's
// 8 tokens × 4 activations at 32c, the 8 tokens' da at 2048.

// XSCHUNK(c, L): chunk c into lane register L (scale words in Y12).
#define XSCHUNK(c, L) \
	VMOVDQU      32*(c)(DI), Y8; \
	VPBROADCASTD 4*(c)(SI), Y9; \
	VPBROADCASTD 256+4*(c)(SI), Y10; \
	VPSIGNB      Y10, Y8, Y10; \
	VPMADDUBSW   Y10, Y9, Y10; \
	VPMADDWD     Y12, Y10, Y10; \
	VPADDD       Y10, L, L

// XSSUB(ib): sub-block ib's eight chunks.
#define XSSUB(ib) \
	VPBROADCASTD 512+4*ib(SI), Y12; \
	XSCHUNK(8*ib, Y0); \
	XSCHUNK(8*ib+1, Y1); \
	XSCHUNK(8*ib+2, Y2); \
	XSCHUNK(8*ib+3, Y3); \
	XSCHUNK(8*ib+4, Y4); \
	XSCHUNK(8*ib+5, Y5); \
	XSCHUNK(8*ib+6, Y6); \
	XSCHUNK(8*ib+7, Y7)

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

// func qdotXSTileY(out *float32, ws *byte, pk *byte, nb int)
// out[t] = the row's dot with token t (t < 8) over nb super-blocks.
// Registers: Y0-Y7 the lanes' int32 sums; Y8-Y10 temporaries; Y12 the
// scale words; Y14 s; the float lanes in the frame.
TEXT ·qdotXSTileY(SB), NOSPLIT, $256-32
	MOVQ   out+0(FP), R8
	MOVQ   ws+8(FP), SI
	MOVQ   pk+16(FP), DI
	MOVQ   nb+24(FP), CX
	XSZEROFRAME

xsloop:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	XSSUB(0)
	XSSUB(1)
	XSSUB(2)
	XSSUB(3)
	XSSUB(4)
	XSSUB(5)
	XSSUB(6)
	XSSUB(7)
	XSSTEP
	DECQ CX
	JNZ  xsloop

	XSFOLD
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
// qdotXSTileY for IQ3_S rows (xsUnpackIQ3S) and biased activations.
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
