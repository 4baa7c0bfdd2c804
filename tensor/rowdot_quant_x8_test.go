package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotQRowsX8 checks the eight-token Q8_0 kernel bit for bit against
// the single-token row dot (qdotQ8_0SIMD through dotQFast) and, to
// rounding, against the reference dotQ: 1-5 blocks (the kernel's
// two-block loop and its one-block tail), a −128 weight, a token with a
// larger range, groups starting at token 0 and 3, rows written with an
// offset and a destination stride, nothing else touched.
func TestDotQRowsX8(t *testing.T) {
	if !useQ8x8(Q8_0) {
		t.Skip("no AVX-512 VNNI on this machine")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	for nb := 1; nb <= 5; nb++ {
		const rows, ntok = 9, 12
		cols := nb * 32
		data, v := qgRandRows(t, rng, Q8_0, rows, cols)
		rb := len(data) / rows
		data[rb+2+5] = 0x80 // a −128 weight (row 1), which files may hold
		v[cols+5] = -128 * f16At(data[rb:])
		x := randVec(rng, ntok*cols)
		for i := range cols {
			x[5*cols+i] *= 40
		}
		var acts quantizedActs
		if err := quantizeActs(&acts, Q8_0, x); err != nil {
			t.Fatal(err)
		}
		for _, t0 := range []int{0, 3} {
			for _, span := range [][2]int{{0, rows}, {2, 5}, {8, 9}} {
				lo, hi := span[0], span[1]
				const ldd = rows + 3
				dst := make([]float32, ntok*ldd)
				for i := range dst {
					dst[i] = -7
				}
				p := make([]byte, qx8PackLen(cols))
				dx := make([]float32, nb*8)
				qx8Pack(p, dx, &acts, cols, t0)
				dotQRowsX8(dst, ldd, data, rb, lo, hi, cols, p, dx, t0)
				name := fmt.Sprintf("nb=%d t0=%d rows [%d,%d)", nb, t0, lo, hi)
				for tok := range ntok {
					for r := range ldd {
						got := dst[tok*ldd+r]
						if tok < t0 || tok >= t0+8 || r < lo || r >= hi {
							if got != -7 {
								t.Fatalf("%s: wrote token %d row %d", name, tok, r)
							}
							continue
						}
						if one := dotQFast(Q8_0, data[r*rb:(r+1)*rb], &acts, tok*cols); math.Float32bits(got) != math.Float32bits(one) {
							t.Fatalf("%s token %d row %d: %v, the row dot gives %v", name, tok, r, got, one)
						}
						want := dotQ(Q8_0, data[r*rb:(r+1)*rb], &acts, tok*cols)
						var mag float64
						for i := range cols {
							mag += math.Abs(float64(v[r*cols+i] * x[tok*cols+i]))
						}
						if e := math.Abs(float64(got-want)) / (mag + 1); !(e < 1e-5) {
							t.Fatalf("%s token %d row %d: %g, want %g (rel %g)", name, tok, r, got, want, e)
						}
					}
				}
			}
		}
	}
}

// BenchmarkQ8x8 compares, in one run, Q8_0 MatMul of n tokens through
// TinyLlama's FFN up-projection shape on the eight-token zmm kernel ("x8")
// and on the four-token ymm VNNI kernels ("x4"); GFLOP/s = 2·rows·cols·n
// per op (int8 operations for Q8_0).
//
//	go test ./tensor -run XXX -bench Q8x8 -benchtime 20x
func BenchmarkQ8x8(b *testing.B) {
	if !useQ8x8(Q8_0) {
		b.Skip("no AVX-512 VNNI on this machine")
	}
	for _, sh := range [][2]int{{5632, 2048}, {2048, 5632}} {
		for _, n := range []int{8, 16, 32} {
			for _, path := range []string{"x8", "x4"} {
				b.Run(fmt.Sprintf("%dx%d/n=%d/%s", sh[0], sh[1], n, path), func(b *testing.B) {
					saved := hasQ8x8
					hasQ8x8 = path == "x8"
					defer func() { hasQ8x8 = saved }()
					benchMatMul(b, benchMats(b, Q8_0, sh[0], sh[1]), 1, n)
				})
			}
		}
	}
}
