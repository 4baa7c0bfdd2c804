// The 32-element table formats IQ4_NL and MXFP4 on 512-bit registers
// (AVX-512 BW, VNNI and VBMI: hasNLZV), in their canonical arithmetic
// (rowdot_iq_ref.go): per block the exact integer dot P_b of its 32
// levels and activations, then acc ← acc + float32(s_b·float32(P_b)),
// s_b = float32(dw_b·da_b), block after block — the ymm kernels' bits
// (rowdot_iq_amd64.s) and the Go reference's (TestIQRowDotsBitwise).
//
// qdotIQ4_NLZV, qdotMXFP4ZV: one token, one row at a time, two blocks per
// register. Per pair of blocks: one masked load of their 2·bb bytes (no
// fault past the row) and one VPERMB into the code layout [bytes 0-15,
// 0-15, 16-31, 16-31] of the codes; VPSRLW by 4 of lanes 1 and 3; the
// lookup by VPERMB from a 64-byte table of the biased levels level+128
// (1..241 as unsigned bytes, the 16 four times: it reads the low 6 bits
// of each byte, so the neighbour bits VPSRLW leaves need no mask); one
// VPDPBUSD from zero of those unsigned bytes against the activations,
// straight from memory: the 16 int32 lanes [block b: elements 4j..4j+3 |
// block b+1], each Σ(level+128)·a. Eight blocks (four pairs) are reduced
// together (NZVRED8) and corrected to [P_0 … P_7] by adding the eight
// blocks' −128·Σa (the ns argument: quantizedActs.NS, computed once per
// MatVec; exact in int32, so P_b is the reference's), converted and
// scaled in one ymm, and added to X0 in block order (the row's last 1-7
// blocks one at a time, NZV1). Against the signed-level form (sign test,
// activations negated, loaded separately) a block pair takes six
// instructions where it took nine. A far PREFETCHT1 covers every line of
// the row as in qdotQ8_0Z.
//
// Registers: X0 accumulates; Z13 the 64-byte level+128 table; Z15 0x0f
// bytes; R11 the corrections −128·Σa; Z16 the VPERMB code index; Z17 the
// VPERMT2B index of IQ4_NL's four d of two pairs; Z26 the VPERMD index of
// the reduced dots; K4 word lanes 1 and 3; K5 the low 2·bb bytes.

#include "textflag.h"
#include "rowdot_amd64.h"

#define NZVPF 16384

// level+128 by code (unsigned bytes 1..241), in every 128-bit lane.
DATA nzvnlb<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA nzvnlb<>+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL nzvnlb<>(SB), RODATA|NOPTR, $16
DATA nzvmxb<>+0(SB)/8, $0x8c88868483828180
DATA nzvmxb<>+8(SB)/8, $0x74787a7c7d7e7f80
GLOBL nzvmxb<>(SB), RODATA|NOPTR, $16

// The VPERMB code indices: [co..co+15, co..co+15, bb+co..bb+co+15 twice].
DATA nzvnl<>+0(SB)/8, $0x0908070605040302
DATA nzvnl<>+8(SB)/8, $0x11100f0e0d0c0b0a
DATA nzvnl<>+16(SB)/8, $0x0908070605040302
DATA nzvnl<>+24(SB)/8, $0x11100f0e0d0c0b0a
DATA nzvnl<>+32(SB)/8, $0x1b1a191817161514
DATA nzvnl<>+40(SB)/8, $0x232221201f1e1d1c
DATA nzvnl<>+48(SB)/8, $0x1b1a191817161514
DATA nzvnl<>+56(SB)/8, $0x232221201f1e1d1c
GLOBL nzvnl<>(SB), RODATA|NOPTR, $64

