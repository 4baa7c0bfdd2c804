package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// TestAttnMultiBitwise: the multi-query kernels (scores3, accum3, over
// F32, F16 and Q8_0 rows) give each query the bits of the one-query
// kernels, and the one-query scores do not depend on how a run of rows is
// split into calls (attention_amd64.h's single fold): over head widths,
// row counts, strides and two or three queries.
func TestAttnMultiBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	same := func(a, b []float32) int {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return i
			}
		}
		return -1
	}
	for _, typ := range []tensor.DType{tensor.F32, tensor.F16, tensor.Q8_0} {
		for _, hd := range []int{8, 24, 32, 64, 96, 128} {
			if typ == tensor.Q8_0 && hd%32 != 0 {
				continue
			}
			for _, n := range []int{1, 3, 4, 5, 7, 8, 9, 13, 16} {
				for _, nq := range []int{2, 3} {
					width := hd + 32*r.IntN(3) // a row holds other heads too
					stride := kvcache.RowBytes(typ, width)
					c := &kvcache.Cache{Type: typ, KVDim: width, RowBytes: stride}
					if typ == tensor.F32 {
						c.K = [][]float32{fill(n * width)}
					} else {
						c.KE = [][]byte{make([]byte, n*stride)}
						for i := range n {
							if err := tensor.QuantizeRow(c.KE[0][i*stride:(i+1)*stride], typ, fill(width)); err != nil {
								t.Fatal(err)
							}
						}
					}
					kr := layerRows(c, 0, make([]float32, n*hd))
					kr.head(width-hd, hd)
					kr.load(0, n)
					q, a := make([][]float32, nq), make([][]float32, nq)
					got, want := make([][]float32, nq), make([][]float32, nq)
					og, ow := make([][]float32, nq), make([][]float32, nq)
					for j := range nq {
						q[j], a[j] = fill(hd), fill(n)
						got[j], want[j] = make([]float32, n), make([]float32, n)
						og[j] = fill(hd)
						ow[j] = append([]float32(nil), og[j]...)
					}
					kr.scores3(got, q, 0, n, 0.125)
					kr.accum3(og, 0, a)
					for j := range nq {
						// One query, the rows split at a random point.
						s := 1 + r.IntN(n) // rows [0, s) and [s, n)
						kr.scores(want[j], q[j], 0, s, 0.125)
						if s < n {
							kr.scores(want[j][s:], q[j], s, n-s, 0.125)
						}
						if i := same(got[j], want[j]); i >= 0 {
							t.Errorf("%s hd %d n %d queries %d: query %d score %d = %g, alone %g", typ, hd, n, nq, j, i, got[j][i], want[j][i])
						}
						kr.accum(ow[j], 0, a[j][:s])
						if s < n {
							kr.accum(ow[j], s, a[j][s:])
						}
						if i := same(og[j], ow[j]); i >= 0 {
							t.Errorf("%s hd %d n %d queries %d: query %d output %d = %g, alone %g", typ, hd, n, nq, j, i, og[j][i], ow[j][i])
						}
					}
				}
			}
		}
	}
}
