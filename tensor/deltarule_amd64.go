package tensor

//go:noescape
func deltaStepAVX2(out, S, q, k, v *float32, rows, d int, decay, beta float32)

//go:noescape
func deltaStepAVX512(out, S, q, k, v *float32, rows, d int, decay, beta float32)

// deltaStepSIMD runs DeltaStep in assembly when the CPU and d_k allow
// (a multiple of 16 values); false when it did nothing.
func deltaStepSIMD(out, S, q, k, v []float32, decay, beta float32) bool {
	d := len(k)
	if !hasSIMD || d%16 != 0 {
		return false
	}
	if hasAVX512 && d%32 == 0 {
		deltaStepAVX512(&out[0], &S[0], &q[0], &k[0], &v[0], len(out), d, decay, beta)
		return true
	}
	deltaStepAVX2(&out[0], &S[0], &q[0], &k[0], &v[0], len(out), d, decay, beta)
	return true
}
