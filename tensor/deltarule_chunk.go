package tensor

import "fmt"

// The chunked form of the gated delta rule (DeltaStep's recurrence over
// many tokens at once), in float32 on GemmNN.
//
// Token by token, with one head's state S (d_v, d_k), the rule is
// S_t = e^{g_t} S_{t−1} + δ_t k_tᵀ, o_t = S_t q_t, where the correction is
// δ_t = β_t (v_t − e^{g_t} S_{t−1} k_t). Over a chunk of n tokens from the
// state S_0, with γ_r = g_0 + … + g_r the cumulative log decay, unrolling
// the recurrence gives (all decays are e^{γ_i−γ_j} ≤ 1 for j ≤ i):
//
//	δ_i = β_i (v_i − e^{γ_i} S_0 k_i) − Σ_{j<i} β_i e^{γ_i−γ_j} (k_i·k_j) δ_j
//
// i.e. (I + A) Δ = R with A_ij = β_i e^{γ_i−γ_j} k_i·k_j (j < i) strictly
// lower triangular and R_i = β_i (v_i − e^{γ_i} S_0 k_i). T = (I + A)⁻¹
// (the "UT transform": a forward substitution on an n×n unit triangle)
// turns the chunk's n sequential rank-1 updates into matrix products:
//
//	Δ   = T R                                        (n, d_v)
//	o_r = e^{γ_r} S_0 q_r + Σ_{i≤r} e^{γ_r−γ_i} (q_r·k_i) δ_i
//	S_n = e^{γ_{n−1}} S_0 + Σ_i e^{γ_{n−1}−γ_i} δ_i k_iᵀ
//
// The products S_0 K, S_0 Q, K Kᵀ, Q Kᵀ, T R, M Δ and Kᵀ Δ are GemmNN
// calls (register-tiled, contracted in order), the state is carried
// across chunks, and held transposed (Sᵀ, d_k rows of d_v) for the length
// of the call so that every product is in GemmNN's row-major "NN" shape.
// Per chunk this is 3·n·d² + O(n²·d) multiply-adds, the recurrent form's
// 3·n·d², in tiles that reuse each load instead of two passes over S per
// token; measured on a CPU (BenchmarkDeltaChunked, d = 128) the n² terms,
// the transposes and the scalar substitution still make it 0.55–0.7× the
// recurrent kernel's speed.
//
// The two forms are the same numbers in exact arithmetic and round
// differently in float32 (TestDeltaChunked holds both to a float64
// recurrence); the model's forward pass uses the recurrent form wherever
// its bits must not depend on how a sequence was split into steps (see
// model/deltanet.go).

// DeltaChunkWork is DeltaChunked's scratch, grown on demand and reused
// (one per goroutine).
type DeltaChunkWork struct {
	st, inc      []float32 // (d_k, d_v) Sᵀ; the chunk's state increment
	kt, kw       []float32 // (d_k, C) Kᵀ; Kᵀ scaled by e^{γ_{n−1}−γ_i}
	p, qs, r, dl []float32 // (C, d_v) S_0 k_i; S_0 q_i; R; Δ
	kk, qk, t    []float32 // (C, C) K Kᵀ (then A); Q Kᵀ (then M); T
	gam          []float32 // (C) γ
}

// DeltaChunked runs the gated delta rule of one value head over L tokens
// in chunks of C tokens, from the state S (d_v rows of d_k, row-major;
// updated in place to the state after the last token). Row t of q and k
// (d_k values) starts at t·ldqk, row t of v and out (d_v values) at t·ldv
// and t·ldo; g[t] is token t's log decay (DeltaStep's decay is e^{g}) and
// beta[t] its write strength. out may not overlap the inputs.
func DeltaChunked(out []float32, ldo int, S []float32, q, k []float32, ldqk int, v []float32, ldv int, g, beta []float32, dk, dv, C int, w *DeltaChunkWork) {
	L := len(g)
	if L == 0 {
		return
	}
	if C < 1 || dk < 1 || dv < 1 || len(beta) != L || len(S) != dk*dv || ldqk < dk || ldv < dv || ldo < dv ||
		len(q) < (L-1)*ldqk+dk || len(k) < (L-1)*ldqk+dk || len(v) < (L-1)*ldv+dv || len(out) < (L-1)*ldo+dv {
		panic(fmt.Sprintf("tensor: DeltaChunked: %d tokens of d_k %d, d_v %d, chunk %d: mismatched lengths", L, dk, dv, C))
	}
	C = min(C, L)
	w.grow(dk, dv, C)
	st := w.st
	for j := range dv { // Sᵀ
		row := S[j*dk : (j+1)*dk]
		for x, s := range row {
			st[x*dv+j] = s
		}
	}
	for c0 := 0; c0 < L; c0 += C {
		n := min(C, L-c0)
		w.chunk(out[c0*ldo:], ldo, q[c0*ldqk:], k[c0*ldqk:], ldqk, v[c0*ldv:], ldv, g[c0:c0+n], beta[c0:c0+n], dk, dv, C)
	}
	for j := range dv {
		row := S[j*dk : (j+1)*dk]
		for x := range row {
			row[x] = st[x*dv+j]
		}
	}
}

