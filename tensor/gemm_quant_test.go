package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var qgemmTypes = []DType{Q4_K, Q5_K, Q6_K}

// qgemmAllTypes are the types with an integer GEMM (qgemmKind != 0).
var qgemmAllTypes = []DType{Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, Q5_0}

// qgRandRows returns rows random rows of type ty (cols columns), encoded,
// and their dequantized values.
func qgRandRows(t testing.TB, rng *rand.Rand, ty DType, rows, cols int) ([]byte, []float32) {
	rb, _ := ty.RowBytes(cols)
	data := make([]byte, rows*rb)
	v := make([]float32, rows*cols)
	for r := range rows {
		src := randVec(rng, cols)
		if err := QuantizeRow(data[r*rb:(r+1)*rb], ty, src); err != nil {
			t.Fatal(err)
		}
		DequantizeRow(v[r*cols:(r+1)*cols], ty, data[r*rb:(r+1)*rb])
	}
	return data, v
}

// TestQgemmTile checks the 3×4 micro-kernel (assembly and Go) on unpacked
// rows against the per-token reference dotQ.
func TestQgemmTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	saved := hasSIMD
	defer func() { hasSIMD = saved }()
	for _, ty := range qgemmTypes {
		for nsb := 1; nsb <= 3; nsb++ {
			cols := nsb * qkK
			data, v := qgRandRows(t, rng, ty, qgMR, cols)
			rb := len(data) / qgMR
			lda := nsb*qgSB + 64 // stride larger than a row
			a := make([]byte, qgMR*lda)
			for r := range qgMR {
				qgUnpack(a[r*lda:], ty, data[r*rb:], nsb)
			}
			x := randVec(rng, qgNR*cols)
			for i := range cols { // a token with a larger range
				x[2*cols+i] *= 40
			}
			var acts quantizedActs
			if err := quantizeActs(&acts, ty, x); err != nil {
				t.Fatal(err)
			}
			dxv := make([]float32, nsb*8)
			for sb := range nsb {
				for tk := range qgNR {
					dxv[sb*8+tk] = acts.D[tk*nsb+sb]
					dxv[sb*8+4+tk] = acts.D[tk*nsb+sb]
				}
			}
			for _, asm := range []bool{true, false} {
				if asm && !saved {
					continue
				}
				hasSIMD = asm
				const ldc = 7
				c := make([]float32, qgMR*ldc)
				for i := range c {
					c[i] = 1 // the kernel adds
				}
				xp := make([]int8, len(acts.Q))
				for i := 0; i < len(xp); i += qkK {
					qgPermute(xp[i:i+qkK], acts.Q[i:i+qkK])
				}
				qgemmTile(a, lda, xp, cols, acts.BSums, cols/16, dxv, nsb, c, ldc)
				checkTile(t, fmt.Sprintf("asm=%v %s nsb=%d", asm, ty, nsb), c, ldc, qgMR, ty, data, rb, &acts, v, x, cols)
			}
			hasSIMD = saved
		}
	}
}

// qg8Pack builds the kernel's inputs for four tokens of Q8_0 activations
// (nb blocks each): the mixed layout and the lane-pair scales.
func qg8Pack(acts *quantizedActs, nb int) ([]int8, []float32) {
	xm := make([]int8, nb*128)
	dxv := make([]float32, nb*8)
	for t := range qgNR {
		for b := range nb {
			for i := range 32 {
				xm[b*128+i/8*32+t*8+i%8] = acts.Q[t*nb*32+b*32+i]
			}
			dxv[b*8+2*t] = acts.D[t*nb+b]
			dxv[b*8+2*t+1] = acts.D[t*nb+b]
		}
	}
	return xm, dxv
}

