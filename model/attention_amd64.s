// AVX2 + FMA kernels of the attention inner loops (attention_amd64.go
// dispatches here when the CPU has them and the head width is a multiple
// of 8; attention.go holds the Go versions they are tested against).

#include "textflag.h"
#include "attention_amd64.h"

// func attnScoresAVX2(q *float32, k *float32, stride uintptr, n int, hd int, scale float32, out *float32)
//
// out[i] = scale · Σ_{c<hd} q[c]·k_i[c] for the n rows k_i = k + i·stride
// (stride in bytes); hd is a positive multiple of 8. Rows go eight at a
// time, then at most one group of four, then one by one, each row with one
// accumulator over its columns, folded as attention_amd64.h states (the
// bits of attnScores3AVX2 and any split of the rows).
TEXT ·attnScoresAVX2(SB), NOSPLIT, $0-56
	MOVQ         q+0(FP), DI
	MOVQ         k+8(FP), SI
	MOVQ         stride+16(FP), BX
	MOVQ         n+24(FP), R9
	MOVQ         hd+32(FP), R10
	VBROADCASTSS scale+40(FP), Y15
	MOVQ         out+48(FP), DX
	LEAQ         (R10*4), R13 // row width in bytes
	SUBQ         $8, R9
	JL           s4start

	// Eight rows per step: rows 0-3 at SI, SI+BX, SI+2BX, R11 = SI+3BX,
	// rows 4-7 the same from R8 = SI+4BX (R12 = R8+3BX); q is loaded once
	// per 8 columns for all eight, one accumulator per row.
s8rows:
	LEAQ   (SI)(BX*4), R8
	LEAQ   (SI)(BX*2), R11
	ADDQ   BX, R11
	LEAQ   (R8)(BX*2), R12
	ADDQ   BX, R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   R10, CX

s8loop:
	VMOVUPS     (DI), Y8
	VFMADD231PS (SI), Y8, Y0
	VFMADD231PS (SI)(BX*1), Y8, Y1
	VFMADD231PS (SI)(BX*2), Y8, Y2
	VFMADD231PS (R11), Y8, Y3
	VFMADD231PS (R8), Y8, Y4
	VFMADD231PS (R8)(BX*1), Y8, Y5
	VFMADD231PS (R8)(BX*2), Y8, Y6
	VFMADD231PS (R12), Y8, Y7
	ADDQ        $32, DI
	ADDQ        $32, SI
	ADDQ        $32, R8
	ADDQ        $32, R11
	ADDQ        $32, R12
	SUBQ        $8, CX
	JNZ         s8loop

	// Fold the eight accumulators into one vector of the eight row sums.
	VHADDPS    Y1, Y0, Y0
	VHADDPS    Y3, Y2, Y2
	VHADDPS    Y5, Y4, Y4
	VHADDPS    Y7, Y6, Y6
	VHADDPS    Y2, Y0, Y0     // rows 0-3: columns ≡ 0-3 | 4-7 (mod 8)
	VHADDPS    Y6, Y4, Y4     // rows 4-7
	VPERM2F128 $0x20, Y4, Y0, Y1
	VPERM2F128 $0x31, Y4, Y0, Y2
	VADDPS     Y2, Y1, Y0
	VMULPS     Y15, Y0, Y0
	VMOVUPS    Y0, (DX)
	ADDQ       $32, DX
	SUBQ       R13, DI        // q back to its start
	SUBQ       R13, SI
	LEAQ       (SI)(BX*8), SI // row 8
	SUBQ       $8, R9
	JGE        s8rows

s4start:
	ADDQ $4, R9 // rows left - 4
	JL   s1start

s4rows:
	LEAQ   (SI)(BX*1), R11 // row 1
	LEAQ   (SI)(BX*2), R8  // row 2
	LEAQ   (R8)(BX*1), R12 // row 3
	XORQ   AX, AX          // column byte offset
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R10, CX

s4loop:
	VMOVUPS     (DI)(AX*1), Y8
	VFMADD231PS (SI)(AX*1), Y8, Y0
	VFMADD231PS (R11)(AX*1), Y8, Y1
	VFMADD231PS (R8)(AX*1), Y8, Y2
	VFMADD231PS (R12)(AX*1), Y8, Y3
	ADDQ        $32, AX
	SUBQ        $8, CX
	JNZ         s4loop
	FOLD4ROWS(Y0, Y1, Y2, Y3, X0, X1)
	VMULPS      X15, X0, X0
	VMOVUPS     X0, (DX)
	ADDQ        $16, DX
	LEAQ        (R8)(BX*2), SI // row 4
	SUBQ        $4, R9

