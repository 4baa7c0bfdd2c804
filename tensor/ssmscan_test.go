package tensor

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestSSMScanRow: the AVX2 kernel and the Go loop give the same bits, state
// and output, for lengths with and without a tail past a multiple of 8;
// both are within float32 rounding of a float64 step; and a second step
// continues from the updated state.
func TestSSMScanRow(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, n := range []int{1, 7, 8, 16, 37, 128} {
		s0, B, C := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range n {
			s0[i], B[i], C[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		a, xdt := float32(0.83), float32(-0.41)
		run := func(simd bool) ([]float32, []float32) {
			saved := hasSIMD
			hasSIMD = simd && saved
			defer func() { hasSIMD = saved }()
			s := slices.Clone(s0)
			y1 := SSMScanRow(s, B, C, a, xdt)
			y2 := SSMScanRow(s, B, C, a, 2*xdt)
			return s, []float32{y1, y2}
		}
		sg, yg := run(false)
		sa, ya := run(true)
		if !slices.Equal(sg, sa) || !slices.Equal(yg, ya) {
			t.Errorf("n=%d: SIMD and Go differ: y %v vs %v", n, ya, yg)
		}
		// float64: two steps from s0.
		s := make([]float64, n)
		for i := range s {
			s[i] = float64(s0[i])
		}
		for step, x := range []float64{float64(xdt), 2 * float64(xdt)} {
			var y float64
			for k := range s {
				s[k] = s[k]*float64(a) + float64(B[k])*x
				y += s[k] * float64(C[k])
			}
			if d := math.Abs(y - float64(yg[step])); d > 1e-5*(1+math.Abs(y))*math.Sqrt(float64(n)) {
				t.Errorf("n=%d step %d: y %g, float64 %g", n, step, yg[step], y)
			}
		}
		for k := range s {
			if d := math.Abs(s[k] - float64(sg[k])); d > 1e-5*(1+math.Abs(s[k])) {
				t.Errorf("n=%d: state[%d] %g, float64 %g", n, k, sg[k], s[k])
				break
			}
		}
	}
}

// TestSSMScanHead: a head advanced at once (AVX2 where N is a multiple of
// 8, else the Go loop) gives the bits of P channels through SSMScanRow's
// Go loop, state and outputs, over two tokens.
func TestSSMScanHead(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, c := range []struct{ P, N int }{{1, 8}, {5, 16}, {64, 128}, {3, 12}} {
		S0 := make([]float32, c.P*c.N)
		B, C, x := make([]float32, c.N), make([]float32, c.N), make([]float32, c.P)
		for i := range S0 {
			S0[i] = float32(rng.NormFloat64())
		}
		for i := range c.N {
			B[i], C[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		a, dt := float32(0.91), float32(0.37)
		ref, sr := make([]float32, 2*c.P), slices.Clone(S0)
		saved := hasSIMD
		hasSIMD = false
		for tok := range 2 {
			for p := range c.P {
				ref[tok*c.P+p] = SSMScanRow(sr[p*c.N:(p+1)*c.N], B, C, a, x[p]*dt*float32(tok+1))
			}
		}
		hasSIMD = saved
		got, sg := make([]float32, 2*c.P), slices.Clone(S0)
		for tok := range 2 {
			SSMScanHead(sg, B, C, x, got[tok*c.P:(tok+1)*c.P], a, dt*float32(tok+1))
		}
		if !slices.Equal(got, ref) || !slices.Equal(sg, sr) {
			t.Errorf("P=%d N=%d: SSMScanHead differs from SSMScanRow's Go loop", c.P, c.N)
		}
	}
}