func (w *DeltaChunkWork) grow(dk, dv, C int) {
	w.st = growBuf(w.st, dk*dv)
	w.inc = growBuf(w.inc, dk*dv)
	w.kt = growBuf(w.kt, dk*C)
	w.kw = growBuf(w.kw, dk*C)
	w.p = growBuf(w.p, C*dv)
	w.qs = growBuf(w.qs, C*dv)
	w.r = growBuf(w.r, C*dv)
	w.dl = growBuf(w.dl, C*dv)
	w.kk = growBuf(w.kk, C*C)
	w.qk = growBuf(w.qk, C*C)
	w.t = growBuf(w.t, C*C)
	w.gam = growBuf(w.gam, C)
}

// chunk runs n = len(g) ≤ C tokens on the transposed state w.st.
func (w *DeltaChunkWork) chunk(out []float32, ldo int, q, k []float32, ldqk int, v []float32, ldv int, g, beta []float32, dk, dv, C int) {
	n := len(g)
	gam, kt := w.gam[:n], w.kt
	var acc float32
	for i, x := range g {
		acc += x
		gam[i] = acc
	}
	for i := range n { // Kᵀ (d_k, n) with row stride C
		ki := k[i*ldqk : i*ldqk+dk]
		for x, e := range ki {
			kt[x*C+i] = e
		}
	}
	// S_0 k_i and S_0 q_i (rows of K·Sᵀ, Q·Sᵀ); k_i·k_j and q_r·k_i.
	GemmNN(w.p, dv, k, ldqk, w.st, dv, n, dv, dk)
	GemmNN(w.qs, dv, q, ldqk, w.st, dv, n, dv, dk)
	GemmNN(w.kk, C, k, ldqk, kt, C, n, n, dk)
	GemmNN(w.qk, C, q, ldqk, kt, C, n, n, dk)
	// R_i = β_i (v_i − e^{γ_i} S_0 k_i).
	for i := range n {
		e, b := expf(gam[i]), beta[i]
		ri, pi, vi := w.r[i*dv:(i+1)*dv], w.p[i*dv:(i+1)*dv], v[i*ldv:i*ldv+dv]
		for x := range ri {
			ri[x] = b * (vi[x] - e*pi[x])
		}
	}
	// A_ij = β_i e^{γ_i−γ_j} k_i·k_j (j < i) in kk; M_rj = e^{γ_r−γ_j} q_r·k_j
	// (j ≤ r, else 0) in qk.
	for i := range n {
		a, m := w.kk[i*C:i*C+n], w.qk[i*C:i*C+n]
		for j := range i {
			dec := expf(gam[i] - gam[j])
			a[j] *= beta[i] * dec
			m[j] *= dec
		}
		clear(m[i+1:])
	}
	// T = (I + A)⁻¹ by forward substitution, row i:
	// T_i = e_i − Σ_{j<i} A_ij T_j (T_j is zero past column j).
	t := w.t
	for i := range n {
		ti := t[i*C : i*C+n]
		clear(ti)
		ti[i] = 1
		a := w.kk[i*C : i*C+i]
		for j, aij := range a {
			if aij == 0 {
				continue
			}
			tj := t[j*C : j*C+j+1]
			for x, e := range tj {
				ti[x] -= aij * e
			}
		}
	}
	// Δ = T R; o = M Δ + e^{γ_r} S_0 q_r.
	GemmNN(w.dl, dv, t, C, w.r, dv, n, dv, n)
	GemmNN(out, ldo, w.qk, C, w.dl, dv, n, dv, n)
	for r := range n {
		e := expf(gam[r])
		or, qr := out[r*ldo:r*ldo+dv], w.qs[r*dv:(r+1)*dv]
		for x := range or {
			or[x] += e * qr[x]
		}
	}
	// Sᵀ ← e^{γ_{n−1}} Sᵀ + Σ_i e^{γ_{n−1}−γ_i} k_i δ_iᵀ.
	last := gam[n-1]
	kw := w.kw
	for i := range n {
		dec := expf(last - gam[i])
		for x := range dk {
			kw[x*C+i] = dec * kt[x*C+i]
		}
	}
	GemmNN(w.inc, dv, kw, C, w.dl, dv, dk, dv, n)
	e := expf(last)
	for x, s := range w.st[:dk*dv] {
		w.st[x] = e*s + w.inc[x]
	}
}