s1start:
	ADDQ $4, R9
	JZ   sdone

s1rows:
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0
	MOVQ   R10, CX

s1loop:
	VMOVUPS     (DI)(AX*1), Y8
	VFMADD231PS (SI)(AX*1), Y8, Y0
	ADDQ        $32, AX
	SUBQ        $8, CX
	JG          s1loop
	FOLD1ROW(Y0, X0, X1)
	VMULSS       X15, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         $4, DX
	ADDQ         BX, SI
	DECQ         R9
	JNZ          s1rows

sdone:
	VZEROUPPER
	RET

// func attnAccumAVX2(out *float32, v *float32, stride uintptr, n int, hd int, a *float32)
//
// out[c] += Σ_{i<n} a[i]·v_i[c] for c < hd and the n ≥ 1 rows
// v_i = v + i·stride (stride in bytes); hd is a positive multiple of 8.
// Columns go 64 at a time held in Y0-Y7 across all rows (eight
// independent FMA chains), then 32, then 8 at a time; every column takes
// its rows' FMAs in order, so the bits do not depend on how the rows are
// split into calls or on the multi-query kernels (attnAccum3AVX2) taking
// them.
TEXT ·attnAccumAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ stride+16(FP), BX
	MOVQ n+24(FP), R9
	MOVQ hd+32(FP), CX
	MOVQ a+40(FP), R10

a64:
	CMPQ    CX, $64
	JL      a32
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ    SI, R11
	MOVQ    R10, R12
	MOVQ    R9, R13

a64row:
	VBROADCASTSS (R12), Y8
	VFMADD231PS  (R11), Y8, Y0
	VFMADD231PS  32(R11), Y8, Y1
	VFMADD231PS  64(R11), Y8, Y2
	VFMADD231PS  96(R11), Y8, Y3
	VFMADD231PS  128(R11), Y8, Y4
	VFMADD231PS  160(R11), Y8, Y5
	VFMADD231PS  192(R11), Y8, Y6
	VFMADD231PS  224(R11), Y8, Y7
	ADDQ         $4, R12
	ADDQ         BX, R11
	DECQ         R13
	JNZ          a64row
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	VMOVUPS      Y4, 128(DI)
	VMOVUPS      Y5, 160(DI)
	VMOVUPS      Y6, 192(DI)
	VMOVUPS      Y7, 224(DI)
	ADDQ         $256, DI
	ADDQ         $256, SI
	SUBQ         $64, CX
	JMP          a64

a32:
	// 32 columns in Y0-Y3 over all rows, one row a step: each column's
	// FMAs in row order, as in the 64-column steps (and attnAccum3AVX2),
	// so a run's bits do not depend on how it is split into calls.
	CMPQ    CX, $32
	JL      a8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    SI, R11
	MOVQ    R10, R12
	MOVQ    R9, R13

a32row:
	VBROADCASTSS (R12), Y8
	VFMADD231PS  (R11), Y8, Y0
	VFMADD231PS  32(R11), Y8, Y1
	VFMADD231PS  64(R11), Y8, Y2
	VFMADD231PS  96(R11), Y8, Y3
	ADDQ         $4, R12
	ADDQ         BX, R11
	DECQ         R13
	JNZ          a32row
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $128, SI
	SUBQ         $32, CX

a8:
	CMPQ    CX, $8
	JL      adone
	VMOVUPS (DI), Y0
	MOVQ    SI, R11
	MOVQ    R10, R12
	MOVQ    R9, R13

a8row:
	VBROADCASTSS (R12), Y8
	VFMADD231PS  (R11), Y8, Y0
	ADDQ         $4, R12
	ADDQ         BX, R11
	DECQ         R13
	JNZ          a8row
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	SUBQ         $8, CX
	JMP          a8

adone:
	VZEROUPPER
	RET