DATA nzvmx<>+0(SB)/8, $0x0807060504030201
DATA nzvmx<>+8(SB)/8, $0x100f0e0d0c0b0a09
DATA nzvmx<>+16(SB)/8, $0x0807060504030201
DATA nzvmx<>+24(SB)/8, $0x100f0e0d0c0b0a09
DATA nzvmx<>+32(SB)/8, $0x1918171615141312
DATA nzvmx<>+40(SB)/8, $0x21201f1e1d1c1b1a
DATA nzvmx<>+48(SB)/8, $0x1918171615141312
DATA nzvmx<>+56(SB)/8, $0x21201f1e1d1c1b1a
GLOBL nzvmx<>(SB), RODATA|NOPTR, $64

// VPERMT2B index of IQ4_NL's four d: bytes 0-1 and 18-19 of the first
// pair's raw bytes, then of the second's (+64).
DATA nzvdw<>+0(SB)/8, $0x5352414013120100
DATA nzvdw<>+8(SB)/8, $0x0000000000000000
GLOBL nzvdw<>(SB), RODATA|NOPTR, $16

// VPERMT2B index of MXFP4's four exponent bytes of two pairs (bytes 0
// and 17 of each pair's raw bytes) into bytes 0, 4, 8, 12.
DATA nzvmxe<>+0(SB)/8, $0x0000001100000000
DATA nzvmxe<>+8(SB)/8, $0x0000005100000040
GLOBL nzvmxe<>(SB), RODATA|NOPTR, $16

// VPERMD index of the reduced dots: dwords 0 then 2 of each 128-bit lane.
DATA nzvp8<>+0(SB)/8, $0x0000000400000000
DATA nzvp8<>+8(SB)/8, $0x0000000c00000008
DATA nzvp8<>+16(SB)/8, $0x0000000600000002
DATA nzvp8<>+24(SB)/8, $0x0000000e0000000a
DATA nzvp8<>+32(SB)/8, $0x0000000000000000
DATA nzvp8<>+40(SB)/8, $0x0000000000000000
DATA nzvp8<>+48(SB)/8, $0x0000000000000000
DATA nzvp8<>+56(SB)/8, $0x0000000000000000
GLOBL nzvp8<>(SB), RODATA|NOPTR, $64

// NZVINT(off, aoff, RAW, LV, OUT): the 16 int32 lanes of the block pair
// at off(SI) (activations at aoff(DI)) into OUT, each biased by 128 times
// its four activations' sum (the biased levels); RAW keeps the raw bytes.
#define NZVINT(off, aoff, RAW, LV, OUT) \
	VMOVDQU8.Z off(SI), K5, RAW; \
	VPERMB     RAW, Z16, LV; \
	VPSRLW     $4, LV, K4, LV; \
	VPERMB     Z13, LV, LV; \
	VPXORD     OUT, OUT, OUT; \
	VPDPBUSD   aoff(DI), LV, OUT

// NZVRED8: the pairs' lanes Z5 (blocks 0, 1), Z6 (2, 3), Z7 (4, 5), Z8
// (6, 7) reduced to [P_0 … P_7] in Y9 (Z10, Z11 clobbered): 128-bit lanes
// added pairwise (VSHUFI64X2), so lane j holds four partial sums of block
// j (Z9) and of block 4+j (Z10); those summed by VPUNPCKL/HQDQ, VPSHUFD
// and VPADDD, then gathered in block order (VPERMD by Z26).
#define NZVRED8 \
	VSHUFI64X2  $0x88, Z6, Z5, Z9; \
	VSHUFI64X2  $0xdd, Z6, Z5, Z10; \
	VPADDD      Z10, Z9, Z9; \
	VSHUFI64X2  $0x88, Z8, Z7, Z10; \
	VSHUFI64X2  $0xdd, Z8, Z7, Z11; \
	VPADDD      Z11, Z10, Z10; \
	VPUNPCKLQDQ Z10, Z9, Z11; \
	VPUNPCKHQDQ Z10, Z9, Z9; \
	VPADDD      Z11, Z9, Z9; \
	VPSHUFD     $0xb1, Z9, Z10; \
	VPADDD      Z10, Z9, Z9; \
	VPERMD      Z9, Z26, Z9

