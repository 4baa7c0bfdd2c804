package sample

import (
	"math"
	"slices"
	"testing"
)

func BenchmarkScratchHist(b *testing.B) {
	l := peakedLogits()
	m := float64(slices.Max(l))
	w := make([]uint64, len(l))
	weights(w, l, m, 1/0.8, 0x1p46, -47*math.Ln2)
	h := new([histBins]uint64)
	b.Run("hist", func(b *testing.B) {
		benchKernel(b, func() {
			clear(h[:])
			for _, x := range w {
				h[histKey(x)&(histBins-1)] += x
			}
		})
	})
	b.Run("sumloop", func(b *testing.B) {
		var s uint64
		benchKernel(b, func() {
			for _, x := range w {
				s += x
			}
		})
	})
	b.Run("collect", func(b *testing.B) {
		lo, hi := uint64(1<<20), uint64(1<<20+1<<15)
		c := make([]cand, 0, len(w))
		benchKernel(b, func() {
			c = c[:0]
			for i, x := range w {
				if x-lo < hi-lo {
					c = append(c, cand{id: int32(i), v: l[i], w: x})
				}
			}
		})
	})
}