// func attnScoresF16AVX2(q *float32, k *byte, stride uintptr, n int, hd int, scale float32, out *float32)
//
// attnScoresAVX2 over F16 rows: out[i] = scale · Σ_{c<hd} q[c]·k_i[c] with
// k_i the hd halves at k + i·stride (stride in bytes), widened eight at a
// time by VCVTPH2PS (F16C); hd is a positive multiple of 8. Rows go eight
// at a time (q loaded once per 8 columns for all eight rows), then at most
// one group of four, then one by one, with attnScoresAVX2's accumulators
// and fold: F16 rows give the bits attnScoresAVX2 gives for the same
// values widened to float32.
TEXT ·attnScoresF16AVX2(SB), NOSPLIT, $0-56
	MOVQ         q+0(FP), DI
	MOVQ         k+8(FP), SI
	MOVQ         stride+16(FP), BX
	MOVQ         n+24(FP), R9
	MOVQ         hd+32(FP), R10
	VBROADCASTSS scale+40(FP), Y15
	MOVQ         out+48(FP), DX
	LEAQ         (R10*4), R13 // q width in bytes
	LEAQ         (R10*2), R14 // row width in bytes
	SUBQ         $8, R9
	JL           h4start

h8rows:
	LEAQ   (SI)(BX*4), R8
	LEAQ   (SI)(BX*2), R11
	ADDQ   BX, R11
	LEAQ   (R8)(BX*2), R12
	ADDQ   BX, R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   R10, CX

h8loop:
	VMOVUPS     (DI), Y8
	VCVTPH2PS   (SI), Y9
	VCVTPH2PS   (SI)(BX*1), Y10
	VCVTPH2PS   (SI)(BX*2), Y11
	VCVTPH2PS   (R11), Y12
	VFMADD231PS Y9, Y8, Y0
	VFMADD231PS Y10, Y8, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y12, Y8, Y3
	VCVTPH2PS   (R8), Y9
	VCVTPH2PS   (R8)(BX*1), Y10
	VCVTPH2PS   (R8)(BX*2), Y11
	VCVTPH2PS   (R12), Y12
	VFMADD231PS Y9, Y8, Y4
	VFMADD231PS Y10, Y8, Y5
	VFMADD231PS Y11, Y8, Y6
	VFMADD231PS Y12, Y8, Y7
	ADDQ        $32, DI
	ADDQ        $16, SI
	ADDQ        $16, R8
	ADDQ        $16, R11
	ADDQ        $16, R12
	SUBQ        $8, CX
	JNZ         h8loop

	VHADDPS    Y1, Y0, Y0
	VHADDPS    Y3, Y2, Y2
	VHADDPS    Y5, Y4, Y4
	VHADDPS    Y7, Y6, Y6
	VHADDPS    Y2, Y0, Y0
	VHADDPS    Y6, Y4, Y4
	VPERM2F128 $0x20, Y4, Y0, Y1
	VPERM2F128 $0x31, Y4, Y0, Y2
	VADDPS     Y2, Y1, Y0
	VMULPS     Y15, Y0, Y0
	VMOVUPS    Y0, (DX)
	ADDQ       $32, DX
	SUBQ       R13, DI        // q back to its start
	SUBQ       R14, SI
	LEAQ       (SI)(BX*8), SI // row 8
	SUBQ       $8, R9
	JGE        h8rows

h4start:
	ADDQ $4, R9 // rows left - 4
	JL   h1start

	// Four rows, one accumulator each, as attnScoresAVX2's s4rows: SI,
	// R11, R8, R12 walk rows 0-3 eight halves at a time, AX the q byte
	// offset.
	LEAQ   (SI)(BX*1), R11
	LEAQ   (SI)(BX*2), R8
	LEAQ   (R8)(BX*1), R12
	XORQ   AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R10, CX

h4loop:
	VMOVUPS     (DI)(AX*1), Y8
	VCVTPH2PS   (SI), Y9
	VCVTPH2PS   (R11), Y10
	VCVTPH2PS   (R8), Y11
	VCVTPH2PS   (R12), Y12
	VFMADD231PS Y9, Y8, Y0
	VFMADD231PS Y10, Y8, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y12, Y8, Y3
	ADDQ        $32, AX
	ADDQ        $16, SI
	ADDQ        $16, R11
	ADDQ        $16, R8
	ADDQ        $16, R12
	SUBQ        $8, CX
	JNZ         h4loop
	FOLD4ROWS(Y0, Y1, Y2, Y3, X0, X1)
	VMULPS      X15, X0, X0
	VMOVUPS     X0, (DX)
	ADDQ        $16, DX
	SUBQ        R14, SI        // row 0 back to its start
	LEAQ        (SI)(BX*4), SI // row 4
	SUBQ        $4, R9

