package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestCausalConv4 runs tokens through CausalConv4 (AVX2 where the CPU has
// it, and the Go loop) and through a plain window convolution written
// from the definition, and wants every output and the final state bit for
// bit: the vector path must keep the Go loop's rounding (each product
// rounded, added in tap order starting from +0), its tail channels and
// the window's move. The inputs include signed zeros, so a sum started
// from the first product instead of +0 shows as -0.
func TestCausalConv4(t *testing.T) {
	for _, simd := range []bool{false, true} {
		if simd && !hasSIMD {
			t.Log("no SIMD kernel on this CPU: the Go path only")
			continue
		}
		saved := hasSIMD
		hasSIMD = simd
		for _, n := range []int{1, 5, 8, 13, 64, 131} {
			for _, T := range []int{1, 2, 5, 33} {
				checkCausalConv4(t, fmt.Sprintf("simd %v, n %d, T %d", simd, n, T), n, T)
			}
		}
		hasSIMD = saved
	}
}

func checkCausalConv4(t *testing.T, name string, n, T int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), uint64(T)))
	val := func() float32 {
		switch rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		}
		return float32(rng.NormFloat64())
	}
	kernel := make([]float32, 4*n)
	state := make([]float32, 3*n)
	x := make([]float32, T*n)
	for _, s := range [][]float32{kernel, state, x} {
		for i := range s {
			s[i] = val()
		}
	}
	// The reference, token by token: win holds the last three inputs.
	var win [3][]float32
	for j := range win {
		win[j] = append([]float32(nil), state[j*n:(j+1)*n]...)
	}
	want := make([]float32, len(x))
	for tok := range T {
		xt := x[tok*n : (tok+1)*n]
		for c := range n {
			var s float32
			for j := range 3 {
				s += float32(win[j][c] * kernel[4*c+j])
			}
			s += float32(xt[c] * kernel[4*c+3])
			want[tok*n+c] = s
		}
		win[0], win[1], win[2] = win[1], win[2], append([]float32(nil), xt...)
	}
	out := make([]float32, len(x))
	for tok := range T {
		CausalConv4(out[tok*n:(tok+1)*n], x[tok*n:(tok+1)*n], state[:n], state[n:2*n], state[2*n:], kernel)
	}
	for tok := range T {
		for c := range n {
			g, w := out[tok*n+c], want[tok*n+c]
			if math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("%s: token %d channel %d: %g (%#x), want %g (%#x)", name, tok, c, g, math.Float32bits(g), w, math.Float32bits(w))
			}
		}
	}
	for j := range 3 {
		for c := range n {
			if g, w := state[j*n+c], win[j][c]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("%s: state row %d channel %d is %g, want %g", name, j, c, g, w)
			}
		}
	}
}
