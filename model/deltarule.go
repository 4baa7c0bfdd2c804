package model

import "math"

// The chunked (WY) form of the gated delta rule, in float64.
//
// Token by token the rule is S_t = e^{g_t} S_{t−1} + δ_t k_tᵀ with the
// correction δ_t = β_t (v_t − e^{g_t} S_{t−1} k_t), and o_t = S_t q_t. Over
// a chunk of C tokens starting from state S_0, with γ_r = g_0 + … + g_r
// (the chunk's cumulative log decay), unrolling gives
//
//	δ_i = β_i v_i − β_i e^{γ_i} S_0 k_i − Σ_{j<i} β_i e^{γ_i−γ_j} (k_i·k_j) δ_j
//
// i.e. (I + A) δ = U − W S_0ᵀ with A_ij = β_i e^{γ_i−γ_j} k_i·k_j (j < i),
// rows U_i = β_i v_i and W_i = β_i e^{γ_i} k_i. One forward substitution
// through the unit lower-triangular I + A turns U and W into their WY
// forms, after which the chunk needs S_0 only through products:
//
//	δ   = Ũ − W̃ S_0ᵀ
//	o_r = e^{γ_r} S_0 q_r + Σ_{i≤r} e^{γ_r−γ_i} (k_i·q_r) δ_i
//	S_C = e^{γ_{C−1}} S_0 + Σ_i e^{γ_{C−1}−γ_i} δ_i k_iᵀ
//
// These are matrix products over the chunk (what a GPU or a GEMM wants),
// and the same numbers as the recurrent form in exact arithmetic; in
// floating point they round differently, so the forward pass keeps the
// recurrent form (tensor.DeltaStepsBlocked, or deltaStep) for prefill too:
// a sequence's logits must not depend on how its prompt is split into
// chunks (batch invariance); and on a CPU the recurrent form is the faster
// one (tensor/deltarule_chunk.go).
// TestDeltaRuleChunked holds this form to the float64 recurrence; the
// float32 production kernel is tensor.DeltaChunked (the same system solved
// for δ through T = (I + A)⁻¹, TestDeltaChunked), which the model runs
// only under deltaChunk (tests, benchmarks).

// deltaRuleChunked runs one head over L tokens in chunks of C from state S
// (d_v rows of d_k, updated in place) and returns the outputs (L, d); q, k,
// v are (L, d), g and b (L) as in deltaRuleRef64.
func deltaRuleChunked(q, k, v, g, b, S []float64, L, d, C int) []float64 {
	o := make([]float64, L*d)
	gam := make([]float64, C)
	A := make([]float64, C*C)
	U := make([]float64, C*d) // then δ
	W := make([]float64, C*d)
	for c0 := 0; c0 < L; c0 += C {
		n := min(C, L-c0)
		kc, qc, vc := k[c0*d:], q[c0*d:], v[c0*d:]
		acc := 0.0
		for r := range n {
			acc += g[c0+r]
			gam[r] = acc
		}
		for i := range n {
			for j := range i {
				A[i*C+j] = b[c0+i] * math.Exp(gam[i]-gam[j]) * dot64(kc[i*d:(i+1)*d], kc[j*d:(j+1)*d])
			}
			for x := range d {
				U[i*d+x] = b[c0+i] * vc[i*d+x]
				W[i*d+x] = b[c0+i] * math.Exp(gam[i]) * kc[i*d+x]
			}
		}
		// Forward substitution: rows of (I + A)⁻¹ U and (I + A)⁻¹ W.
		for i := range n {
			for j := range i {
				a := A[i*C+j]
				for x := range d {
					U[i*d+x] -= a * U[j*d+x]
					W[i*d+x] -= a * W[j*d+x]
				}
			}
		}
		// δ_i = Ũ_i − S_0 W̃_i.
		for i := range n {
			for row := range d {
				U[i*d+row] -= dot64(S[row*d:(row+1)*d], W[i*d:(i+1)*d])
			}
		}
		for r := range n {
			out := o[(c0+r)*d : (c0+r+1)*d]
			e := math.Exp(gam[r])
			for row := range d {
				out[row] = e * dot64(S[row*d:(row+1)*d], qc[r*d:(r+1)*d])
			}
			for i := 0; i <= r; i++ {
				w := math.Exp(gam[r]-gam[i]) * dot64(kc[i*d:(i+1)*d], qc[r*d:(r+1)*d])
				for row := range d {
					out[row] += w * U[i*d+row]
				}
			}
		}
		last := gam[n-1]
		e := math.Exp(last)
		for row := range d {
			sr := S[row*d : (row+1)*d]
			for x := range sr {
				sr[x] *= e
			}
			for i := range n {
				w := math.Exp(last-gam[i]) * U[i*d+row]
				for x := range sr {
					sr[x] += w * kc[i*d+x]
				}
			}
		}
	}
	return o
}

func dot64(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