// TestQg8Tile checks the 8×4 Q8_0 micro-kernel (assembly and Go) against
// the per-token reference dotQ, for Q8_0 rows and Q4_0/Q5_0 rows unpacked
// to Q8_0 blocks.
func TestQg8Tile(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	saved := hasSIMD
	defer func() { hasSIMD = saved }()
	for _, ty := range []DType{Q8_0, Q4_0, Q5_0} {
		for _, nb := range []int{1, 2, 7} {
			cols := nb * 32
			data, v := qgRandRows(t, rng, ty, qg8MR, cols)
			rb := len(data) / qg8MR
			lda := nb*34 + 5
			wa := make([]byte, qg8MR*lda)
			for r := range qg8MR {
				if ty == Q8_0 {
					copy(wa[r*lda:], data[r*rb:(r+1)*rb])
				} else {
					qg8Unpack(wa[r*lda:], ty, data[r*rb:], nb)
				}
			}
			dwf := make([]float32, qg8MR*nb)
			if !qg8Scales(dwf, wa, lda, qg8MR, nb) {
				t.Fatalf("%s: unexpected −128 weight", ty)
			}
			x := randVec(rng, qgNR*cols)
			for i := range cols {
				x[cols+i] *= 40
			}
			var acts quantizedActs
			if err := quantizeActs(&acts, ty, x); err != nil {
				t.Fatal(err)
			}
			xm, dxv := qg8Pack(&acts, nb)
			for _, asm := range []bool{true, false} {
				if asm && !saved {
					continue
				}
				hasSIMD = asm
				const ldc = 6
				c := make([]float32, qg8MR*ldc)
				for i := range c {
					c[i] = 1
				}
				qg8Tile(wa, lda, dwf, xm, dxv, nb, c, ldc)
				checkTile(t, fmt.Sprintf("asm=%v %s nb=%d", asm, ty, nb), c, ldc, qg8MR, ty, data, rb, &acts, v, x, cols)
			}
			hasSIMD = saved
		}
	}
}

// TestQg8Scales pins the −128 detection that sends Q8_0 rows to the row
// dots.
func TestQg8Scales(t *testing.T) {
	w := make([]byte, 8*34)
	dwf := make([]float32, 8)
	for pos := 2; pos < 34; pos++ {
		clear(w)
		for i := range w {
			if i%34 >= 2 {
				w[i] = byte(int8(-127 + i%200))
			}
		}
		if !qg8Scales(dwf, w, 34, 8, 1) {
			t.Fatalf("false −128 detected")
		}
		w[3*34+pos] = 0x80
		if qg8Scales(dwf, w, 34, 8, 1) {
			t.Fatalf("−128 at byte %d not detected", pos)
		}
	}
}

