// Multi-token tiles of IQ4_NL and MXFP4 on 256-bit registers (AVX2, no
// VNNI): 4 rows × 8 tokens, tokens in the vector lanes — the ymm form of
// qdotNLTileZ (rowdot_iq_nl_avx512_amd64.s), for CPUs without AVX-512
// (dotQRowsNLTile, rowdot_iq_tile.go).
//
// Canonical arithmetic (rowdot_iq_ref.go): per block b the exact int32 dot
// P_b = Σ level·a of its 32 elements, then acc ← acc + float32(s_b·
// float32(P_b)), s_b = float32(dw_b·da_b), block after block from 0. The
// tile keeps one (row, token) dot per float lane and takes exactly those
// steps, so each lane is the row dot's bits (TestNLTile).
//
// Without VPDPBUSD the integer dot of a 4-element chunk k and 8 tokens is
// three steps: the chunk's activations of the 8 tokens (one ymm, token t
// in dword t) signed by the row's four levels broadcast (VPSIGNB), times
// the levels' magnitudes broadcast (VPMADDUBSW: unsigned |level| by the
// signed products' other factor, |pair| ≤ 2·127·127 < 2^15, no
// saturation), pairs summed by VPMADDWD against ones, then VPADDD into the
// row's int32 dot. The activations are loaded once per chunk for all four
// rows; napkin: 4 rows × 8 tokens × 4 elements = 128 multiply-adds for
// one load, one VPXOR and 4 × (2 broadcast loads + 4 ALU) — about 7.5 MAC
// per vector ALU instruction, where the row dots (one token, one block)
// spend ~20 instructions on 32.

#include "textflag.h"
#include "rowdot_amd64.h"

// The workspace (nlUnpack4…Y): per block 272 bytes — the four rows'
// |level| (32 bytes each, element order), their signed levels (32 each,
// at 128), their dw as float32 (at 256).
// The packed tokens (nlPack, 576 bytes per block and group of 16): chunk
// k's 16 tokens × 4 bytes at 64k (XOR 0x80), the da at 512; the kernel
// reads one half, tokens 8h..8h+7, at pk+32h.

// NLYROW(r, k, ACC): row r's chunk k (activations in Y8) into ACC.
#define NLYROW(r, k, ACC) \
	VPBROADCASTD 32*r+4*k(SI), Y9; \
	VPBROADCASTD 128+32*r+4*k(SI), Y10; \
	VPSIGNB      Y10, Y8, Y10; \
	VPMADDUBSW   Y10, Y9, Y10; \
	VPMADDWD     Y14, Y10, Y10; \
	VPADDD       Y10, ACC, ACC

// NLYCHUNK(k): chunk k of the four rows.
#define NLYCHUNK(k) \
	VMOVDQU 64*k(DI), Y8; \
	VPXOR   Y13, Y8, Y8; \
	NLYROW(0, k, Y4); \
	NLYROW(1, k, Y5); \
	NLYROW(2, k, Y6); \
	NLYROW(3, k, Y7)

// MXFP4's levels are small (|level| ≤ 12): a chunk's int16 pair sums are
// at most 2·12·127 = 3048, so the eight chunks of a block add up in int16
// lanes (VPADDW, ≤ 24384 < 2^15, exact) and one VPMADDWD per block and row
// turns them into the int32 dots — the same P_b with 7 fewer multiplies
// per block and row (qdotNLTileYMX).

// NLYROWW(r, k, ACC): row r's chunk k (activations in Y8) into the int16
// lanes ACC.
#define NLYROWW(r, k, ACC) \
	VPBROADCASTD 32*r+4*k(SI), Y9; \
	VPBROADCASTD 128+32*r+4*k(SI), Y10; \
	VPSIGNB      Y10, Y8, Y10; \
	VPMADDUBSW   Y10, Y9, Y10; \
	VPADDW       Y10, ACC, ACC

#define NLYCHUNKW(k) \
	VMOVDQU 64*k(DI), Y8; \
	VPXOR   Y13, Y8, Y8; \
	NLYROWW(0, k, Y4); \
	NLYROWW(1, k, Y5); \
	NLYROWW(2, k, Y6); \
	NLYROWW(3, k, Y7)

// NLYACC(r, P, ACC): ACC += float32(float32(dw_r·da)·float32(P)).
#define NLYACC(r, P, ACC) \
	VBROADCASTSS 256+4*r(SI), Y11; \
	VMULPS       Y15, Y11, Y11; \
	VCVTDQ2PS    P, P; \
	VMULPS       Y11, P, P; \
	VADDPS       P, ACC, ACC

// NLYTILE(CHUNK, DOTS, loop): the tile's body, CHUNK a chunk's macro,
// DOTS what turns the block's lanes Y4-Y7 into its int32 dots.
// Registers: Y0-Y3 the rows' accumulators; Y4-Y7 their block dots; Y8
// the chunk; Y13 0x80 bytes; Y14 ones (words); Y15 the tokens' da.
#define NLYTILE(CHUNK, DOTS, loop) \
	MOVQ   out+0(FP), R8; \
	MOVQ   ws+8(FP), SI; \
	MOVQ   pk+16(FP), DI; \
	MOVQ   nb+24(FP), CX; \
	BCAST32($0x80808080, Y13, X13); \
	BCAST32($0x00010001, Y14, X14); \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	PCALIGN $64; \
