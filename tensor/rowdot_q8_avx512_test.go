package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ8ZBitwise checks the zmm single-token Q8_0 row dot (hasQ8Z) against
// the ymm one bit for bit: rows of raw bytes (every int8 value, -128
// included, and finite f16 scales) and quantized rows, 1 to 13 rows (a
// lone last row), odd and even block counts, a stride with padding,
// activations at an offset and with a token of 30× range. The zmm kernel
// is the ymm one's arithmetic, so anything but == is a bug. (The ymm
// kernel against the Go reference: TestDotQFast.)
func TestQ8ZBitwise(t *testing.T) {
	if !hasQ8Z {
		t.Skip("no AVX-512 BW+VL+VNNI (or NANOSERVE_NOAVX512 set)")
	}
	defer func(saved bool) { hasQ8Z = saved }(hasQ8Z)
	rng := rand.New(rand.NewPCG(81, 82))
	for _, cols := range []int{32, 64, 96, 160, 2048, 4128} {
		for _, rows := range []int{1, 2, 3, 13} {
			nb := cols / 32
			stride := nb*34 + 3
			w := make([]byte, rows*stride)
			for r := range rows {
				row := w[r*stride : r*stride+nb*34]
				if r%2 == 0 {
					for i := range row {
						row[i] = byte(rng.Uint32())
					}
					for b := range nb {
						h := F32ToF16(float32(rng.NormFloat64()))
						row[b*34], row[b*34+1] = byte(h), byte(h>>8)
					}
					row[2] = 0x80 // -128
				} else if err := QuantizeRow(row, Q8_0, randVec(rng, cols)); err != nil {
					t.Fatal(err)
				}
			}
			x := randVec(rng, 2*cols)
			for i := range cols {
				x[cols+i] *= 30
			}
			var a quantizedActs
			if err := quantizeActs(&a, Q8_0, x); err != nil {
				t.Fatal(err)
			}
			for _, off := range []int{0, cols} {
				want, got := make([]float32, rows+1), make([]float32, rows+1)
				want[rows], got[rows] = 7, 7 // must stay untouched
				hasQ8Z = false
				dotQRows(Q8_0, want[:rows], w, stride, cols, &a, off)
				hasQ8Z = true
				dotQRows(Q8_0, got[:rows], w, stride, cols, &a, off)
				for r := range rows + 1 {
					if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
						t.Fatalf("cols=%d rows=%d off=%d row %d: zmm %v, ymm %v", cols, rows, off, r, got[r], want[r])
					}
				}
			}
		}
	}
}

// BenchmarkQ8Z sets the zmm and ymm single-token Q8_0 row dots side by
// side in one run: "L2" is dotQRows over 32 L2-resident rows of 4096
// (the kernels' arithmetic rate, cpuMB/s of weights per CPU-second),
// "DRAM" a decode MatMul through TinyLlama's (5632, 2048) FFN shape on 1
// and 2 threads, weights from DRAM (compare with BenchmarkReadBandwidth).
//
//	go test ./tensor -run XXX -bench Q8Z -count 3
func BenchmarkQ8Z(b *testing.B) {
	defer func(saved bool) { hasQ8Z = saved }(hasQ8Z)
	paths := []string{"zmm", "ymm"}
	if !hasQ8Z {
		paths = paths[1:]
	}
	for _, path := range paths {
		b.Run("L2/"+path, func(b *testing.B) {
			hasQ8Z = path == "zmm"
			const rows = 32
			w, x := benchRow(b, Q8_0)
			wm := make([]byte, 0, rows*len(w))
			for range rows {
				wm = append(wm, w...)
			}
			var a quantizedActs
			if err := quantizeActs(&a, Q8_0, x); err != nil {
				b.Fatal(err)
			}
			dst := make([]float32, rows)
			b.SetBytes(int64(len(wm)))
			c0 := cpuSeconds()
			for b.Loop() {
				dotQRows(Q8_0, dst, wm, len(w), benchCols, &a, 0)
			}
			if c := cpuSeconds() - c0; c > 0 {
				b.ReportMetric(float64(len(wm))*float64(b.N)/c/1e6, "cpuMB/s")
			}
		})
	}
	for _, th := range []int{1, 2} {
		for _, path := range paths {
			b.Run(fmt.Sprintf("DRAM/5632x2048/threads=%d/%s", th, path), func(b *testing.B) {
				hasQ8Z = path == "zmm"
				benchMatVec(b, benchMats(b, Q8_0, 5632, 2048), th)
			})
		}
	}
}