// TestMatMulQgemm checks MatMul's integer GEMM against the 8-bit-activation
// reference (matMulQuant: per-token dotQ) on ragged shapes: rows not
// multiples of 3 or of the row block, columns spanning several column
// slices, every n from 1 to 40 (n < 16 takes the matrix-vector kernels;
// rowwiseKMax is lowered to 16 here), and nil, 1- and 2-worker pools.
func TestMatMulQgemm(t *testing.T) {
	if !hasQgemm() {
		t.Skip("no integer GEMM on this machine")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	saved, savedK := qg8MinN, rowwiseKMax
	qg8MinN, rowwiseKMax = rowwiseQuantMax, rowwiseQuantMax // the integer GEMM from n = 16
	defer func() { qg8MinN, rowwiseKMax = saved, savedK }()
	pools := []*Pool{nil, NewPool(1), NewPool(2)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	type shape struct{ rows, cols int }
	shapes := []shape{{1, 256}, {2, 512}, {3, 256}, {25, 768}, {50, 2304}, {73, 256}, {38, 2336}, {6, 32}}
	for _, ty := range qgemmAllTypes {
		if qgemmKind(ty) == 0 {
			t.Fatalf("%s has no integer GEMM", ty)
		}
		for si, sh := range shapes {
			if sh.cols%ty.BlockSize() != 0 {
				continue
			}
			data, v := qgRandRows(t, rng, ty, sh.rows, sh.cols)
			w, err := NewMat(ty, sh.rows, sh.cols, data)
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= 40; n++ {
				if si != 3 && n%5 != 0 && n != 17 && n != 19 && n != 1 {
					continue // all n on one shape, a sample on the others
				}
				x := randVec(rng, n*sh.cols)
				want := make([]float32, n*sh.rows)
				matMulQuant(want, w, x, n, 0, sh.rows)
				for pi, p := range pools {
					dst := make([]float32, n*sh.rows)
					for i := range dst {
						dst[i] = float32(math.NaN())
					}
					p.MatMul(dst, w, x, n)
					name := fmt.Sprintf("%s (%d,%d) n=%d pool#%d", ty, sh.rows, sh.cols, n, pi)
					for tok := range n {
						for r := range sh.rows {
							var mag float64
							for c := range sh.cols {
								mag += math.Abs(float64(v[r*sh.cols+c] * x[tok*sh.cols+c]))
							}
							i := tok*sh.rows + r
							if e := math.Abs(float64(dst[i]-want[i])) / mag; !(e < 1e-5) {
								t.Fatalf("%s token %d row %d: %g, want %g (rel %g)", name, tok, r, dst[i], want[i], e)
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkQGEMM is prefill through TinyLlama-shaped quantized matrices on
// the integer GEMM and on the float GEMM (dequantize + FMA) in the same
// run: GFLOP/s = 2·rows·cols·n per op.
//
//	go test ./tensor -run XXX -bench QGEMM -benchtime 5x
func BenchmarkQGEMM(b *testing.B) {
	for _, t := range []DType{Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K} {
		for _, sh := range [][2]int{{2048, 2048}, {5632, 2048}, {2048, 5632}} {
			for _, n := range []int{16, 32, 64, 128, 256, 512} {
				for _, th := range []int{1, 2} {
					for _, path := range []string{"int", "float"} {
						benchQGEMM(b, t, sh, n, th, path)
					}
				}
			}
		}
	}
}

func benchQGEMM(b *testing.B, t DType, sh [2]int, n, th int, path string) {
	b.Run(fmt.Sprintf("%s/%dx%d/n=%d/threads=%d/%s", t, sh[0], sh[1], n, th, path), func(b *testing.B) {
		saved, saved8, savedK := qgemmOn, qg8MinN, rowwiseKMax
		qgemmOn, qg8MinN, rowwiseKMax = path == "int", 0, 2
		defer func() { qgemmOn, qg8MinN, rowwiseKMax = saved, saved8, savedK }()
		benchMatMul(b, benchMats(b, t, sh[0], sh[1]), th, n)
	})
}

// BenchmarkQgemmTile is the micro-kernel alone on L1-resident data (8
// super-blocks): its arithmetic rate per core.
func BenchmarkQgemmTile(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const nsb = 8
	cols := nsb * qkK
	data, _ := qgRandRows(b, rng, Q4_K, qgMR, cols)
	rb := len(data) / qgMR
	lda := nsb * qgSB
	a := make([]byte, qgMR*lda)
	for r := range qgMR {
		qgUnpack(a[r*lda:], Q4_K, data[r*rb:], nsb)
	}
	var acts quantizedActs
	if err := quantizeActs(&acts, Q4_K, randVec(rng, qgNR*cols)); err != nil {
		b.Fatal(err)
	}
	dxv := make([]float32, nsb*8)
	c := make([]float32, 3*4)
	c0 := cpuSeconds()
	for b.Loop() {
		qgemmTile(a, lda, acts.Q, cols, acts.BSums, cols/16, dxv, nsb, c, 4)
	}
	b.ReportMetric(2*qgMR*qgNR*float64(cols)*float64(b.N)/(cpuSeconds()-c0)/1e9, "cpuGFLOP/s")
}

// BenchmarkQgUnpack: SetBytes is the encoded row size.
func BenchmarkQgUnpack(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ty := range qgemmTypes {
		b.Run(ty.String(), func(b *testing.B) {
			const nsb = 8
			data, _ := qgRandRows(b, rng, ty, 1, nsb*qkK)
			a := make([]byte, nsb*qgSB)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				qgUnpack(a, ty, data, nsb)
			}
		})
	}
}

// BenchmarkGemmTileF32 is the float 6×16 micro-kernel on L1-resident data,
// for comparison with BenchmarkQgemmTile.
func BenchmarkGemmTileF32(b *testing.B) {
	const k = 256
	a := make([]float32, gemmMR*k)
	bb := make([]float32, gemmNR*k)
	c := make([]float32, gemmMR*gemmNR)
	c0 := cpuSeconds()
	for b.Loop() {
		gemmTile(a, k, bb, c, gemmNR, k, true)
	}
	b.ReportMetric(2*gemmMR*gemmNR*k*float64(b.N)/(cpuSeconds()-c0)/1e9, "cpuGFLOP/s")
}

// BenchmarkQg8Tile is the Q8_0 micro-kernel alone on L1-resident data (64
// blocks): its arithmetic rate per core.
func BenchmarkQg8Tile(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const nb = 64
	cols := nb * 32
	data, _ := qgRandRows(b, rng, Q8_0, qg8MR, cols)
	var acts quantizedActs
	if err := quantizeActs(&acts, Q8_0, randVec(rng, qgNR*cols)); err != nil {
		b.Fatal(err)
	}
	xm, dxv := qg8Pack(&acts, nb)
	dwf := make([]float32, qg8MR*nb)
	c := make([]float32, qg8MR*4)
	c0 := cpuSeconds()
	for b.Loop() {
		qg8Tile(data, len(data)/qg8MR, dwf, xm, dxv, nb, c, 4)
	}
	b.ReportMetric(2*qg8MR*qgNR*float64(cols)*float64(b.N)/(cpuSeconds()-c0)/1e9, "cpuGFLOP/s")
}

// TestMatMulQg8Minus128 checks that Q8_0 weights holding −128 (which
// llama.cpp's quantizer never writes, but a file may) still match the
// row-dot reference: qg8Block sends such row blocks to dotQRows.
func TestMatMulQg8Minus128(t *testing.T) {
	if !hasQgemm() {
		t.Skip("no integer GEMM on this machine")
	}
	saved := qg8MinN
	qg8MinN = rowwiseQuantMax
	defer func() { qg8MinN = saved }()
	rng := rand.New(rand.NewPCG(17, 18))
	const rows, cols, n = 40, 2176, 21 // two column slices, a 4+4 row tail
	data, _ := qgRandRows(t, rng, Q8_0, rows, cols)
	rb := len(data) / rows
	data[37*rb+2+3*34+5] = 0x80 // row 37 (second block of rows), block 3
	w, err := NewMat(Q8_0, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	x := randVec(rng, n*cols)
	want := make([]float32, n*rows)
	matMulQuant(want, w, x, n, 0, rows)
	p := NewPool(2)
	defer p.Close()
	got := make([]float32, n*rows)
	p.MatMul(got, w, x, n)
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*max(1, math.Abs(float64(want[i]))) {
			t.Fatalf("token %d row %d: %g, want %g", i/rows, i%rows, got[i], want[i])
		}
	}
	if a := testing.AllocsPerRun(10, func() { p.MatMul(got, w, x, n) }); a != 0 {
		t.Errorf("%v allocations per MatMul, want 0", a)
	}
}

// checkTile compares a micro-kernel's (mr, qgNR) tile c, which started at
// 1, with 1 + dotQ of each weight row (data, rb bytes a row; v its float
// values) and token of x/acts, relative to Σ|w·x|.
func checkTile(t *testing.T, name string, c []float32, ldc, mr int, ty DType, data []byte, rb int, acts *quantizedActs, v, x []float32, cols int) {
	t.Helper()
	for r := range mr {
		for tk := range qgNR {
			want := dotQ(ty, data[r*rb:(r+1)*rb], acts, tk*cols) + 1
			var mag float64
			for i := range cols {
				mag += math.Abs(float64(v[r*cols+i] * x[tk*cols+i]))
			}
			got := c[r*ldc+tk]
			if e := math.Abs(float64(got-want)) / (mag + 1); !(e < 1e-5) {
				t.Fatalf("%s row %d token %d: %g, want %g (rel %g)", name, r, tk, got, want, e)
			}
		}
	}
}
