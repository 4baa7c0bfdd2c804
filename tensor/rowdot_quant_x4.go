package tensor

// Multi-token row dots for the K-quants (Q4_K, Q5_K, Q6_K) and Q8_0 on
// amd64 (Q4_0's and Q5_0's packed kernels take four tokens too:
// rowdot_q4x8.go).
//
// A decode step of a few sequences multiplies W by 2-15 tokens. Run as
// row dots token after token (dotQRows), every token re-unpacks every
// weight super-block — nibbles masked and shifted, 6-bit scales and mins
// untangled — which at ~75 vector instructions per super-block and token
// costs more than the multiplies. The kernels qdotXxx_Kx4SIMD unpack a
// super-block once into registers and run it against four tokens: per
// 64 weights and token only 2 VPMADDUBSW, 2 VPMADDWD and 2 VPADDD remain;
// the four tokens' int32 sums are folded into one vector per super-block
// (lane t = token t) and scaled by the weights' d and the tokens' da in
// one float step. Groups of two tokens take x2 variants that multiply
// only those two (tokens 2 and 3 of the group repeat token 1). Q8_0
// (qdotQ8_0x4SIMD, x2; on AVX2 hosts its rows are packed instead,
// rowdot_q4x8.go) shares each block's load, |w| and scale among the
// tokens, but needs a float step per token and block of 32; where the CPU
// has AVX-512 VNNI (hasVNNI), qdotQ8_0x4VNNI (x2) replace the three
// integer steps per token with one VPDPBUSD and form the four tokens'
// dw·da in one multiply — the same int32 sums and float products. The integer
// sums are those of dotQRows, so results agree with the per-token row dots
// to float rounding (TestDotQRowsX4, TestMatMulFewTokens). A function of
// the weight type and n, rowwiseQuant, decides whether MatMul takes these
// row dots ((matmul.go)); hasQdotX4 only picks the kernel.

// qx4Offs holds the byte offsets, from the group's first token, of the
// four tokens' activations (q), bsums (bs) and results (dst); [0] = 0.
// A group of fewer than four tokens repeats its last token.
type qx4Offs struct{ q, bs, dst [4]uintptr }

// qdotX4On lets benchmarks compare with the per-token row dots in one run.
var qdotX4On = true

// hasQdotX4 reports whether weight type wt has multi-token kernels here.
func hasQdotX4(wt DType) bool {
	return qdotX4Arch && hasSIMD && qdotX4On && x4Invariant(wt)
}

// x4Invariant reports whether wt's multi-token kernels compute every
// token's dot bit for bit as its row dot (qdot…SIMD) does, so that MatMul
// may use them without making a token's result depend on its batch (see
// matmul.go); TestDotQRowsX4 checks it with ==.
func x4Invariant(wt DType) bool {
	switch wt {
	case Q8_0, Q4_K, Q5_K, Q6_K:
		return true
	}
	return false
}

// qx4Group fills toks with the group of tokens t0.. (at most four, fewer
// than n−t0 repeating the last) and returns how many are distinct.
func qx4Group(toks *[4]int, t0, n int) int {
	m := min(4, n-t0)
	for t := range toks {
		toks[t] = t0 + min(t, m-1)
	}
	return m
}

// qx4Scales fills dxv (nb, 8) with the Q8_K scales of tokens toks, whose
// activations (n elements each, nb = n/256 super-blocks) are in a:
// dxv[sb·8 + t] = dxv[sb·8 + 4 + t] = da of token toks[t], super-block sb.
func qx4Scales(dxv []float32, a *quantizedActs, n int, toks *[4]int) {
	nb := n / qkK
	_ = dxv[nb*8-1]
	for sb := range nb {
		for t, tok := range toks {
			d := a.D[tok*nb+sb]
			dxv[sb*8+t], dxv[sb*8+4+t] = d, d
		}
	}
}

// qx4ScalesQ8 fills dxv (nb, 4) with the block scales of tokens toks for
// Q8_0 (nb = n/32 blocks): dxv[b·4 + t] = da of token toks[t], block b —
// four per block in a row, so the VNNI kernels scale a block's weights by
// all four tokens in one multiply.
func qx4ScalesQ8(dxv []float32, a *quantizedActs, n int, toks *[4]int) {
	nb := n / 32
	_ = dxv[nb*4-1]
	for t, tok := range toks {
		d := a.D[tok*nb : (tok+1)*nb]
		for b, v := range d {
			dxv[b*4+t] = v
		}
	}
}

