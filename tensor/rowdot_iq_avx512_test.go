package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIQZx8 checks the eight-token zmm kernels of IQ4_NL and MXFP4
// (dotQRowsIQX8) against the single-token row dots bit for bit, for each
// of the eight tokens of groups at several offsets in a batch (one token
// with a 30× range), raw and quantized rows of several lengths (odd block
// counts too) at a padded stride, and row ranges not starting at 0.
func TestIQZx8(t *testing.T) {
	if !hasKZ {
		t.Skip("no AVX-512 BW+VNNI")
	}
	rng := rand.New(rand.NewPCG(75, 76))
	for _, wt := range []DType{IQ4_NL, MXFP4} {
		for _, cols := range []int{32, 96, 256, 2048} {
			const rows, n = 11, 19
			rb, _ := wt.RowBytes(cols)
			stride := rb + 3
			w := make([]byte, rows*stride)
			for r := range rows {
				copy(w[r*stride:], iqRandRow(t, rng, wt, cols, 0.02, r%2 == 0))
			}
			x := randVec(rng, n*cols)
			for i := range cols {
				x[9*cols+i] *= 30
			}
			var a quantizedActs
			if err := quantizeActs(&a, wt, x); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, n*rows)
			for tok := range n {
				dotQRows(wt, want[tok*rows:(tok+1)*rows], w, stride, cols, &a, tok*cols)
			}
			p, dx := make([]byte, qx8PackLen(cols)), make([]float32, cols/32*8)
			for _, t0 := range []int{0, 3, 11} {
				qx8Pack(p, dx, &a, cols, t0)
				for _, lo := range []int{0, 4} {
					got := make([]float32, n*rows)
					dotQRowsIQX8(wt, got, rows, w, stride, lo, rows, cols, p, dx, t0)
					for tok := t0; tok < t0+8; tok++ {
						for r := lo; r < rows; r++ {
							g, wnt := got[tok*rows+r], want[tok*rows+r]
							if math.Float32bits(g) != math.Float32bits(wnt) {
								t.Fatalf("%s cols=%d t0=%d lo=%d token %d row %d: x8 %v, row dot %v", wt, cols, t0, lo, tok, r, g, wnt)
							}
						}
					}
				}
			}
		}
	}
}
