package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// kzRowTypes are the types with zmm row dots and eight-token kernels (hasKZ).
var kzRowTypes = []DType{Q4_K, Q5_K, Q6_K, IQ4_XS}

// TestKQuantZBitwise checks the zmm K-quant row dots (hasKZ) against the
// ymm ones bit for bit: random rows of raw bytes (every nibble, scale and
// min value, finite f16 super-block scales) and quantized rows, several
// lengths, a stride with padding, activations at an offset and with a
// token of 30× range. The zmm kernels are the ymm ones' arithmetic, so
// anything but == is a bug.
func TestKQuantZBitwise(t *testing.T) {
	if !hasKZ {
		t.Skip("no AVX-512 BW+VNNI")
	}
	defer func(saved bool) { hasKZ = saved }(hasKZ)
	rng := rand.New(rand.NewPCG(71, 72))
	for _, wt := range kzRowTypes {
		bs, bb := qBlock(wt)
		for _, cols := range []int{256, 512, 2048, 4096} {
			const rows = 13
			nb := cols / bs
			stride := nb*bb + 5
			w := make([]byte, rows*stride)
			for r := range rows {
				row := w[r*stride : r*stride+nb*bb]
				if r%2 == 0 {
					for i := range row {
						row[i] = byte(rng.Uint32())
					}
					for b := range nb { // finite f16 scales: d, dmin (Q4_K, Q5_K) or d (Q6_K, last)
						for _, at := range kzScaleOffsets(wt) {
							h := F32ToF16(float32(rng.NormFloat64()))
							row[b*bb+at], row[b*bb+at+1] = byte(h), byte(h>>8)
						}
					}
				} else if err := QuantizeRow(row, wt, randVec(rng, cols)); err != nil {
					t.Fatal(err)
				}
			}
			x := randVec(rng, 2*cols)
			for i := range cols {
				x[cols+i] *= 30
			}
			var a quantizedActs
			if err := quantizeActs(&a, wt, x); err != nil {
				t.Fatal(err)
			}
			for _, off := range []int{0, cols} {
				want, got := make([]float32, rows), make([]float32, rows)
				hasKZ = false
				dotQRows(wt, want, w, stride, cols, &a, off)
				hasKZ = true
				dotQRows(wt, got, w, stride, cols, &a, off)
				for r := range rows {
					if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
						t.Fatalf("%s cols=%d off=%d row %d: zmm %v, ymm %v", wt, cols, off, r, got[r], want[r])
					}
				}
			}
		}
	}
}

// kzScaleOffsets are the byte offsets of a super-block's f16 scales.
func kzScaleOffsets(wt DType) []int {
	switch wt {
	case Q6_K:
		return []int{208}
	case IQ4_XS:
		return []int{0}
	}
	return []int{0, 2}
}