// NZVACC8: X0 += the eight blocks' float32(s·float32(P)) in block order,
// from the dots Y9 and the weight scales Y4 (activation scales at 0(DX));
// the eight terms go through the frame at 0(SP).
#define NZVACC8 \
	VCVTDQ2PS Y9, Y9; \
	VMULPS    (DX), Y4, Y4; \
	VMULPS    Y4, Y9, Y9; \
	VMOVUPS   Y9, (SP); \
	VADDSS    (SP), X0, X0; \
	VADDSS    4(SP), X0, X0; \
	VADDSS    8(SP), X0, X0; \
	VADDSS    12(SP), X0, X0; \
	VADDSS    16(SP), X0, X0; \
	VADDSS    20(SP), X0, X0; \
	VADDSS    24(SP), X0, X0; \
	VADDSS    28(SP), X0, X0

// NLDWZ8, MXDWZ8: the eight blocks' dw in Y4. IQ4_NL's from the four raw
// registers Z2, Z19, Z22, Z25 (Z2, Z22 clobbered), MXFP4's from the
// table at BX (AX, X10 clobbered).
#define NLDWZ8 \
	VPERMT2B    Z19, Z17, Z2; \
	VPERMT2B    Z25, Z17, Z22; \
	VPUNPCKLQDQ X22, X2, X4; \
	VCVTPH2PS   X4, Y4

// MXDWZ8: 2^(e−128) (e8m0Half) of the eight blocks' exponent bytes e,
// computed: VPERMT2B (index Z18, zeroing mask K3) moves e of the four
// pairs' raw bytes Z2, Z19 and Z22, Z25 into dword lanes (Z2, Z22
// clobbered); then the float bits (e−1)<<23, or for e < 2 the subnormal
// 0x00200000<<e (Y12 ones, Y23 twos, Y14 0x00200000; Y11, K1 clobbered).
#define MXDWZ8 \
	VPERMT2B.Z   Z19, Z18, K3, Z2; \
	VPERMT2B.Z   Z25, Z18, K3, Z22; \
	VINSERTI32X4 $1, X22, Y2, Y4; \
	VPSLLVD      Y4, Y14, Y11; \
	VPCMPUD      $1, Y23, Y4, K1; \
	VPSUBD       Y12, Y4, Y4; \
	VPSLLD       $23, Y4, Y4; \
	VMOVDQA32    Y11, K1, Y4

// NZV1(co, DW1): one block at 0(SI) (the row's last 1-7), its biased dot
// reduced on 256 bits and corrected by 0(R11), then
// X0 += float32(s·float32(P)).
#define NZV1(co, DW1) \
	VBROADCASTI128 co(SI), Y2; \
	VPSRLW         $4, Y2, K4, Y2; \
	VPANDD         Y15, Y2, Y2; \
	VPSHUFB        Y2, Y13, Y2; \
	VPXORD         Y1, Y1, Y1; \
	VPDPBUSD       (DI), Y2, Y1; \
	VEXTRACTI128   $1, Y1, X3; \
	VPADDD         X3, X1, X1; \
	VPHADDD        X1, X1, X1; \
	VPHADDD        X1, X1, X1; \
	VMOVD          (R11), X3; \
	VPADDD         X3, X1, X1; \
	VCVTDQ2PS      X1, X1; \
	DW1; \
	VMULSS         (DX), X4, X4; \
	VMULSS         X4, X1, X1; \
	VADDSS         X1, X0, X0

#define NLDWZ1 \
	MOVWLZX   (SI), AX; \
	VMOVD     AX, X4; \
	VCVTPH2PS X4, X4

#define MXDWZ1 \
	MOVBLZX (SI), AX; \
	VMOVSS  (BX)(AX*4), X4

// NZVSETUP loads the constants: level+128 table tab, code index idx, pair
// bytes mask.
#define NZVSETUP(tab, idx, mask) \
	MOVQ            dst+0(FP), R8; \
	MOVQ            w+16(FP), R10; \
	BCAST32($0x0f0f0f0f, Z15, X15); \
	VBROADCASTI32X4 tab(SB), Z13; \
	MOVL            $0xff00ff00, AX; \
	KMOVD           AX, K4; \
	MOVQ            mask, AX; \
	KMOVQ           AX, K5; \
	VMOVDQU64       idx(SB), Z16; \
	VBROADCASTI32X4 nzvdw<>(SB), Z17; \
	VMOVDQU64       nzvp8<>(SB), Z26