h1start:
	ADDQ $4, R9
	JZ   hdone

h1rows:
	XORQ   AX, AX // q byte offset
	XORQ   R8, R8 // row byte offset
	VXORPS Y0, Y0, Y0
	MOVQ   R10, CX

h1loop:
	VMOVUPS     (DI)(AX*1), Y8
	VCVTPH2PS   (SI)(R8*1), Y9
	VFMADD231PS Y9, Y8, Y0
	ADDQ        $32, AX
	ADDQ        $16, R8
	SUBQ        $8, CX
	JG          h1loop
	FOLD1ROW(Y0, X0, X1)
	VMULSS       X15, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         $4, DX
	ADDQ         BX, SI
	DECQ         R9
	JNZ          h1rows

hdone:
	VZEROUPPER
	RET

// func attnAccumF16AVX2(out *float32, v *byte, stride uintptr, n int, hd int, a *float32)
//
// attnAccumAVX2 over F16 rows: out[c] += Σ_{i<n} a[i]·v_i[c] with v_i the
// hd halves at v + i·stride (stride in bytes); n ≥ 1, hd a positive
// multiple of 8. Columns go 64 at a time held in Y0-Y7 across all rows,
// then 32, then 8 at a time, as attnAccumAVX2.
TEXT ·attnAccumF16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ stride+16(FP), BX
	MOVQ n+24(FP), R9
	MOVQ hd+32(FP), CX
	MOVQ a+40(FP), R10

g64:
	CMPQ    CX, $64
	JL      g32
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ    SI, R11
	MOVQ    R10, R12
	MOVQ    R9, R13

g64row:
	VBROADCASTSS (R12), Y8
	VCVTPH2PS    (R11), Y9
	VCVTPH2PS    16(R11), Y10
	VCVTPH2PS    32(R11), Y11
	VCVTPH2PS    48(R11), Y12
	VFMADD231PS  Y9, Y8, Y0
	VFMADD231PS  Y10, Y8, Y1
	VFMADD231PS  Y11, Y8, Y2
	VFMADD231PS  Y12, Y8, Y3
	VCVTPH2PS    64(R11), Y9
	VCVTPH2PS    80(R11), Y10
	VCVTPH2PS    96(R11), Y11
	VCVTPH2PS    112(R11), Y12
	VFMADD231PS  Y9, Y8, Y4
	VFMADD231PS  Y10, Y8, Y5
	VFMADD231PS  Y11, Y8, Y6
	VFMADD231PS  Y12, Y8, Y7
	ADDQ         $4, R12
	ADDQ         BX, R11
	DECQ         R13
	JNZ          g64row
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	VMOVUPS      Y4, 128(DI)
	VMOVUPS      Y5, 160(DI)
	VMOVUPS      Y6, 192(DI)
	VMOVUPS      Y7, 224(DI)
	ADDQ         $256, DI
	ADDQ         $128, SI
	SUBQ         $64, CX
	JMP          g64

g32:
	// As a32: one row a step, each column's FMAs in row order.
	CMPQ    CX, $32
	JL      g8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    SI, R11
	MOVQ    R10, R12
	MOVQ    R9, R13

g32row:
	VBROADCASTSS (R12), Y8
	VCVTPH2PS    (R11), Y10
	VCVTPH2PS    16(R11), Y11
	VCVTPH2PS    32(R11), Y12
	VCVTPH2PS    48(R11), Y13
	VFMADD231PS  Y10, Y8, Y0
	VFMADD231PS  Y11, Y8, Y1
	VFMADD231PS  Y12, Y8, Y2
	VFMADD231PS  Y13, Y8, Y3
	ADDQ         $4, R12
	ADDQ         BX, R11
	DECQ         R13
	JNZ          g32row
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $64, SI
	SUBQ         $32, CX

g8:
	CMPQ    CX, $8
	JL      gdone
	VMOVUPS (DI), Y0
	MOVQ    SI, R11
	MOVQ    R10, R12
	MOVQ    R9, R13

g8row:
	VBROADCASTSS (R12), Y8
	VCVTPH2PS    (R11), Y9
	VFMADD231PS  Y9, Y8, Y0
	ADDQ         $4, R12
	ADDQ         BX, R11
	DECQ         R13
	JNZ          g8row
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $16, SI
	SUBQ         $8, CX
	JMP          g8

gdone:
	VZEROUPPER
	RET