// qx4DxvLen is the length of one group's dxv for weight type wt and rows
// of n elements (qx4Scales, qx4ScalesQ8).
func qx4DxvLen(wt DType, n int) int {
	if wt == Q8_0 {
		return n / 32 * 4
	}
	return n / qkK * 8
}

// qx4Prep fills one group's dxv for wt (qx4Scales or qx4ScalesQ8).
func qx4Prep(dxv []float32, wt DType, a *quantizedActs, n int, toks *[4]int) {
	if wt == Q8_0 {
		qx4ScalesQ8(dxv, a, n, toks)
		return
	}
	qx4Scales(dxv, a, n, toks)
}

// dotQRowsX4 sets dst[tok·ldd + r] = dotQ(wt, row r, a, tok·n) for rows
// r in [lo, hi) of the weights w (row r at w[r·stride], n elements) and
// the tokens toks (ascending; see qx4Group), whose scales qx4Prep put in
// dxv (the AVX2 Q8_0 kernels read a.D instead). Requires hasQdotX4(wt)
// and activations quantized for wt.
func dotQRowsX4(wt DType, dst []float32, ldd int, w []byte, stride, lo, hi, n int, a *quantizedActs, toks *[4]int, dxv []float32) {
	if hi <= lo {
		return
	}
	bs, bb := qBlock(wt)
	if f, _ := actsFormat(wt); f != a.Format || n%bs != 0 {
		panic("tensor: dotQRowsX4: " + wt.String() + " weights with " + a.Format.String() + " activations")
	}
	nb := n / bs
	t0, t3 := toks[0], toks[3]
	_ = w[(hi-1)*stride+nb*bb-1]
	_ = a.Q[(t3+1)*n-1]
	_ = a.D[(t3+1)*nb-1]
	_ = dst[t3*ldd+hi-1]
	var offs qx4Offs
	for t, tok := range toks {
		if tok < t0 {
			panic("tensor: dotQRowsX4: tokens out of order")
		}
		offs.q[t] = uintptr((tok - t0) * n)
		offs.dst[t] = uintptr((tok - t0) * ldd * 4)
	}
	pd, pw, pq, st := &dst[t0*ldd+lo], &w[lo*stride], &a.Q[t0*n], uintptr(stride)
	if wt == Q8_0 {
		// The kernel reads the tokens' block scales through dxv and offs.bs.
		for t, tok := range toks {
			offs.bs[t] = uintptr((tok - t0) * nb * 4)
		}
		if hasVNNI {
			_ = dxv[nb*4-1]
		}
		switch two := toks[3] == toks[1]; {
		case hasVNNI && two:
			qdotQ8_0x2VNNI(pd, hi-lo, pw, st, pq, nil, &dxv[0], nb, &offs)
		case hasVNNI:
			qdotQ8_0x4VNNI(pd, hi-lo, pw, st, pq, nil, &dxv[0], nb, &offs)
		case two:
			qdotQ8_0x2SIMD(pd, hi-lo, pw, st, pq, nil, &a.D[t0*nb], nb, &offs)
		default:
			qdotQ8_0x4SIMD(pd, hi-lo, pw, st, pq, nil, &a.D[t0*nb], nb, &offs)
		}
		return
	}
	_ = a.BSums[(t3+1)*n/16-1]
	_ = dxv[nb*8-1]
	for t, tok := range toks {
		offs.bs[t] = uintptr((tok - t0) * n / 16 * 2)
	}
	pb, px := &a.BSums[t0*n/16], &dxv[0]
	two := toks[3] == toks[1] // two distinct tokens: the x2 kernels
	switch wt {               // direct calls: the kernels are go:noescape
	case Q4_K:
		if two {
			qdotQ4_Kx2SIMD(pd, hi-lo, pw, st, pq, pb, px, nb, &offs)
		} else {
			qdotQ4_Kx4SIMD(pd, hi-lo, pw, st, pq, pb, px, nb, &offs)
		}
	case Q5_K:
		if two {
			qdotQ5_Kx2SIMD(pd, hi-lo, pw, st, pq, pb, px, nb, &offs)
		} else {
			qdotQ5_Kx4SIMD(pd, hi-lo, pw, st, pq, pb, px, nb, &offs)
		}
	case Q6_K:
		if two {
			qdotQ6_Kx2SIMD(pd, hi-lo, pw, st, pq, pb, px, nb, &offs)
		} else {
			qdotQ6_Kx4SIMD(pd, hi-lo, pw, st, pq, pb, px, nb, &offs)
		}
	default:
		panic("tensor: dotQRowsX4: " + wt.String())
	}
}
