package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// deltaStep64 is the delta rule in float64 on a float64 copy of S.
func deltaStep64(out, S []float64, q, k, v []float32, decay, beta float64) {
	d := len(k)
	for j := range out {
		row := S[j*d : (j+1)*d]
		var sk float64
		for i := range row {
			row[i] *= decay
			sk += row[i] * float64(k[i])
		}
		e := beta * (float64(v[j]) - sk)
		var o float64
		for i := range row {
			row[i] += e * float64(k[i])
			o += row[i] * float64(q[i])
		}
		out[j] = o
	}
}

// TestDeltaStep: DeltaStep (the ymm kernel, the zmm one where the CPU has
// AVX-512, and the Go loop) equals a float64 recurrence over 40 tokens
// to float32 precision, for head widths the kernels take (16, 32, 128)
// and one they leave to Go (24).
func TestDeltaStep(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	paths := []struct {
		name     string
		simd, zm bool
	}{{"go", false, false}, {"avx2", true, false}, {"avx512", true, true}}
	for _, d := range []int{16, 24, 32, 128} {
		for _, rows := range []int{1, 3, d} {
			for _, p := range paths {
				if p.simd && !hasSIMD || p.zm && !hasAVX512 {
					continue
				}
				saveS, saveZ := hasSIMD, hasAVX512
				hasSIMD, hasAVX512 = p.simd, p.zm
				S := make([]float32, rows*d)
				S64 := make([]float64, rows*d)
				out := make([]float32, rows)
				out64 := make([]float64, rows)
				var worst float64
				for range 40 {
					q, k, v := make([]float32, d), make([]float32, d), make([]float32, rows)
					var nk float64
					for i := range k {
						q[i], k[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
						nk += float64(k[i]) * float64(k[i])
					}
					for i := range k { // L2-normalised keys, as the model has them
						k[i] = float32(float64(k[i]) / math.Sqrt(nk))
					}
					for i := range v {
						v[i] = float32(r.NormFloat64())
					}
					decay, beta := float32(math.Exp(-r.Float64())), float32(r.Float64())
					DeltaStep(out, S, q, k, v, decay, beta)
					deltaStep64(out64, S64, q, k, v, float64(decay), float64(beta))
					for j := range out {
						worst = max(worst, math.Abs(float64(out[j])-out64[j])/(1+math.Abs(out64[j])))
					}
				}
				for i := range S {
					worst = max(worst, math.Abs(float64(S[i])-S64[i])/(1+math.Abs(S64[i])))
				}
				hasSIMD, hasAVX512 = saveS, saveZ
				if worst > 2e-5 {
					t.Errorf("%s d=%d rows=%d: relative error %.3g vs float64", p.name, d, rows, worst)
				}
			}
		}
	}
}

// BenchmarkDeltaStep: one token on one Qwen3.5 head (128×128 state), Go
// loop vs the kernels; run with -count N to interleave them.
func BenchmarkDeltaStep(b *testing.B) {
	const d = 128
	r := rand.New(rand.NewPCG(1, 2))
	S, q, k, v, out := make([]float32, d*d), make([]float32, d), make([]float32, d), make([]float32, d), make([]float32, d)
	for i := range q {
		q[i], k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())/11, float32(r.NormFloat64())
	}
	for _, p := range []struct {
		name     string
		simd, zm bool
	}{{"go", false, false}, {"avx2", true, false}, {"avx512", true, true}} {
		if p.simd && !hasSIMD || p.zm && !hasAVX512 {
			continue
		}
		b.Run(fmt.Sprint(p.name), func(b *testing.B) {
			saveS, saveZ := hasSIMD, hasAVX512
			hasSIMD, hasAVX512 = p.simd, p.zm
			defer func() { hasSIMD, hasAVX512 = saveS, saveZ }()
			clear(S)
			for b.Loop() {
				DeltaStep(out, S, q, k, v, 0.97, 0.5)
			}
			b.ReportMetric(float64(4*d*d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestDeltaStepRows: a row's numbers do not depend on the rows beside it
// in the call (the AVX-512 kernel takes rows two at a time, the same
// instructions per row as one at a time): DeltaStep over all rows equals
// it row by row, bit for bit, over 10 tokens, on each kernel path.
func TestDeltaStepRows(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	paths := []struct {
		name     string
		simd, zm bool
	}{{"go", false, false}, {"avx2", true, false}, {"avx512", true, true}}
	for _, p := range paths {
		if p.simd && !hasSIMD || p.zm && !hasAVX512 {
			continue
		}
		saveS, saveZ := hasSIMD, hasAVX512
		hasSIMD, hasAVX512 = p.simd, p.zm
		for _, d := range []int{32, 128} {
			for _, rows := range []int{2, 5, d} {
				S1 := make([]float32, rows*d)
				for i := range S1 {
					S1[i] = float32(r.NormFloat64())
				}
				S2 := append([]float32(nil), S1...)
				o1, o2 := make([]float32, rows), make([]float32, rows)
				for range 10 {
					q, k, v := make([]float32, d), make([]float32, d), make([]float32, rows)
					for i := range q {
						q[i], k[i] = float32(r.NormFloat64()), float32(r.NormFloat64())/8
					}
					for i := range v {
						v[i] = float32(r.NormFloat64())
					}
					dec, beta := float32(0.5+0.5*r.Float64()), float32(r.Float64())
					DeltaStep(o1, S1, q, k, v, dec, beta)
					for j := range rows {
						DeltaStep(o2[j:j+1], S2[j*d:(j+1)*d], q, k, v[j:j+1], dec, beta)
					}
					for j := range rows {
						if o1[j] != o2[j] {
							t.Fatalf("%s d=%d rows=%d: row %d out %g, alone %g", p.name, d, rows, j, o1[j], o2[j])
						}
					}
				}
				for i := range S1 {
					if S1[i] != S2[i] {
						t.Fatalf("%s d=%d rows=%d: S[%d] %g, row by row %g", p.name, d, rows, i, S1[i], S2[i])
					}
				}
			}
		}
		hasSIMD, hasAVX512 = saveS, saveZ
	}
}
