package tensor

// The gated delta rule's per-token state update (Qwen3.5's Gated
// DeltaNet; model/deltanet.go): one value head's state S is a (d_v, d_k)
// matrix stored row-major, and one token with key k, query q, value v,
// decay a = e^g and write strength β does
//
//	S ← a·S;  S ← S + β(v − S k) kᵀ;  out = S q
//
// Row j of S needs only itself and v_j, so each row is two passes over its
// d_k values: the first reads it for s = a·(S_j·k) (the decay folded into
// the dot product, so the pass does not write), the second writes
// S_j ← a·S_j + e·k with e = β(v_j − s) and reads it back for out_j = S_j·q.
// On amd64 with AVX2+FMA (d_k a multiple of 16) deltarule_amd64.s runs
// both passes in 8-lane registers (and with AVX-512, 16 lanes); the Go loop
// below is the reference and the fallback. They round differently (the
// dot products' summation order) and agree to float32 precision
// (TestDeltaStep). Where the CPU has AVX-512 the model runs
// DeltaStepsBlocked instead (deltarule_blocked.go: the same rule on a
// layout without horizontal folds, 1.6× the tokens per CPU-second).

// DeltaStep runs one token of the gated delta rule on S (len(out) rows of
// len(k) values; q and k len(k) long, v len(out) long) and writes out = S q.
func DeltaStep(out, S, q, k, v []float32, decay, beta float32) {
	d := len(k)
	if len(q) != d || len(v) != len(out) || len(S) != len(out)*d {
		panic("tensor: DeltaStep: mismatched lengths")
	}
	if len(out) == 0 {
		return
	}
	if deltaStepSIMD(out, S, q, k, v, decay, beta) {
		return
	}
	deltaStepGo(out, S, q, k, v, decay, beta)
}

// deltaStepGo is DeltaStep in plain Go.
func deltaStepGo(out, S, q, k, v []float32, decay, beta float32) {
	d := len(k)
	for j := range out {
		row := S[j*d : (j+1)*d]
		var sk float32
		for i, x := range row {
			sk += x * k[i]
		}
		e := beta * (v[j] - decay*sk)
		var o float32
		for i, x := range row {
			x = decay*x + e*k[i]
			row[i] = x
			o += x * q[i]
		}
		out[j] = o
	}
}