// NZVROWS is the row loop: bb block bytes, codes at +co,
// weight scales DW4 and DW1, labels prefixed by L.
#define NZVROWS(bb, co, DW8, DW1, row, loop8, tail, loop1, sum) \
row: \
	ROWSTART; \
	MOVQ   ns+64(FP), R11; \
	VXORPS Y0, Y0, Y0; \
	SUBQ   $8, CX; \
	JL     tail; \
loop8: \
	PREFETCHT1 NZVPF(SI); \
	PREFETCHT1 NZVPF+64(SI); \
	PREFETCHT1 NZVPF+128(SI); \
	NZVINT(0, 0, Z2, Z3, Z5); \
	NZVINT(2*bb, 64, Z19, Z20, Z6); \
	NZVINT(4*bb, 128, Z22, Z3, Z7); \
	NZVINT(6*bb, 192, Z25, Z20, Z8); \
	NZVRED8; \
	VPADDD  (R11), Y9, Y9; \
	DW8; \
	NZVACC8; \
	ADDQ $8*bb, SI; \
	ADDQ $256, DI; \
	ADDQ $32, DX; \
	ADDQ $32, R11; \
	SUBQ $8, CX; \
	JGE  loop8; \
tail: \
	ADDQ $8, CX; \
	JZ   sum; \
loop1: \
	NZV1(co, DW1); \
	ADDQ $bb, SI; \
	ADDQ $32, DI; \
	ADDQ $4, DX; \
	ADDQ $4, R11; \
	DECQ CX; \
	JNZ  loop1; \
sum: \
	ROWEND(row)

// func qdotIQ4_NLZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int, ns *int32)
TEXT ·qdotIQ4_NLZV(SB), NOSPLIT, $32-72
	NZVSETUP(nzvnlb<>, nzvnl<>, $0xfffffffff)
	NZVROWS(18, 2, NLDWZ8, NLDWZ1, nlzvrow, nlzvloop8, nlzvtail, nlzvloop1, nlzvsum)

// func qdotMXFP4ZV(dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32, aux unsafe.Pointer, nb int, ns *int32)
// aux: e8m0HalfTab.
TEXT ·qdotMXFP4ZV(SB), NOSPLIT, $32-72
	NZVSETUP(nzvmxb<>, nzvmx<>, $0x3ffffffff)
	VBROADCASTI32X4 nzvmxe<>(SB), Z18
	MOVL            $0x1111, AX
	KMOVW           AX, K3
	BCAST32($1, Z12, X12)
	BCAST32($2, Z23, X23)
	BCAST32($0x00200000, Z14, X14)
	NZVROWS(17, 1, MXDWZ8, MXDWZ1, mxzvrow, mxzvloop8, mxzvtail, mxzvloop1, mxzvsum)

// ---------------------------------------------------------------- tiles: 4 rows × 16 tokens

// qdotNLTileZ computes 4 rows × 16 tokens of IQ4_NL or MXFP4 weights (see
// dotQRowsNLTile): the rows unpacked by nlUnpack4 into ws (per block 160
// bytes: the four rows' 32 signed levels, their corrections −128·Σlevel
// as int32, their dw as float32), the tokens packed by nlPack into pk
// (per block 576 bytes: eight 64-byte chunks k holding bytes 4k..4k+3 of
// the 16 tokens' activations, XOR 0x80, then the 16 tokens' da). Tokens
// sit in the 16 lanes: per block and row, the correction broadcast, eight
// VPDPBUSD of the chunks by the row's levels 4k..4k+3 (embedded
// broadcast) give the 16 tokens' exact dots P_b; one VMULPS forms the 16
// s_b = dw·da, then VCVTDQ2PS, VMULPS, VADDPS into the row's accumulator —
// the row dot's float steps in the same order, so each (row, token) is
// its bits (TestNLTile, TestMatMulBatchInvariant). dst[t·ldd + r]
// receives row r, token t (ldd in floats) for the tokens t whose bit is
// set in mask (a last group may hold fewer than 16).
// Registers: Z0-Z3 the rows' accumulators; Z4-Z7 their dots; Z8-Z11 their
// scales; Z16-Z23 the chunks; Z24 the da; Z25 the store indices t·ldd.

