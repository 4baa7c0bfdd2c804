package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// qx4Types are the weight types with multi-token row dots.
var qx4Types = []DType{Q4_K, Q5_K, Q6_K, Q8_0}

// TestDotQRowsX4 checks the multi-token kernels against the per-token
// reference dotQ and, for the types MatMul uses them for (x4Invariant),
// bit for bit against the single-token row dot: groups of 1-4 distinct
// tokens (repeats in the tail), token offsets that skip tokens, 1-3
// super-blocks, rows written with an offset and a destination stride,
// nothing else touched; Q8_0 on the AVX2 kernels and, where the CPU has
// them, the AVX-512 VNNI ones (hasVNNI). (Q4_0's and Q5_0's packed
// kernels: TestQ4x8.)
func TestDotQRowsX4(t *testing.T) {
	if !qdotX4Arch || !hasSIMD {
		t.Skip("no multi-token kernels on this machine (amd64 with AVX2 only)")
	}
	saved := hasVNNI
	defer func() { hasVNNI = saved }()
	for _, vnni := range []bool{false, true} {
		if vnni && !saved {
			t.Log("no AVX-512 VNNI on this machine: only the AVX2 Q8_0 kernels ran")
			continue
		}
		hasVNNI = vnni
		testDotQRowsX4(t, vnni)
	}
}

