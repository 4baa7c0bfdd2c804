package tensor

// The gated delta rule (DeltaStep's recurrence) on a state laid out for
// SIMD lanes across rows, over many tokens per call.
//
// DeltaStep keeps S row-major and runs each row's two dot products
// (S_j·k, S_j·q) along the row: every row and token ends in two
// horizontal folds of a vector to a scalar, whose latency chain (fold,
// then the scalar e_j, then the row update the next token's fold waits
// on) bounds it: ~35 cycles a row and token at d_k = 128 on Zen 5, twice
// its FMA count. DeltaStepsBlocked stores S in row blocks of DeltaBlock
// rows, each block column by column —
//
//	S[b·DeltaBlock·d_k + i·DeltaBlock + r] = S_{b·DeltaBlock+r, i}
//
// (d_v a multiple of DeltaBlock) — so one vector is one column of 16
// rows, and with k_i and q_i broadcast the 16 rows' dot products are
// plain vector FMAs: s = Σ_i S_i k_i, e = β(v − decay·s) (16 rows at
// once), S_i ← decay·S_i + e k_i, out = Σ_i S_i q_i. No folds; each sum
// runs in 8 accumulators (column i into i mod 8) added as a tree. The
// tokens of a call run block by block, so a block (8 KiB at d_k = 128)
// stays in L1 for all of them instead of the 64 KiB state crossing L2 per
// token.
//
// A row's numbers depend only on its block's arithmetic, token after
// token: T tokens in one call are T calls of one token, bit for bit
// (TestDeltaStepsBlocked), so prefill (many tokens a call) and decode (one)
// agree exactly. The kernels run where DeltaBlockedSIMD says (amd64 with
// AVX2+FMA, d_k a multiple of 8, d_v of 16): on zmm a block's 16 rows are
// one register and 8 accumulators take the columns mod 8; on ymm two
// registers and 4 accumulators each (mod 4), in runs of 32 tokens per
// block (deltaBlockedRun). The Go loop below is the reference and the
// fallback, and rounds differently (TestDeltaStepsBlocked holds each to a
// float64 recurrence). On a Zen 3 host the ymm kernel took Qwen3.5-0.8B
// Q4_K_M prefill's delta rule from 13.3% to 7.7% of its Q4_K products'
// time (DeltaStep's row-major passes stream the head's 64 KiB state
// through L2 every token), and decode's from 5.1% to 4.4% of its Q4_K
// and Q6_K products'.

// DeltaBlock is the row-block width of DeltaStepsBlocked's state layout.
const DeltaBlock = 16

// DeltaBlockedSIMD reports whether DeltaStepsBlocked runs in SIMD
// registers for heads of d_k × d_v on this CPU.
func DeltaBlockedSIMD(dk, dv int) bool {
	return hasSIMD && hasDeltaBlocked && dk > 0 && dk%8 == 0 && dv > 0 && dv%DeltaBlock == 0
}

// DeltaStepsBlocked runs the gated delta rule of one value head over T =
// len(decay) tokens in order, on S (d_v = len(S)/dk rows of dk, in the
// row-block layout above; d_v a multiple of DeltaBlock), updated in place.
// Token t's q and k start at t·ldqk, its v at t·ldv; its output S q goes
// to out[t·ldo:]. decay[t] multiplies the state (e^g), beta[t] is the
// write strength.
func DeltaStepsBlocked(out []float32, ldo int, S, q, k []float32, ldqk int, v []float32, ldv int, decay, beta []float32, dk int) {
	T := len(decay)
	if dk < 1 || len(S)%(dk*DeltaBlock) != 0 || len(beta) != T {
		panic("tensor: DeltaStepsBlocked: mismatched lengths")
	}
	dv := len(S) / dk
	if T == 0 || dv == 0 {
		return
	}
	if ldqk < dk || ldv < dv || ldo < dv || len(q) < (T-1)*ldqk+dk || len(k) < (T-1)*ldqk+dk ||
		len(v) < (T-1)*ldv+dv || len(out) < (T-1)*ldo+dv {
		panic("tensor: DeltaStepsBlocked: mismatched lengths")
	}
	if deltaBlockedSIMD(out, ldo, S, q, k, ldqk, v, ldv, decay, beta, dk) {
		return
	}
	deltaStepsBlockedGo(out, ldo, S, q, k, ldqk, v, ldv, decay, beta, dk)
}

// deltaStepsBlockedGo is DeltaStepsBlocked in plain Go.
func deltaStepsBlockedGo(out []float32, ldo int, S, q, k []float32, ldqk int, v []float32, ldv int, decay, beta []float32, dk int) {
	const w = DeltaBlock
	dv := len(S) / dk
	var s, e, o [w]float32
	for b := 0; b < dv; b += w {
		blk := S[b*dk : (b+w)*dk]
		for t, a := range decay {
			kt, qt := k[t*ldqk:t*ldqk+dk], q[t*ldqk:t*ldqk+dk]
			s = [w]float32{}
			for i, ki := range kt {
				col := blk[i*w : (i+1)*w]
				for r, x := range col {
					s[r] += x * ki
				}
			}
			vt := v[t*ldv+b : t*ldv+b+w]
			for r := range e {
				e[r] = beta[t] * (vt[r] - a*s[r])
			}
			o = [w]float32{}
			for i, ki := range kt {
				col, qi := blk[i*w:(i+1)*w], qt[i]
				for r, x := range col {
					x = a*x + e[r]*ki
					col[r] = x
					o[r] += x * qi
				}
			}
			copy(out[t*ldo+b:t*ldo+b+w], o[:])
		}
	}
}

// DeltaToBlocked writes the row-major state src (d_v rows of dk) into dst
// in DeltaStepsBlocked's layout; DeltaFromBlocked is its inverse.
func DeltaToBlocked(dst, src []float32, dk int) {
	const w = DeltaBlock
	for j := range len(src) / dk {
		b, r := j/w*w, j%w
		for i, x := range src[j*dk : (j+1)*dk] {
			dst[b*dk+i*w+r] = x
		}
	}
}

// DeltaFromBlocked writes the blocked state src into dst row-major.
func DeltaFromBlocked(dst, src []float32, dk int) {
	const w = DeltaBlock
	for j := range len(dst) / dk {
		b, r := j/w*w, j%w
		row := dst[j*dk : (j+1)*dk]
		for i := range row {
			row[i] = src[b*dk+i*w+r]
		}
	}
}