DATA nltidx<>+0(SB)/8, $0x0000000100000000
DATA nltidx<>+8(SB)/8, $0x0000000300000002
DATA nltidx<>+16(SB)/8, $0x0000000500000004
DATA nltidx<>+24(SB)/8, $0x0000000700000006
DATA nltidx<>+32(SB)/8, $0x0000000900000008
DATA nltidx<>+40(SB)/8, $0x0000000b0000000a
DATA nltidx<>+48(SB)/8, $0x0000000d0000000c
DATA nltidx<>+56(SB)/8, $0x0000000f0000000e
GLOBL nltidx<>(SB), RODATA|NOPTR, $64

// NLTROW(r, T, S, ACC): row r of the block at SI.
#define NLTROW(r, T, S, ACC) \
	VPBROADCASTD  128+4*r(SI), T; \
	VPDPBUSD.BCST 32*r(SI), Z16, T; \
	VPDPBUSD.BCST 32*r+4(SI), Z17, T; \
	VPDPBUSD.BCST 32*r+8(SI), Z18, T; \
	VPDPBUSD.BCST 32*r+12(SI), Z19, T; \
	VPDPBUSD.BCST 32*r+16(SI), Z20, T; \
	VPDPBUSD.BCST 32*r+20(SI), Z21, T; \
	VPDPBUSD.BCST 32*r+24(SI), Z22, T; \
	VPDPBUSD.BCST 32*r+28(SI), Z23, T; \
	VMULPS.BCST   144+4*r(SI), Z24, S; \
	VCVTDQ2PS     T, T; \
	VMULPS        S, T, T; \
	VADDPS        T, ACC, ACC

// func qdotNLTileZ(dst *float32, ldd int, ws *byte, pk *byte, nb int, mask int)
TEXT ·qdotNLTileZ(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), R8
	MOVQ         ldd+8(FP), AX
	MOVQ         ws+16(FP), SI
	MOVQ         pk+24(FP), DI
	MOVQ         nb+32(FP), CX
	VMOVD        AX, X25
	VPBROADCASTD X25, Z25
	VPMULLD      nltidx<>(SB), Z25, Z25
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3

	PCALIGN $64

nltloop:
	VMOVDQU64 (DI), Z16
	VMOVDQU64 64(DI), Z17
	VMOVDQU64 128(DI), Z18
	VMOVDQU64 192(DI), Z19
	VMOVDQU64 256(DI), Z20
	VMOVDQU64 320(DI), Z21
	VMOVDQU64 384(DI), Z22
	VMOVDQU64 448(DI), Z23
	VMOVUPS   512(DI), Z24
	NLTROW(0, Z4, Z8, Z0)
	NLTROW(1, Z5, Z9, Z1)
	NLTROW(2, Z6, Z10, Z2)
	NLTROW(3, Z7, Z11, Z3)
	ADDQ $160, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  nltloop

	MOVQ        mask+40(FP), AX
	KMOVW       AX, K1
	VSCATTERDPS Z0, K1, (R8)(Z25*4)
	KMOVW       AX, K1
	VSCATTERDPS Z1, K1, 4(R8)(Z25*4)
	KMOVW       AX, K1
	VSCATTERDPS Z2, K1, 8(R8)(Z25*4)
	KMOVW       AX, K1
	VSCATTERDPS Z3, K1, 12(R8)(Z25*4)
	VZEROUPPER
	RET

