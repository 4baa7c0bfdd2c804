// F32 → F16 rows with F16C (see encode_f16.go): 8 values per step,
// VCVTPS2PH with immediate 0 (round to nearest even whatever MXCSR says),
// NaN lanes first replaced by sign | 0x7fc00000, which encodes to
// sign | 0x7e00 as F32ToF16 encodes every NaN.

#include "textflag.h"

// func encF16SIMD(dst *byte, src *float32, n int)
// n a positive multiple of 8. Y5 the quiet NaN, Y6 the sign bit.
TEXT ·encF16SIMD(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	SHRQ         $3, CX
	JZ           encf16done
	MOVL         $0x7fc00000, AX
	MOVD         AX, X5
	VPBROADCASTD X5, Y5
	MOVL         $0x80000000, AX
	MOVD         AX, X6
	VPBROADCASTD X6, Y6

encf16loop:
	VMOVUPS   (SI), Y0
	VCMPPS    $3, Y0, Y0, Y1
	VANDPS    Y6, Y0, Y2
	VORPS     Y5, Y2, Y2
	VBLENDVPS Y1, Y2, Y0, Y0
	VCVTPS2PH $0, Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       encf16loop

encf16done:
	VZEROUPPER
	RET
