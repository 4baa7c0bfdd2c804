package tensor

// Wrappers around vecops_amd64.s, used when hasSIMD is set. Each handles
// the longest multiple-of-8 prefix of its input and returns how far it got;
// the Go loops of vecops.go finish the tail (or everything without AVX2).

//go:noescape
func expShiftAVX2(x *float32, n int, mx float32) float32

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func swigluAVX2(gate *float32, up *float32, n int)

//go:noescape
func mulSigmoidAVX2(x *float32, gate *float32, n int)

// vecMax returns max x over the longest prefix of x handled by the
// assembly (a multiple of 8 long) and that prefix's length; 0, 0 without.
func vecMax(x []float32) (float32, int) {
	n8 := len(x) &^ 7
	if !hasSIMD || n8 == 0 {
		return 0, 0
	}
	return maxAVX2(&x[0], n8), n8
}

// vecExpShift sets x[i] = e^(x[i]-mx) over the longest prefix handled by
// the assembly; it returns the prefix's sum and length.
func vecExpShift(x []float32, mx float32) (float32, int) {
	n8 := len(x) &^ 7
	if !hasSIMD || n8 == 0 {
		return 0, 0
	}
	return expShiftAVX2(&x[0], n8, mx), n8
}

// vecSwiGLU is SwiGLU over the longest prefix handled by the assembly; it
// returns the prefix's length.
func vecSwiGLU(g, u []float32) int {
	n8 := len(g) &^ 7
	if !hasSIMD || n8 == 0 {
		return 0
	}
	_ = u[n8-1]
	swigluAVX2(&g[0], &u[0], n8)
	return n8
}

// vecMulSigmoid is MulSigmoid over the longest prefix handled by the
// assembly; it returns the prefix's length.
func vecMulSigmoid(x, g []float32) int {
	n8 := len(x) &^ 7
	if !hasSIMD || n8 == 0 {
		return 0
	}
	_ = g[n8-1]
	mulSigmoidAVX2(&x[0], &g[0], n8)
	return n8
}

//go:noescape
func causalConv4AVX2(out, x, s0, s1, s2, kernel *float32, n int)

// causalConv4SIMD runs CausalConv4's first n &^ 7 channels in AVX2 and
// returns how many it did.
func causalConv4SIMD(out, x, s0, s1, s2, kernel []float32) int {
	m := len(out) &^ 7
	if m > 0 {
		causalConv4AVX2(&out[0], &x[0], &s0[0], &s1[0], &s2[0], &kernel[0], m)
	}
	return m
}

// ssmScanRowAVX2 is SSMScanRow's first n (a multiple of 8) state values,
// its eight lane sums left in lanes.
//
//go:noescape
func ssmScanRowAVX2(s, b, c *float32, n int, a, xdt float32, lanes *[8]float32)

// ssmScanRowSIMD runs SSMScanRow's multiple-of-8 prefix in AVX2 and
// returns its length (0 without AVX2).
func ssmScanRowSIMD(s, B, C []float32, a, xdt float32, lanes *[8]float32) int {
	n8 := len(s) &^ 7
	if !hasSIMD || n8 == 0 {
		return 0
	}
	ssmScanRowAVX2(&s[0], &B[0], &C[0], n8, a, xdt, lanes)
	return n8
}

// ssmScanHeadAVX2 is SSMScanHead for n (a multiple of 8) state values per
// channel and p channels.
//
//go:noescape
func ssmScanHeadAVX2(s, b, c, x, y *float32, n, p int, a, dt float32)

// ssmScanHeadSIMD runs SSMScanHead in AVX2 (len(B) a multiple of 8) and
// reports whether it did.
func ssmScanHeadSIMD(S, B, C, x, y []float32, a, dt float32) bool {
	if !hasSIMD {
		return false
	}
	ssmScanHeadAVX2(&S[0], &B[0], &C[0], &x[0], &y[0], len(B), len(x), a, dt)
	return true
}
