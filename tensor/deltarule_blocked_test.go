package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDeltaStepsBlocked: DeltaStepsBlocked (the zmm kernel where the CPU
// has AVX-512, and the Go loop) equals a float64 recurrence over 40
// tokens, outputs and final state, from a non-zero state, with strided q,
// k, v and out as the model lays them out; and its bits do not depend on
// how the tokens are split into calls (all 40 in one call, one a call,
// and 7 + 33).
func TestDeltaStepsBlocked(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 7))
	paths := []struct {
		name string
		simd bool
		zmm  bool
	}{{"go", false, false}, {"avx2", true, false}, {"avx512", true, true}}
	for _, p := range paths {
		if p.simd && !(hasSIMD && hasDeltaBlocked) || p.zmm && !hasAVX512 {
			t.Logf("%s: not on this CPU", p.name)
			continue
		}
		saveS, saveZ := hasSIMD, hasAVX512
		hasSIMD, hasAVX512 = p.simd && hasSIMD, p.zmm
		for _, sh := range []struct{ dk, dv int }{{128, 128}, {16, 32}, {8, 16}, {24, 48}} {
			dk, dv, T := sh.dk, sh.dv, 40
			if p.simd && !DeltaBlockedSIMD(dk, dv) {
				t.Fatalf("%dx%d: not taken by the kernel", dk, dv)
			}
			ldqk, ldv, ldo := 2*dk+3, dv+5, dv+2
			q, k, v := make([]float32, T*ldqk), make([]float32, T*ldqk), make([]float32, T*ldv)
			dec, beta := make([]float32, T), make([]float32, T)
			for tk := range T {
				var nk float64
				for i := range dk {
					q[tk*ldqk+i], k[tk*ldqk+i] = float32(r.NormFloat64()/math.Sqrt(float64(dk))), float32(r.NormFloat64())
					nk += float64(k[tk*ldqk+i]) * float64(k[tk*ldqk+i])
				}
				for i := range dk { // L2-normalised keys, as the model has them
					k[tk*ldqk+i] = float32(float64(k[tk*ldqk+i]) / math.Sqrt(nk))
				}
				for i := range dv {
					v[tk*ldv+i] = float32(r.NormFloat64())
				}
				dec[tk], beta[tk] = float32(math.Exp(-r.Float64())), float32(r.Float64())
			}
			S0 := make([]float32, dv*dk)
			for i := range S0 {
				S0[i] = float32(r.NormFloat64()) / 4
			}
			// float64 reference, row-major.
			S64 := make([]float64, dv*dk)
			for i, x := range S0 {
				S64[i] = float64(x)
			}
			ref := make([]float64, T*dv)
			for tk := range T {
				deltaStep64(ref[tk*dv:(tk+1)*dv], S64, q[tk*ldqk:tk*ldqk+dk], k[tk*ldqk:tk*ldqk+dk], v[tk*ldv:tk*ldv+dv], float64(dec[tk]), float64(beta[tk]))
			}
			run := func(splits ...int) ([]float32, []float32) {
				S := make([]float32, dv*dk)
				DeltaToBlocked(S, S0, dk)
				out := make([]float32, T*ldo)
				t0 := 0
				for _, t1 := range append(splits, T) {
					DeltaStepsBlocked(out[t0*ldo:], ldo, S, q[t0*ldqk:], k[t0*ldqk:], ldqk, v[t0*ldv:], ldv, dec[t0:t1], beta[t0:t1], dk)
					t0 = t1
				}
				rm := make([]float32, dv*dk)
				DeltaFromBlocked(rm, S, dk)
				return out, rm
			}
			name := fmt.Sprintf("%s %dx%d", p.name, dk, dv)
			out, S := run()
			var worst float64
			for tk := range T {
				for j := range dv {
					x := ref[tk*dv+j]
					worst = max(worst, math.Abs(float64(out[tk*ldo+j])-x)/(1+math.Abs(x)))
				}
			}
			for i, x := range S64 {
				worst = max(worst, math.Abs(float64(S[i])-x)/(1+math.Abs(x)))
			}
			if worst > 2e-5 {
				t.Errorf("%s: relative error %.3g vs float64", name, worst)
			}
			one := make([]int, T-1)
			for i := range one {
				one[i] = i + 1
			}
			for _, sp := range [][]int{one, {7}} {
				o2, S2 := run(sp...)
				for tk := range T {
					for j := range dv {
						if a, b := out[tk*ldo+j], o2[tk*ldo+j]; a != b {
							t.Fatalf("%s split %v: token %d row %d: %g, in one call %g", name, sp, tk, j, b, a)
						}
					}
				}
				for i := range S {
					if S[i] != S2[i] {
						t.Fatalf("%s split %v: S[%d] %g, in one call %g", name, sp, i, S2[i], S[i])
					}
				}
			}
		}
		hasSIMD, hasAVX512 = saveS, saveZ
	}
}

// TestDeltaBlockedLayout: DeltaFromBlocked inverts DeltaToBlocked, and the
// blocked layout puts row r's column i where the kernels read it.
func TestDeltaBlockedLayout(t *testing.T) {
	const dk, dv = 8, 32
	src := make([]float32, dv*dk)
	for i := range src {
		src[i] = float32(i)
	}
	bl, back := make([]float32, dv*dk), make([]float32, dv*dk)
	DeltaToBlocked(bl, src, dk)
	DeltaFromBlocked(back, bl, dk)
	for i := range src {
		if back[i] != src[i] {
			t.Fatalf("round trip: [%d] = %g, want %g", i, back[i], src[i])
		}
	}
	if got, want := bl[DeltaBlock*dk+3*DeltaBlock+5], src[(DeltaBlock+5)*dk+3]; got != want {
		t.Fatalf("row %d column 3 at %g, want %g", DeltaBlock+5, got, want)
	}
}