func testDotQRowsX4(t *testing.T, vnni bool) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, ty := range qx4Types {
		for nsb := 1; nsb <= 3; nsb++ {
			const rows, ntok = 7, 9
			cols := nsb * qkK
			if ty == Q8_0 {
				cols = []int{32, 64, 96}[nsb-1] // odd and even block counts
			}
			data, v := qgRandRows(t, rng, ty, rows, cols)
			rb := len(data) / rows
			if ty == Q8_0 {
				data[rb+2+5] = 0x80 // a −128 weight (row 1), which files may hold
				v[cols+5] = -128 * f16At(data[rb:])
			}
			x := randVec(rng, ntok*cols)
			for i := range cols { // a token with a larger range
				x[3*cols+i] *= 40
			}
			var acts quantizedActs
			if err := quantizeActs(&acts, ty, x); err != nil {
				t.Fatal(err)
			}
			for _, toks := range [][4]int{{0, 1, 2, 3}, {5, 6, 7, 8}, {2, 3, 4, 4}, {7, 8, 8, 8}, {0, 2, 5, 8}, {3, 6, 6, 6}, {4, 4, 4, 4}} {
				for _, span := range [][2]int{{0, rows}, {2, 5}, {6, 7}} {
					lo, hi := span[0], span[1]
					const ldd = rows + 3
					dst := make([]float32, ntok*ldd)
					for i := range dst {
						dst[i] = -7
					}
					dxv := make([]float32, qx4DxvLen(ty, cols))
					qx4Prep(dxv, ty, &acts, cols, &toks)
					dotQRowsX4(ty, dst, ldd, data, rb, lo, hi, cols, &acts, &toks, dxv)
					name := fmt.Sprintf("%s nsb=%d toks=%v rows [%d,%d) vnni=%v", ty, nsb, toks, lo, hi, vnni)
					for tok := range ntok {
						in := false
						for _, u := range toks {
							in = in || u == tok
						}
						for r := range ldd {
							got := dst[tok*ldd+r]
							if !in || r < lo || r >= hi {
								if got != -7 {
									t.Fatalf("%s: wrote token %d row %d", name, tok, r)
								}
								continue
							}
							if one := dotQFast(ty, data[r*rb:(r+1)*rb], &acts, tok*cols); x4Invariant(ty) && math.Float32bits(got) != math.Float32bits(one) {
								t.Fatalf("%s token %d row %d: %v, the row dot gives %v", name, tok, r, got, one)
							}
							want := dotQ(ty, data[r*rb:(r+1)*rb], &acts, tok*cols)
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
}

// BenchmarkFewTokens is a decode step of a few sequences: n tokens through
// a TinyLlama FFN-shaped K-quant matrix (DRAM-resident copies), on the
// multi-token kernels ("x4") and on the per-token row dots ("rows") in the
// same run. GFLOP/s = 2·rows·cols·n per op.
//
//	go test ./tensor -run XXX -bench FewTokens -benchtime 20x
func BenchmarkFewTokens(b *testing.B) {
	for _, t := range []DType{Q4_K, Q5_K, Q6_K, Q8_0} {
		sh := [2]int{5632, 2048}
		for _, n := range []int{2, 3, 4, 5, 8, 12, 15} {
			for _, th := range []int{1, 2} {
				for _, path := range []string{"x4", "rows"} {
					b.Run(fmt.Sprintf("%s/%dx%d/n=%d/threads=%d/%s", t, sh[0], sh[1], n, th, path), func(b *testing.B) {
						saved := qdotX4On
						qdotX4On = path == "x4"
						defer func() { qdotX4On = saved }()
						benchMatMul(b, benchMats(b, t, sh[0], sh[1]), th, n)
					})
				}
			}
		}
	}
}

// TestMatMulFewTokens checks MatMul for every n from 1 to 20 and a few
// larger through the types with multi-token kernels against the per-token
// reference matMulQuant (dotQ) and against the per-token row dots
// (qdotX4On = false): ragged row counts
// (chunks and groups of four tokens with tails), nil, 1- and 2-worker
// pools.
func TestMatMulFewTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	pools := []*Pool{nil, NewPool(1), NewPool(2)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	type shape struct{ rows, cols int }
	shapes := []shape{{1, 256}, {7, 512}, {37, 768}, {130, 256}, {9, 32}, {5, 96}}
	for _, ty := range qx4Types {
		var worst float64 // largest difference from the row dots, relative to Σ|w·x|
		for _, sh := range shapes {
			if sh.cols%ty.BlockSize() != 0 {
				continue
			}
			data, v := qgRandRows(t, rng, ty, sh.rows, sh.cols)
			w, err := NewMat(ty, sh.rows, sh.cols, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 31, 63, 64, 65} {
				if n > 20 && sh.rows > 40 {
					continue
				}
				x := randVec(rng, n*sh.cols)
				for i := range sh.cols { // a token with a larger range
					x[(n/2)*sh.cols+i] *= 30
				}
				want := make([]float32, n*sh.rows)
				matMulQuant(want, w, x, n, 0, sh.rows)
				rows := make([]float32, n*sh.rows)
				qdotX4On = false
				pools[2].MatMul(rows, w, x, n)
				qdotX4On = true
				for pi, p := range pools {
					dst := make([]float32, n*sh.rows)
					for i := range dst {
						dst[i] = float32(math.NaN())
					}
					p.MatMul(dst, w, x, n)
					for tok := range n {
						for r := range sh.rows {
							var mag float64
							for c := range sh.cols {
								mag += math.Abs(float64(v[r*sh.cols+c] * x[tok*sh.cols+c]))
							}
							i := tok*sh.rows + r
							worst = max(worst, math.Abs(float64(dst[i]-rows[i]))/(mag+1e-30))
							for _, ref := range []float32{want[i], rows[i]} {
								if e := math.Abs(float64(dst[i]-ref)) / (mag + 1e-30); !(e < 1e-5) {
									t.Fatalf("%s (%d,%d) n=%d pool#%d token %d row %d: %g, want %g (rel %g)",
										ty, sh.rows, sh.cols, n, pi, tok, r, dst[i], ref, e)
								}
							}
						}
					}
				}
			}
		}
		t.Logf("%s: worst |MatMul − per-token row dots| / Σ|w·x| = %.2g", ty, worst)
	}
	// The steady state allocates nothing.
	const rows, cols, n = 33, 512, 7
	data, _ := qgRandRows(t, rng, Q4_K, rows, cols)
	w, err := NewMat(Q4_K, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	x := randVec(rng, n*cols)
	dst := make([]float32, n*rows)
	if a := testing.AllocsPerRun(10, func() { pools[2].MatMul(dst, w, x, n) }); a != 0 {
		t.Errorf("%v allocations per MatMul, want 0", a)
	}
}
