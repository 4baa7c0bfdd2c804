package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestExpf pins expf against math.Exp: relative error within 2 ulp over
// the normal range, and the edges.
func TestExpf(t *testing.T) {
	worst := 0.0
	for x := float32(-87); x < 88.7; x += 0.0137 {
		got, want := float64(expf(x)), math.Exp(float64(x))
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 2.5e-7 {
		t.Errorf("expf max relative error %g", worst)
	}
	if expf(-100) != 0 || !math.IsInf(float64(expf(100)), 1) || expf(0) != 1 {
		t.Errorf("edges: %g %g %g", expf(-100), expf(100), expf(0))
	}
	if v := expf(float32(math.NaN())); v == v {
		t.Errorf("expf(NaN) = %g", v)
	}
}

// TestVecOps compares the assembly softmax and SwiGLU with the scalar Go
// loops (lengths with and without a ragged tail, large and tiny inputs).
func TestVecOps(t *testing.T) {
	if !hasSIMD {
		t.Skip("no assembly kernels on this machine")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 7, 8, 9, 31, 64, 300} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 30)
		}
		x[r.IntN(n)] = -200 // underflows to 0
		up := make([]float32, n)
		for i := range up {
			up[i] = float32(r.NormFloat64())
		}
		saved := hasSIMD
		run := func(vec bool) (sm, sw []float32, sum float32) {
			hasSIMD = vec
			defer func() { hasSIMD = saved }()
			sm, sw = slices.Clone(x), slices.Clone(x)
			sum = SoftmaxExp(sm)
			SwiGLU(sw, up)
			return
		}
		sm1, sw1, s1 := run(true)
		sm2, sw2, s2 := run(false)
		if math.Abs(float64(s1-s2)) > 1e-6*float64(s2) {
			t.Errorf("n %d: softmax sums %g vs %g", n, s1, s2)
		}
		if d, at := maxAbsDiffVec(sm1, sm2); d > 1e-6 {
			t.Errorf("n %d: softmax differs by %g at %d", n, d, at)
		}
		for i := range sw1 {
			if d := math.Abs(float64(sw1[i] - sw2[i])); d > 1e-6*math.Max(1, math.Abs(float64(sw2[i]))) {
				t.Errorf("n %d: swiglu(%g) = %g, scalar %g", n, x[i], sw1[i], sw2[i])
				break
			}
		}
	}
}

func maxAbsDiffVec(a, b []float32) (float64, int) {
	worst, at := 0.0, -1
	for i := range a {
		if d := math.Abs(float64(a[i] - b[i])); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	return worst, at
}

// TestMulSigmoid checks MulSigmoid, assembly and Go loop, against
// x·σ(g) in float64 to 4e-7 relative (expf's ulp, the add and the
// division), over lengths with and without a ragged tail and gates from
// saturated to tiny.
func TestMulSigmoid(t *testing.T) {
	for _, vec := range []bool{false, true} {
		if vec && !hasSIMD {
			t.Log("no assembly kernels on this machine: the Go loop only")
			continue
		}
		saved := hasSIMD
		hasSIMD = vec
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range []int{1, 7, 8, 9, 31, 64, 300} {
			x, g := make([]float32, n), make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 4)
				g[i] = float32(r.NormFloat64() * 8)
			}
			g[r.IntN(n)] = 200  // σ = 1
			g[r.IntN(n)] = -200 // σ underflows
			got := slices.Clone(x)
			MulSigmoid(got, g)
			for i := range x {
				want := float64(x[i]) / (1 + math.Exp(-float64(g[i])))
				if d := math.Abs(float64(got[i]) - want); d > 4e-7*math.Abs(want)+1e-30 {
					t.Errorf("vec %v, n %d: %g·σ(%g) = %g, want %g", vec, n, x[i], g[i], got[i], want)
					break
				}
			}
		}
		hasSIMD = saved
	}
}
