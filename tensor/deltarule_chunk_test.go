package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// deltaInputs are L tokens of one head's delta-rule inputs as the model
// makes them: L2-normalised keys, queries scaled by 1/√d, log decays in
// [−2.05, −0.05] (a few tokens near 0: slow decay), β in (0, 1).
func deltaInputs(r *rand.Rand, L, d int) (q, k, v, g, b []float32) {
	q, k, v = make([]float32, L*d), make([]float32, L*d), make([]float32, L*d)
	g, b = make([]float32, L), make([]float32, L)
	for t := range L {
		var nq, nk float64
		for i := range d {
			q[t*d+i], k[t*d+i], v[t*d+i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
			nq += float64(q[t*d+i]) * float64(q[t*d+i])
			nk += float64(k[t*d+i]) * float64(k[t*d+i])
		}
		for i := range d {
			q[t*d+i] = float32(float64(q[t*d+i]) / math.Sqrt(nq*float64(d)))
			k[t*d+i] = float32(float64(k[t*d+i]) / math.Sqrt(nk))
		}
		g[t] = float32(-0.05 - 2*r.Float64())
		if t%5 == 0 {
			g[t] = -0.001
		}
		b[t] = float32(r.Float64())
	}
	return
}

// TestDeltaChunked: the chunked (UT-transform) delta rule, the recurrent
// DeltaStep and a float64 recurrence agree token by token (every output)
// and in the final state, for chunk sizes 1 to 64 on sequences that are
// and are not multiples of them, from a non-zero state, at head widths 16
// and 128. The bound: 1e-5 of the largest reference value (float32 has
// 6e-8 relative precision; the chunked form's products sum over up to 64
// tokens and 128 dimensions; the worst seen is 2e-6).
func TestDeltaChunked(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 2))
	var w DeltaChunkWork
	for _, d := range []int{16, 128} {
		for _, L := range []int{1, 7, 64, 100, 130} {
			q, k, v, g, b := deltaInputs(r, L, d)
			S0 := make([]float32, d*d)
			for i := range S0 {
				S0[i] = float32(0.3 * r.NormFloat64())
			}
			// float64 recurrence and float32 DeltaStep.
			S64 := make([]float64, d*d)
			for i, s := range S0 {
				S64[i] = float64(s)
			}
			ref, o64 := make([]float64, L*d), make([]float64, d)
			rec, Srec := make([]float32, L*d), append([]float32(nil), S0...)
			for t := range L {
				qt, kt, vt := q[t*d:(t+1)*d], k[t*d:(t+1)*d], v[t*d:(t+1)*d]
				deltaStep64(o64, S64, qt, kt, vt, math.Exp(float64(g[t])), float64(b[t]))
				copy(ref[t*d:], o64)
				DeltaStep(rec[t*d:(t+1)*d], Srec, qt, kt, vt, float32(math.Exp(float64(g[t]))), b[t])
			}
			scaleO, scaleS := maxAbs64(ref), maxAbs64(S64)
			if e := relErr(rec, ref, scaleO); e > 1e-5 {
				t.Fatalf("d=%d L=%d: recurrent float32 outputs off the float64 reference by %.2g", d, L, e)
			}
			for _, C := range []int{1, 5, 16, 64} {
				t.Run(fmt.Sprintf("d%d/L%d/C%d", d, L, C), func(t *testing.T) {
					out, S := make([]float32, L*d), append([]float32(nil), S0...)
					DeltaChunked(out, d, S, q, k, d, v, d, g, b, d, d, C, &w)
					eo, es := relErr(out, ref, scaleO), relErr(S, S64, scaleS)
					eor, esr := relErr(out, toF64(rec), scaleO), relErr(S, toF64(Srec), scaleS)
					t.Logf("vs float64: outputs %.2g, state %.2g; vs recurrent float32: %.2g, %.2g", eo, es, eor, esr)
					if eo > 1e-5 || es > 1e-5 || eor > 1e-5 || esr > 1e-5 {
						t.Errorf("chunked off: outputs %.2g / %.2g, state %.2g / %.2g of the float64 / float32 recurrence", eo, eor, es, esr)
					}
				})
			}
		}
	}
}

