package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// TestAttnKernelsKVTypes: for F16 rows, the dispatched kernels
// (assembly where the CPU has it) and the Go kernels each match a plain
// float64 reference over the dequantized rows, over head widths, row counts
// and row strides (scores within 1e-5 relative to Σ|q·k|, accumulations
// within 1e-5 relative to Σ|a·v|).
func TestAttnKernelsKVTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	type kern struct {
		name   string
		scores func(out, q []float32, k []byte, stride, n int, scale float32)
		accum  func(out []float32, v []byte, stride int, a []float32)
	}
	for _, tc := range []struct {
		typ   tensor.DType
		hds   []int
		kerns []kern
	}{
		{tensor.F16, []int{6, 8, 10, 16, 24, 32, 64, 72, 128, 136}, []kern{{"dispatch", attnScoresF16, attnAccumF16}, {"go", attnScoresF16Go, attnAccumF16Go}}},
	} {
		for _, hd := range tc.hds {
			for _, n := range []int{1, 3, 7, 8, 9, 15, 16, 17, 31} {
				width := hd + 32*r.IntN(3) // a row holds other heads too
				stride := kvcache.RowBytes(tc.typ, width)
				enc := make([]byte, n*stride)
				rows := make([][]float32, n) // the values the kernels read
				for i := range n {
					x := fill(width)
					if err := tensor.QuantizeRow(enc[i*stride:(i+1)*stride], tc.typ, x); err != nil {
						t.Fatal(err)
					}
					rows[i] = make([]float32, width)
					tensor.DequantizeRow(rows[i], tc.typ, enc[i*stride:(i+1)*stride])
				}
				q, a := fill(hd), fill(n)
				const scale = 0.125
				want, mag := make([]float64, n), make([]float64, n)
				acc, accMag := make([]float64, hd), make([]float64, hd)
				o0 := fill(hd)
				for c := range hd {
					acc[c], accMag[c] = float64(o0[c]), math.Abs(float64(o0[c]))
				}
				for i := range n {
					for c := range hd {
						want[i] += float64(q[c]) * float64(rows[i][c]) * scale
						mag[i] += math.Abs(float64(q[c]) * float64(rows[i][c]) * scale)
						acc[c] += float64(a[i]) * float64(rows[i][c])
						accMag[c] += math.Abs(float64(a[i]) * float64(rows[i][c]))
					}
				}
				for _, k := range tc.kerns {
					got := make([]float32, n)
					k.scores(got, q, enc, stride, n, scale)
					for i := range n {
						if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*mag[i]+1e-7 {
							t.Fatalf("%s %s scores hd %d n %d row %d: %g, reference %g", tc.typ, k.name, hd, n, i, got[i], want[i])
						}
					}
					out := append([]float32(nil), o0...)
					k.accum(out, enc, stride, a)
					for c := range hd {
						if d := math.Abs(float64(out[c]) - acc[c]); d > 1e-5*accMag[c]+1e-7 {
							t.Fatalf("%s %s accum hd %d n %d col %d: %g, reference %g", tc.typ, k.name, hd, n, c, out[c], acc[c])
						}
					}
				}
			}
		}
	}
}