loop: \
	VPXOR   Y4, Y4, Y4; \
	VPXOR   Y5, Y5, Y5; \
	VPXOR   Y6, Y6, Y6; \
	VPXOR   Y7, Y7, Y7; \
	CHUNK(0); \
	CHUNK(1); \
	CHUNK(2); \
	CHUNK(3); \
	CHUNK(4); \
	CHUNK(5); \
	CHUNK(6); \
	CHUNK(7); \
	DOTS; \
	VMOVUPS 512(DI), Y15; \
	NLYACC(0, Y4, Y0); \
	NLYACC(1, Y5, Y1); \
	NLYACC(2, Y6, Y2); \
	NLYACC(3, Y7, Y3); \
	ADDQ    $272, SI; \
	ADDQ    $576, DI; \
	DECQ    CX; \
	JNZ     loop; \
	VMOVUPS Y0, (R8); \
	VMOVUPS Y1, 32(R8); \
	VMOVUPS Y2, 64(R8); \
	VMOVUPS Y3, 96(R8); \
	VZEROUPPER; \
	RET

// NLYDOTS32: the lanes already hold int32 dots (NLYCHUNK).
#define NLYDOTS32

// NLYDOTS16: the int16 lanes of NLYCHUNKW summed in pairs into int32.
#define NLYDOTS16 \
	VPMADDWD Y14, Y4, Y4; \
	VPMADDWD Y14, Y5, Y5; \
	VPMADDWD Y14, Y6, Y6; \
	VPMADDWD Y14, Y7, Y7

// nlUnpack4…Y: four rows (at w, w+stride, ...) of nb blocks into ws (the
// layout above). Per block and row: the 16 code bytes split into 32
// nibbles in element order and looked up (VPSHUFB) in the signed level
// table Y13 (kIQ4NL or kFP4, dequant_iq.go); VPABSB for the magnitudes; dw as float32.
// Registers: R9-R12 the rows' blocks; Y15 0x0f bytes.

// NLYUROW(R, r, co, DW): row r's block at (R).
#define NLYUROW(R, r, co, DW) \
	VMOVDQU     co(R), X2; \
	VPSRLW      $4, X2, X3; \
	VINSERTI128 $1, X3, Y2, Y2; \
	VPAND       Y15, Y2, Y2; \
	VPSHUFB     Y2, Y13, Y2; \
	VMOVDQU     Y2, 128+32*r(DI); \
	VPABSB      Y2, Y2; \
	VMOVDQU     Y2, 32*r(DI); \
	DW(R, r)

#define NLYUDW(R, r) \
	MOVWLZX   (R), AX; \
	VMOVD     AX, X4; \
	VCVTPH2PS X4, X4; \
	VMOVSS    X4, 256+4*r(DI)

#define MXYUDW(R, r) \
	MOVBLZX (R), AX; \
	MOVL    (BX)(AX*4), AX; \
	MOVL    AX, 256+4*r(DI)

#define NLYUBODY(bb, co, DW, loop) \
	MOVQ            ws+0(FP), DI; \
	MOVQ            w+8(FP), R9; \
	MOVQ            stride+16(FP), DX; \
	MOVQ            nb+24(FP), CX; \
	MOVQ            aux+32(FP), BX; \
	LEAQ            (R9)(DX*1), R10; \
	LEAQ            (R10)(DX*1), R11; \
	LEAQ            (R11)(DX*1), R12; \
	BCAST32($0x0f0f0f0f, Y15, X15); \
loop: \
	NLYUROW(R9, 0, co, DW); \
	NLYUROW(R10, 1, co, DW); \
	NLYUROW(R11, 2, co, DW); \
	NLYUROW(R12, 3, co, DW); \
	ADDQ $bb, R9; \
	ADDQ $bb, R10; \
	ADDQ $bb, R11; \
	ADDQ $bb, R12; \
	ADDQ $272, DI; \
	DECQ CX; \
	JNZ  loop; \
	VZEROUPPER; \
	RET

// func nlUnpack4IQ4NLY(ws *byte, w *byte, stride uintptr, nb int, aux unsafe.Pointer)
TEXT ·nlUnpack4IQ4NLY(SB), NOSPLIT, $0-40
	VBROADCASTI128 ·kIQ4NL(SB), Y13
	NLYUBODY(18, 2, NLYUDW, nlyuloop)

// func nlUnpack4MXFP4Y(ws *byte, w *byte, stride uintptr, nb int, aux unsafe.Pointer)
// aux: e8m0HalfTab.
TEXT ·nlUnpack4MXFP4Y(SB), NOSPLIT, $0-40
	VBROADCASTI128 ·kFP4(SB), Y13
	NLYUBODY(17, 1, MXYUDW, mxyuloop)

// func qdotNLTileY(out *float32, ws *byte, pk *byte, nb int)
// out[8r + t] = row r, token t (of the half at pk) over nb blocks.
TEXT ·qdotNLTileY(SB), NOSPLIT, $0-32
	NLYTILE(NLYCHUNK, NLYDOTS32, nlyloop)

// func qdotNLTileYMX(out *float32, ws *byte, pk *byte, nb int)
// qdotNLTileY for MXFP4 rows (|level| ≤ 12), the block's chunks summed in
// int16 lanes.
TEXT ·qdotNLTileYMX(SB), NOSPLIT, $0-32
	NLYTILE(NLYCHUNKW, NLYDOTS16, nlymxloop)
