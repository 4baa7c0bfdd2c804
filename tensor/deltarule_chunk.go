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
// 3·n·d², in tiles that reuse each load instead of passes over S per
// token.
//
// The two forms are the same numbers in exact arithmetic and round
// differently in float32 (TestDeltaChunked holds both to a float64
// recurrence).
//
// Why inference runs the recurrent rule for prefill too (issue 30 asked
// for "prefill chunked, decode recurrent"; decided by measurement):
//
// Arithmetic per token and value head at d_k = d_v = d = 128. Recurrent:
// S k, the update a·S + e kᵀ and S q are 3d² FMAs and d² multiplies, 65.5k
// vector-lane operations (7d² = 115 kFLOP). Chunked, C = 64: the products
// with S_0 (K Sᵀ, Q Sᵀ) and the state update Kᵀ Δ are 3d² per token; K Kᵀ,
// Q Kᵀ, T R and M Δ add 4·C·d (2·C·d if their triangles were skipped),
// the substitution C²/6: 82.6k FMAs, 1.13–1.26× the recurrent count.
// Qwen3.5-0.8B and -2B both have 18 delta layers of 16 value heads:
// 33 MFLOP a token, against ~1.0 GFLOP (0.8B) and ~2.9 GFLOP (2B) of
// weight products per prefill token: 3% and 1% of a prefill's arithmetic.
//
// Bytes: a head's state is 64 KiB (1 MiB a layer, 18 MiB per 0.8B
// sequence). Row-major DeltaStep streams it through L2 every token (two
// reads, one write); DeltaStepsBlocked keeps an 8 KiB row block in L1 for
// all the tokens of a call; the chunked form reads and writes it once a
// chunk. This machine (Zen 5, 48 KiB L1d and 1 MiB L2 per core, two zmm
// FMAs a cycle: bench --peak measures ~209 GFLOP/s on one idle thread) so
// holds either form's working set in L1/L2, and the rule is bound by
// arithmetic and its dependency chains, not memory.
//
// Measured (BenchmarkDeltaChunked, one d = 128 head, variants alternating
// in three rounds, load average ~10 from other jobs; tokens per
// CPU-second): at L = 128, DeltaStep 0.63 M, DeltaStepsBlocked 1.03 M,
// chunked C = 16/32/64 0.17/0.39/0.32 M; at L = 512, 0.63 M, 0.92 M and
// 0.18/0.42/0.33 M. DeltaStepsBlocked is 115 GFLOP/s, ~55% of the FMA
// peak; to beat it the chunked form would have to run 1.13–1.26× the
// arithmetic at 62–70% of peak, with four of its seven products small
// (n ≤ 64) GEMMs plus the transposes, the exponentials and the scalar
// substitution: it runs at 0.3–0.45× the blocked recurrent rule. The most
// it could save even at the FMA peak is under 2% of a 0.8B prefill (the
// blocked rule is ~4% of its CPU time).
//
// Exactness: in the engine a token's logits must be the same bits however
// its prompt was split into steps and whether it came as prompt or was
// generated (chunked prefill, sessions, preemption recompute, prefix
// snapshots are compared with == to a lone cold run). The chunked form
// could only do that with chunks aligned to absolute positions (multiples
// of C) and each token's output computed from S at the last aligned
// boundary and the rows before it in the chunk: the state would carry up
// to C−1 pending tokens' q, k, v, g, β (66 KiB a head at C = 64: twice the
// state, twice every snapshot), and decode would pay the pending rows'
// products on every token. So the forward pass runs DeltaStepsBlocked (or
// DeltaStep where it has no SIMD) in prefill and decode alike, and
// DeltaChunked stays as the tested float32 form of the blocked algebra
// (TestDeltaChunked, model's TestHybridDeltaChunked under deltaChunk) and
// the benchmark's yardstick.

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
