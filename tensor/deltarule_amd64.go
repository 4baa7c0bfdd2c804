package tensor

//go:noescape
func deltaStepAVX2(out, S, q, k, v *float32, rows, d int, decay, beta float32)

//go:noescape
func deltaStepAVX512(out, S, q, k, v *float32, rows, d int, decay, beta float32)

//go:noescape
func deltaStepsBlocked512(out, S, q, k, v, decay, beta *float32, ldo, ldqk, ldv, T, dk, blocks int)

// deltaBlockedSIMD runs DeltaStepsBlocked in the AVX-512 kernel when
// DeltaBlockedSIMD allows; false when it did nothing.
func deltaBlockedSIMD(out []float32, ldo int, S, q, k []float32, ldqk int, v []float32, ldv int, decay, beta []float32, dk int) bool {
	dv := len(S) / dk
	if !DeltaBlockedSIMD(dk, dv) {
		return false
	}
	deltaStepsBlocked512(&out[0], &S[0], &q[0], &k[0], &v[0], &decay[0], &beta[0], ldo, ldqk, ldv, len(decay), dk, dv/DeltaBlock)
	return true
}

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
