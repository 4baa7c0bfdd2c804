package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSiLUs: SiLUs equals x/(1+e^-x) to float32 precision on lengths
// around the vector width and the ones buffer (the vector and Go paths
// both).
func TestSiLUs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1))
	for _, n := range []int{1, 7, 8, 9, 128, 255, 256, 257, 600} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 6)
		}
		got := slices.Clone(x)
		SiLUs(got)
		for i, v := range x {
			want := float64(v) / (1 + math.Exp(-float64(v)))
			if d := math.Abs(float64(got[i]) - want); d > 4e-7*math.Max(1, math.Abs(want)) {
				t.Fatalf("n=%d: silu(%g) = %g, want %g", n, v, got[i], want)
			}
		}
	}
}
