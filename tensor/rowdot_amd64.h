// Macros shared by the amd64 row-dot kernels (rowdot_quant_amd64.s,
// rowdot_iq_amd64.s). Both take the arguments
// (dst *float32, rows int, w *byte, stride uintptr, q *int8, d *float32,
// aux unsafe.Pointer, nb int), with R10 walking the weight rows and R8 dst.

// ROWSTART points the walkers at the start of the current row.
#define ROWSTART \
	MOVQ R10, SI; \
	MOVQ q+32(FP), DI; \
	MOVQ d+40(FP), DX; \
	MOVQ aux+48(FP), BX; \
	MOVQ nb+56(FP), CX

// ROWEND stores X0's low float as this row's result and moves to the next
// row, jumping to label if any are left.
#define ROWEND(label) \
	VMOVSS X0, (R8); \
	ADDQ   $4, R8; \
	ADDQ   stride+24(FP), R10; \
	DECQ   rows+8(FP); \
	JNZ    label; \
	VZEROUPPER; \
	RET

// FOLD8 folds the 8-lane accumulator Y (X its low half) into X's low
// float as ((y0+y1)+(y2+y3)) + ((y4+y5)+(y6+y7)) — the order in which the
// multi-token kernels (qdotQ8_0x4SIMD) fold theirs. X9 is clobbered.
#define FOLD8(Y, X) \
	VEXTRACTF128 $1, Y, X9; \
	VHADDPS      X9, X, X; \
	VHADDPS      X, X, X; \
	VMOVSHDUP    X, X9; \
	VADDSS       X9, X, X

// BCAST32 broadcasts the 32-bit constant val to every lane of reg (xreg its
// low half; AX clobbered).
#define BCAST32(val, reg, xreg) \
	MOVL         val, AX; \
	VMOVD        AX, xreg; \
	VPBROADCASTD xreg, reg
