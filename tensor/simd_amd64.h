// Macros shared by the amd64 float kernels (kernels_float_amd64.s,
// kernels_float_avx512_amd64.s, deltarule_amd64.s).

// ZERO8 zeroes Y0-Y7 (eight ymm accumulators).
#define ZERO8 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7
