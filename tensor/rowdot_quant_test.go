package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotQFast checks the assembly quantized dots against the reference
// dotQ on random rows of several lengths (and activation offsets).
func TestDotQFast(t *testing.T) {
	if !hasSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, wt := range dotTypes {
		for _, cols := range []int{256, 512, 2048, 5632} {
			for trial := range 5 {
				scale := []float64{0.02, 1, 30}[trial%3]
				v := make([]float32, cols)
				for i := range v {
					v[i] = float32(rng.NormFloat64() * scale)
				}
				rb, _ := wt.RowBytes(cols)
				w := make([]byte, rb)
				if err := QuantizeRow(w, wt, v); err != nil {
					t.Fatal(err)
				}
				x := make([]float32, 2*cols) // two rows: test off = cols too
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				var a quantizedActs
				if err := quantizeActs(&a, wt, x); err != nil {
					t.Fatal(err)
				}
				for _, off := range []int{0, cols} {
					want := dotQ(wt, w, &a, off)
					got := dotQFast(wt, w, &a, off)
					var mag float64
					wf := make([]float32, cols)
					DequantizeRow(wf, wt, w)
					for i := range wf {
						mag += math.Abs(float64(wf[i]) * float64(x[off+i]))
					}
					if e := math.Abs(float64(got-want)) / mag; !(e < 1e-5) {
						t.Fatalf("%s cols=%d off=%d: got %g, want %g (rel %g)", wt, cols, off, got, want, e)
					}
					// Several rows in one call (stride > row bytes), each
					// against the same activations.
					const rows = 3
					stride := rb + 7
					wm := make([]byte, rows*stride)
					for r := range rows {
						copy(wm[r*stride:], w)
						if r > 0 { // vary the rows: flip some quant bits
							for i := r; i < rb; i += 5 {
								wm[r*stride+i] ^= byte(0x11 * r)
							}
						}
					}
					got3 := make([]float32, rows)
					dotQRows(wt, got3, wm, stride, cols, &a, off)
					for r := range rows {
						want := dotQ(wt, wm[r*stride:r*stride+rb], &a, off)
						if d := math.Abs(float64(got3[r] - want)); !(d <= 1e-5*mag+1e-6*math.Abs(float64(want))) && !(math.IsNaN(float64(want)) || math.IsInf(float64(want), 0)) {
							t.Fatalf("%s cols=%d off=%d rows: row %d got %g, want %g", wt, cols, off, r, got3[r], want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkDotQFast is one 4096-element row against cached activations, so
// the row stays in L1/L2: the kernel's arithmetic rate (MB/s of weight
// bytes per core), which must exceed the per-core share of DRAM bandwidth
// for the decode matrix-vector product to be memory bound.
func BenchmarkDotQFast(b *testing.B) {
	for _, wt := range dotTypes {
		b.Run(wt.String(), func(b *testing.B) {
			w, x := benchRow(b, wt)
			var a quantizedActs
			if err := quantizeActs(&a, wt, x); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(w)))
			var s float32
			c0 := cpuSeconds()
			for b.Loop() {
				s += dotQFast(wt, w, &a, 0)
			}
			if c := cpuSeconds() - c0; c > 0 {
				b.ReportMetric(float64(len(w))*float64(b.N)/c/1e6, "cpuMB/s")
			}
			_ = s
		})
	}
}

// BenchmarkDotQRows is dotQRows over 32 rows of 4096 elements (≤ 280 KB,
// L2-resident): the kernels' rate without the per-call overhead.
func BenchmarkDotQRows(b *testing.B) {
	const rows = 32
	for _, wt := range dotTypes {
		if !hasQdotKernel(wt) {
			continue
		}
		b.Run(wt.String(), func(b *testing.B) {
			w, x := benchRow(b, wt)
			wm := make([]byte, 0, rows*len(w))
			for range rows {
				wm = append(wm, w...)
			}
			var a quantizedActs
			if err := quantizeActs(&a, wt, x); err != nil {
				b.Fatal(err)
			}
			dst := make([]float32, rows)
			b.SetBytes(int64(len(wm)))
			c0 := cpuSeconds()
			for b.Loop() {
				dotQRows(wt, dst, wm, len(w), benchCols, &a, 0)
			}
			if c := cpuSeconds() - c0; c > 0 {
				b.ReportMetric(float64(len(wm))*float64(b.N)/c/1e6, "cpuMB/s")
			}
		})
	}
}

// TestDequantFast checks the AVX2 dequantizers bit for bit against the
// reference decoders, on random blocks including extreme scales.
func TestDequantFast(t *testing.T) {
	if !hasSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, wt := range dotTypes {
		for _, cols := range []int{256, 768, 5632} {
			for trial := range 4 {
				rb, _ := wt.RowBytes(cols)
				w := make([]byte, rb)
				if trial < 2 {
					v := make([]float32, cols)
					for i := range v {
						v[i] = float32(rng.NormFloat64() * []float64{0.02, 30}[trial])
					}
					if err := QuantizeRow(w, wt, v); err != nil {
						t.Fatal(err)
					}
				} else { // random bytes: every bit pattern of the packed fields
					for i := range w {
						w[i] = byte(rng.Uint32())
					}
				}
				want := make([]float32, cols)
				DequantizeRow(want, wt, w)
				got := make([]float32, cols)
				dequantFast(got, wt, w)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
						t.Fatalf("%s cols=%d trial %d: element %d = %g, want %g", wt, cols, trial, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestQuantizeActsFast checks the AVX2 activation quantizers bit for bit
// against the reference on random vectors (with exact .5 ties, zeros,
// equal-magnitude maxima of both signs, tiny and huge blocks) and checks
// that vectors holding NaN or ±Inf match the reference too.
func TestQuantizeActsFast(t *testing.T) {
	if !hasSIMD {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for _, wt := range []DType{Q8_0, Q4_1, Q4_K} {
		for trial := range 12 {
			n := 256 * (1 + trial%5) * 3
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * []float64{1, 1e-3, 1e3}[trial%3])
			}
			switch trial {
			case 3: // ties: with a block maximum of 127 the scale is 1, so
				// halves stay halves
				for i := range x {
					x[i] = float32(int(rng.Uint32()%255)-127) / 2
					if i%32 == 0 {
						x[i] = 127
					}
				}
			case 4: // zero blocks, ± equal maxima
				clear(x[:300])
				x[400], x[410] = -5, 5
				x[700], x[690] = 7, -7
			case 5: // tiny (subnormal scale) and huge blocks
				for i := range 256 {
					x[i] = 1e-40 * float32(i%3-1)
					x[256+i] = 3e38 * float32(i%3-1)
				}
			case 6:
				x[17] = float32(math.Inf(1))
			case 7:
				x[n-1] = float32(math.NaN())
			}
			var want, got quantizedActs
			saved := hasSIMD
			hasSIMD = false
			err1 := quantizeActs(&want, wt, x)
			hasSIMD = saved
			err2 := quantizeActs(&got, wt, x)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			same := func(a, b float32) bool {
				return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
			}
			for i := range want.Q {
				if want.Q[i] != got.Q[i] {
					t.Fatalf("%s trial %d: Q[%d] = %d, want %d (x = %g)", wt, trial, i, got.Q[i], want.Q[i], x[i])
				}
			}
			for i := range want.D {
				if !same(want.D[i], got.D[i]) {
					t.Fatalf("%s trial %d: D[%d] = %g, want %g", wt, trial, i, got.D[i], want.D[i])
				}
			}
			for i := range want.S {
				if !same(want.S[i], got.S[i]) {
					t.Fatalf("%s trial %d: S[%d] = %g, want %g", wt, trial, i, got.S[i], want.S[i])
				}
			}
			for i := range want.BSums {
				if want.BSums[i] != got.BSums[i] {
					t.Fatalf("%s trial %d: BSums[%d] = %d, want %d", wt, trial, i, got.BSums[i], want.BSums[i])
				}
			}
		}
	}
}

// TestQBlock pins qBlock to the type table.
func TestQBlock(t *testing.T) {
	for _, ty := range quantTypes {
		if bs, bb := qBlock(ty); bs != ty.BlockSize() || bb != ty.blockBytes() {
			t.Errorf("%s: qBlock = (%d, %d), want (%d, %d)", ty, bs, bb, ty.BlockSize(), ty.blockBytes())
		}
	}
}