// BenchmarkKQuantZ sets the zmm and ymm K-quant kernels side by side in
// one run: "L2" is dotQRows over 32 L2-resident rows of 4096 (the
// kernels' arithmetic rate, cpuMB/s of weights per CPU-second), "DRAM" a
// decode MatMul through TinyLlama's (5632, 2048) FFN shape on one thread,
// weights from DRAM (compare with BenchmarkReadBandwidth/goroutines=1),
// "prefill" a 64-token MatMul through (2048, 2048) on one thread (the
// eight-token zmm kernels against the four-token ymm ones; GOP/s counts
// 2·rows·cols·n).
//
//	go test ./tensor -run XXX -bench KQuantZ -benchtime 100x -count 3
func BenchmarkKQuantZ(b *testing.B) {
	defer func(saved bool) { hasKZ = saved }(hasKZ)
	paths := []string{"zmm", "ymm"}
	if !hasKZ {
		paths = paths[1:]
	}
	for _, wt := range kzRowTypes {
		for _, path := range paths {
			b.Run(wt.String()+"/L2/"+path, func(b *testing.B) {
				hasKZ = path == "zmm"
				const rows = 32
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
		for _, path := range paths {
			b.Run(wt.String()+"/DRAM/5632x2048/"+path, func(b *testing.B) {
				hasKZ = path == "zmm"
				benchMatVec(b, benchMats(b, wt, 5632, 2048), 1)
			})
		}
		for _, path := range paths {
			b.Run(wt.String()+"/prefill/2048x2048/n=64/"+path, func(b *testing.B) {
				hasKZ = path == "zmm"
				const rows, cols, n = 2048, 2048, 64
				rng := rand.New(rand.NewPCG(5, 6))
				_, bb := qBlock(wt)
				w, err := NewMat(wt, rows, cols, kzRandRows(b, rng, wt, rows, cols, cols/qkK*bb))
				if err != nil {
					b.Fatal(err)
				}
				x := randVec(rng, n*cols)
				dst := make([]float32, n*rows)
				for b.Loop() {
					(*Pool)(nil).MatMul(dst, w, x, n)
				}
				b.ReportMetric(2*rows*cols*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
	}
}

// benchMatVec times one-token MatMuls through the copies ms on th workers,
// reporting MB/s of weights per wall and per CPU-second.
func benchMatVec(b *testing.B, ms []*Mat, th int) {
	p := NewPool(th)
	defer p.Close()
	x := randVec(rand.New(rand.NewPCG(3, 4)), ms[0].Cols)
	dst := make([]float32, ms[0].Rows)
	b.SetBytes(int64(len(ms[0].Data)))
	i := 0
	c0 := cpuSeconds()
	for b.Loop() {
		p.MatMul(dst, ms[i%len(ms)], x, 1)
		i++
	}
	if c := cpuSeconds() - c0; c > 0 {
		b.ReportMetric(float64(len(ms[0].Data))*float64(b.N)/c/1e6, "cpuMB/s")
	}
}

// kzRandRows returns rows Q4_K/Q5_K/Q6_K rows of cols columns at the given
// stride: even rows raw random bytes with finite f16 scales (every nibble,
// scale and min value), odd rows quantized Gaussians.
func kzRandRows(t testing.TB, rng *rand.Rand, wt DType, rows, cols, stride int) []byte {
	bs, bb := qBlock(wt)
	nb := cols / bs
	w := make([]byte, rows*stride)
	for r := range rows {
		row := w[r*stride : r*stride+nb*bb]
		if r%2 == 1 {
			if err := QuantizeRow(row, wt, randVec(rng, cols)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for i := range row {
			row[i] = byte(rng.Uint32())
		}
		for b := range nb {
			for _, at := range kzScaleOffsets(wt) {
				h := F32ToF16(float32(rng.NormFloat64()))
				row[b*bb+at], row[b*bb+at+1] = byte(h), byte(h>>8)
			}
		}
	}
	return w
}

// TestKQuantZx8 checks the eight-token zmm kernel (dotQRowsKX8) against
// the single-token row dots bit for bit, for each of the eight tokens of
// groups at several offsets in a batch (one token with a 30× range), rows
// of several lengths at a padded stride, and row ranges not starting at 0.
func TestKQuantZx8(t *testing.T) {
	if !hasKZ {
		t.Skip("no AVX-512 BW+VNNI")
	}
	rng := rand.New(rand.NewPCG(73, 74))
	for _, wt := range kzRowTypes {
		testKQuantZx8(t, rng, wt)
	}
}

func testKQuantZx8(t *testing.T, rng *rand.Rand, wt DType) {
	for _, cols := range []int{256, 768, 2048} {
		const rows, n = 11, 19
		_, bb := qBlock(wt)
		stride := cols/qkK*bb + 3
		w := kzRandRows(t, rng, wt, rows, cols, stride)
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
		lb, ld := qx8PackKLen(cols)
		bs, dz := make([]int16, lb), make([]float32, ld)
		for _, t0 := range []int{0, 3, 11} {
			qx8PackK(bs, dz, &a, cols, t0)
			for _, lo := range []int{0, 4} {
				got := make([]float32, n*rows)
				dotQRowsKX8(wt, got, rows, w, stride, lo, rows, cols, &a, bs, dz, t0)
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
