package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotRowsHalf checks the one-row-at-a-time F16 and BF16 decode
// kernels (dotRowsHalf, AVX-512) against dot4 bit for bit: every column count
// class of the kernel (32-column steps, a 16-column step, the masked 8,
// a Cols%8 tail in Go), 1 to 9 rows at a padded stride, values of mixed
// magnitude so any change of order shows.
func TestDotRowsHalf(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512F (or NANOSERVE_NOAVX512 set)")
	}
	rng := rand.New(rand.NewPCG(91, 92))
	for _, ty := range []DType{F16, BF16} {
		testDotRowsHalf(t, rng, ty)
	}
}

func testDotRowsHalf(t *testing.T, rng *rand.Rand, ty DType) {
	for _, cols := range []int{8, 13, 16, 24, 32, 40, 48, 56, 64, 72, 2048, 2051, 2056, 5632} {
		for _, rows := range []int{1, 4, 9} {
			stride := 2*cols + 6
			w := make([]byte, rows*stride)
			for r := range rows {
				for c := range cols {
					v := float32(rng.NormFloat64() * math.Exp(rng.NormFloat64()))
					h := F32ToF16(v)
					if ty == BF16 {
						h = uint16(math.Float32bits(v) >> 16)
					}
					w[r*stride+2*c], w[r*stride+2*c+1] = byte(h), byte(h>>8)
				}
			}
			x := randVec(rng, cols)
			got := make([]float32, rows+1)
			got[rows] = 7 // must stay untouched
			dotRowsHalf(ty, got[:rows], w, stride, x)
			var out [4]float32
			for r := range rows {
				dot4(ty, w[r*stride:r*stride+2*cols], 0, x, &out)
				if math.Float32bits(got[r]) != math.Float32bits(out[0]) {
					t.Fatalf("%s cols=%d rows=%d row %d: dotRowsHalf %v, dot4 %v", ty, cols, rows, r, got[r], out[0])
				}
			}
			if got[rows] != 7 {
				t.Fatalf("%s cols=%d rows=%d: wrote past the rows", ty, cols, rows)
			}
		}
	}
}