// nlUnpack4: four rows (at w, w+stride, ...) of nb blocks into ws (the
// layout of qdotNLTileZ). Per block and row: the 16 code bytes split into
// 32 nibbles in element order, looked up (VPSHUFB) in the signed level
// table; −128·Σlevel by VPDPBUSD of 0x80 bytes and the levels, summed
// (VEXTRACTI128, VPADDD, VPHADDD ×2), negated; dw as float32.
// Registers: R9-R12 the rows' blocks; Y13 the level table; Y14 0x80
// bytes; Y15 0x0f bytes; Y12 0.

DATA nlulv<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA nlulv<>+8(SB)/8, $0x7159453526190d01
GLOBL nlulv<>(SB), RODATA|NOPTR, $16

DATA mxulv<>+0(SB)/8, $0x0c08060403020100
DATA mxulv<>+8(SB)/8, $0xf4f8fafcfdfeff00
GLOBL mxulv<>(SB), RODATA|NOPTR, $16

// NLUROW(R, r, co, DW): row r's block at (R).
#define NLUROW(R, r, co, DW) \
	VMOVDQU        co(R), X2; \
	VPSRLW         $4, X2, X3; \
	VINSERTI128    $1, X3, Y2, Y2; \
	VPAND          Y15, Y2, Y2; \
	VPSHUFB        Y2, Y13, Y2; \
	VMOVDQU        Y2, 32*r(DI); \
	VPXORD         Y3, Y3, Y3; \
	VPDPBUSD       Y2, Y14, Y3; \
	VEXTRACTI128   $1, Y3, X4; \
	VPADDD         X4, X3, X3; \
	VPHADDD        X3, X3, X3; \
	VPHADDD        X3, X3, X3; \
	VPSUBD         X3, X12, X3; \
	VMOVD          X3, 128+4*r(DI); \
	DW(R, r)

#define NLUDW(R, r) \
	MOVWLZX   (R), AX; \
	VMOVD     AX, X4; \
	VCVTPH2PS X4, X4; \
	VMOVSS    X4, 144+4*r(DI)

#define MXUDW(R, r) \
	MOVBLZX (R), AX; \
	MOVL    (BX)(AX*4), AX; \
	MOVL    AX, 144+4*r(DI)

#define NLUBODY(bb, co, DW, loop) \
	MOVQ            ws+0(FP), DI; \
	MOVQ            w+8(FP), R9; \
	MOVQ            stride+16(FP), DX; \
	MOVQ            nb+24(FP), CX; \
	MOVQ            aux+32(FP), BX; \
	LEAQ            (R9)(DX*1), R10; \
	LEAQ            (R10)(DX*1), R11; \
	LEAQ            (R11)(DX*1), R12; \
	BCAST32($0x0f0f0f0f, Y15, X15); \
	BCAST32($0x80808080, Y14, X14); \
	VPXOR           Y12, Y12, Y12; \
loop: \
	NLUROW(R9, 0, co, DW); \
	NLUROW(R10, 1, co, DW); \
	NLUROW(R11, 2, co, DW); \
	NLUROW(R12, 3, co, DW); \
	ADDQ $bb, R9; \
	ADDQ $bb, R10; \
	ADDQ $bb, R11; \
	ADDQ $bb, R12; \
	ADDQ $160, DI; \
	DECQ CX; \
	JNZ  loop; \
	VZEROUPPER; \
	RET

// func nlUnpack4IQ4NL(ws *byte, w *byte, stride uintptr, nb int, aux unsafe.Pointer)
TEXT ·nlUnpack4IQ4NL(SB), NOSPLIT, $0-40
	VBROADCASTI128 nlulv<>(SB), Y13
	NLUBODY(18, 2, NLUDW, nluloop)

// func nlUnpack4MXFP4(ws *byte, w *byte, stride uintptr, nb int, aux unsafe.Pointer)
// aux: e8m0HalfTab.
TEXT ·nlUnpack4MXFP4(SB), NOSPLIT, $0-40
	VBROADCASTI128 mxulv<>(SB), Y13
	NLUBODY(17, 1, MXUDW, mxuloop)