// TestDeltaChunkedStrided: row strides wider than the head (the model's
// q, k, v live inside a token's channel row) give the same bits as packed
// rows.
func TestDeltaChunkedStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	const L, d, ld, C = 70, 32, 80, 16
	q, k, v, g, b := deltaInputs(r, L, d)
	qs, ks, vs := make([]float32, L*ld), make([]float32, L*ld), make([]float32, L*ld)
	for t := range L {
		copy(qs[t*ld:], q[t*d:(t+1)*d])
		copy(ks[t*ld:], k[t*d:(t+1)*d])
		copy(vs[t*ld:], v[t*d:(t+1)*d])
	}
	var w DeltaChunkWork
	S1, S2 := make([]float32, d*d), make([]float32, d*d)
	o1, o2 := make([]float32, L*d), make([]float32, L*ld)
	DeltaChunked(o1, d, S1, q, k, d, v, d, g, b, d, d, C, &w)
	DeltaChunked(o2, ld, S2, qs, ks, ld, vs, ld, g, b, d, d, C, &w)
	for tok := range L {
		for i := range d {
			if o1[tok*d+i] != o2[tok*ld+i] {
				t.Fatalf("token %d: %g packed, %g strided", tok, o1[tok*d+i], o2[tok*ld+i])
			}
		}
	}
	for i := range S1 {
		if S1[i] != S2[i] {
			t.Fatalf("state %d: %g packed, %g strided", i, S1[i], S2[i])
		}
	}
}

func toF64(x []float32) []float64 {
	o := make([]float64, len(x))
	for i, e := range x {
		o[i] = float64(e)
	}
	return o
}

func maxAbs64(x []float64) float64 {
	m := 0.0
	for _, e := range x {
		m = math.Max(m, math.Abs(e))
	}
	return m
}

// relErr is max |a − b| / scale.
func relErr(a []float32, b []float64, scale float64) float64 {
	w := 0.0
	for i := range a {
		w = math.Max(w, math.Abs(float64(a[i])-b[i]))
	}
	return w / scale
}

// BenchmarkDeltaChunked: one head (d = 128, Qwen3.5's) over a prompt of L
// tokens (128 and 512), the recurrent DeltaStep token by token, the
// recurrent DeltaStepsBlocked (all L tokens in one call, as the model's
// prefill runs it) and DeltaChunked at chunk sizes 16 to 64, alternating
// within one run (three rounds):
//
//	go test ./tensor -run '^$' -bench DeltaChunked -benchtime 20x
func BenchmarkDeltaChunked(b *testing.B) {
	const d = 128
	for _, L := range []int{128, 512} {
		q, k, v, g, bt := deltaInputs(rand.New(rand.NewPCG(1, 1)), L, d)
		dec := make([]float32, L)
		for i, x := range g {
			dec[i] = float32(math.Exp(float64(x)))
		}
		S, out := make([]float32, d*d), make([]float32, L*d)
		var w DeltaChunkWork
		variants := []struct {
			name string
			run  func()
		}{
			{"recurrent", func() {
				for t := range L {
					DeltaStep(out[t*d:(t+1)*d], S, q[t*d:(t+1)*d], k[t*d:(t+1)*d], v[t*d:(t+1)*d], dec[t], bt[t])
				}
			}},
			{"blocked", func() { DeltaStepsBlocked(out, d, S, q, k, d, v, d, dec, bt, d) }},
		}
		for _, C := range []int{16, 32, 64} {
			variants = append(variants, struct {
				name string
				run  func()
			}{fmt.Sprintf("chunked%d", C), func() { DeltaChunked(out, d, S, q, k, d, v, d, g, bt, d, d, C, &w) }})
		}
		for r := range 3 * len(variants) {
			vr := variants[r%len(variants)]
			b.Run(fmt.Sprintf("L%d-%s", L, vr.name), func(b *testing.B) {
				clear(S)
				cpu0 := cpuSeconds()
				for b.Loop() {
					vr.run()
				}
				b.ReportMetric(float64(L*b.N)/(cpuSeconds()-cpu0), "tok/cpu-s")
			})
		}
	}
}
