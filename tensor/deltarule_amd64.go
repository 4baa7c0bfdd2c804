package tensor

//go:noescape
func deltaStepAVX2(out, S, q, k, v *float32, rows, d int, decay, beta float32)

//go:noescape
func deltaStepAVX512(out, S, q, k, v *float32, rows, d int, decay, beta float32)

//go:noescape
func deltaStepsBlocked512(out, S, q, k, v, decay, beta *float32, ldo, ldqk, ldv, T, dk, blocks int)

//go:noescape
func deltaStepsBlockedAVX2(out, S, q, k, v, decay, beta *float32, ldo, ldqk, ldv, T, dk, blocks int)

// hasDeltaBlocked: this architecture has DeltaStepsBlocked kernels (zmm
// with AVX-512, ymm otherwise).
const hasDeltaBlocked = true

// deltaBlockedSIMD runs DeltaStepsBlocked in the AVX-512 or the AVX2
// kernel when DeltaBlockedSIMD allows; false when it did nothing.
func deltaBlockedSIMD(out []float32, ldo int, S, q, k []float32, ldqk int, v []float32, ldv int, decay, beta []float32, dk int) bool {
	dv := len(S) / dk
	if !DeltaBlockedSIMD(dk, dv) {
		return false
	}
	if hasAVX512 {
		deltaStepsBlocked512(&out[0], &S[0], &q[0], &k[0], &v[0], &decay[0], &beta[0], ldo, ldqk, ldv, len(decay), dk, dv/DeltaBlock)
	} else {
		// Tokens in runs of deltaBlockedRun, each run block by block: a
		// block's tokens read their q and k (1 KiB a token at d_k = 128,
		// strided in the model's buffers) once per block, so a whole
		// prompt's worth is read from L3 again for every block; a run's
		// stays in L1 beside the block. Bits do not depend on the split.
		for t0 := 0; t0 < len(decay); t0 += deltaBlockedRun {
			T := min(deltaBlockedRun, len(decay)-t0)
			deltaStepsBlockedAVX2(&out[t0*ldo], &S[0], &q[t0*ldqk], &k[t0*ldqk], &v[t0*ldv], &decay[t0], &beta[t0], ldo, ldqk, ldv, T, dk, dv/DeltaBlock)
		}
	}
	return true
}

// deltaBlockedRun is the most tokens the ymm kernel takes per block at a
// time. Qwen3.5-0.8B Q4_K_M pp512 on a Zen 3 host, the kernel's samples
// against the Q4_K products' (perf, 2026-12-07): all 512 per block 8.5%,
// runs of 32 7.7%, of 16 7.8% (DeltaStep, row-major: 13.3%).
const deltaBlockedRun = 32

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
