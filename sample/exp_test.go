package sample

import (
	"math"
	"math/big"
	"testing"
)

// The table must hold 2^(j/64) correctly rounded: compare with a 300-bit
// computation (2^(1/64) by six square roots, then powers).
func TestExp2TableCorrectlyRounded(t *testing.T) {
	const prec = 300
	root := new(big.Float).SetPrec(prec).SetInt64(2)
	for range 6 {
		root.Sqrt(root)
	}
	v := new(big.Float).SetPrec(prec).SetInt64(1)
	for j := range exp2Table {
		want, _ := v.Float64()
		if exp2Table[j] != want {
			t.Errorf("exp2Table[%d] = %x, want %x", j, exp2Table[j], want)
		}
		v.Mul(v, root)
	}
}

func TestExpDetAccuracy(t *testing.T) {
	r := newRNG(7)
	worst := 0.0
	for i := 0; i < 200000; i++ {
		// Mostly the sampler's range [-60, 0], some down to -708.
		x := -60 * r.float64()
		if i%10 == 0 {
			x = -708 * r.float64()
		}
		if i%10 == 1 {
			x = 700 * r.float64()
		}
		got, want := expDet(x), math.Exp(x)
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	// 1 ulp ≈ 1.1e-16 relative at worst; allow 2.
	if worst > 4.5e-16 {
		t.Errorf("worst relative error %.3g, want < 4.5e-16", worst)
	}
	t.Logf("worst relative error vs math.Exp: %.3g", worst)
}

func TestExpDetSpecial(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{0, 1},
		{math.Inf(-1), 0},
		{-709, 0},
		{-1e300, 0},
		{710, math.Inf(1)},
		{math.Inf(1), math.Inf(1)},
	} {
		if got := expDet(c.x); got != c.want {
			t.Errorf("expDet(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := expDet(math.NaN()); !math.IsNaN(got) {
		t.Errorf("expDet(NaN) = %v", got)
	}
	if got := expDet(-1e-300); got != 1 {
		t.Errorf("expDet(-1e-300) = %v, want 1", got)
	}
	// Monotone and <= 1 for x <= 0 (the sampler relies on e <= 1).
	prev := 0.0
	for x := -30.0; x <= 0; x += 1.0 / 1024 {
		v := expDet(x)
		if v < prev || v > 1 {
			t.Fatalf("expDet not monotone / above 1 at %v: %v after %v", x, v, prev)
		}
		prev = v
	}
}

func BenchmarkExpDet(b *testing.B) {
	x := -3.0
	var s float64
	for b.Loop() {
		s += expDet(x)
		x -= 1e-6
	}
	_ = s
}

func BenchmarkMathExp(b *testing.B) {
	x := -3.0
	var s float64
	for b.Loop() {
		s += math.Exp(x)
		x -= 1e-6
	}
	_ = s
}
