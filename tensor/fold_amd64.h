// Shared by gemm_quant_amd64.s and rowdot_quant_amd64.s.

// H2 and H4 fold int32 vectors without VPHADDD (4× slower than an FMA
// here): H2 leaves a = [a0+a1, b0+b1, a2+a3, b2+b3] per 128-bit half, H4
// applied to two H2 results c = [a b a b], d = [c d c d] leaves
// c = [Σa, Σb, Σc, Σd] per half. Two blends, a shuffle and an add each.
#define H2(b, a, t) \
	VPBLENDD $0xAA, b, a, t; \
	VPBLENDD $0xAA, a, b, a; \
	VPSHUFD  $0xB1, a, a; \
	VPADDD   t, a, a

#define H4(d, c, t) \
	VPBLENDD $0xCC, d, c, t; \
	VPBLENDD $0xCC, c, d, c; \
	VPSHUFD  $0x4E, c, c; \
	VPADDD   t, c, c
