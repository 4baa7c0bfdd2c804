package tensor

// SSMScanRow advances one channel of a Mamba-2 head by one token and
// returns its output (model/mamba2.go): over the head's state row s (the
// d_state values of this channel),
//
//	s[k] ← s[k]·a + B[k]·xdt,   y = Σ_k s[k]·C[k]
//
// with a = e^{Δ·A} the head's decay and xdt = Δ·x the channel's input.
// Every product is rounded before its sum (no FMA), and y is summed in
// eight lanes, lane l over k ≡ l (mod 8) in k order, folded as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)): the AVX2 kernel's order, so the
// Go loop (other CPUs, and the tail past a multiple of 8) gives the same
// bits (TestSSMScanRow).
//
// Napkin maths: per token a Mamba-2 layer of d_inner channels and a
// d_state-wide state reads and writes the whole state, d_inner·d_state·4
// bytes each way (Granite-4.0-H-1B: 3072·128·4 = 1.5 MB, in L2 for a
// decode) for 4 flops an element: ~1.6 Mflop a layer, bound by the L2's
// ~32 B/cycle rather than the FMA units.
func SSMScanRow(s, B, C []float32, a, xdt float32) float32 {
	_, _ = B[len(s)-1], C[len(s)-1]
	var lanes [8]float32
	k := ssmScanRowSIMD(s, B, C, a, xdt, &lanes)
	for ; k < len(s); k++ {
		v := float32(s[k]*a) + float32(B[k]*xdt)
		s[k] = v
		lanes[k&7] += float32(v * C[k])
	}
	return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]))
}

// SSMScanHead advances all P channels of a Mamba-2 head by one token:
// channel p's state row S[p·N:(p+1)·N] by SSMScanRow with xdt = x[p]·dt,
// its output in y[p] — the same bits as P calls of SSMScanRow (one AVX2
// call for the head where N is a multiple of 8, saving a Go call per
// channel: 110 thousand per token on a Granite-4.0-H-1B).
func SSMScanHead(S, B, C, x, y []float32, a, dt float32) {
	N, P := len(B), len(x)
	_, _, _ = S[P*N-1], C[N-1], y[P-1]
	if hasSIMD && N >= 8 && N%8 == 0 && ssmScanHeadSIMD(S, B, C, x, y, a, dt) {
		return
	}
	for p := range P {
		y[p] = SSMScanRow(S[p*N:(p+1)*N], B, C, a, x[p]*dt)
	}
}
