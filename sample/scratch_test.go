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
	h := new([histBins]uint64)
	b.Run("weights", func(b *testing.B) {
		benchKernel(b, func() { weights(w, l, m, 1/0.8, 0x1p46, -47*math.Ln2) })
	})
	b.Run("weightsHist660", func(b *testing.B) {
		benchKernel(b, func() { weightsHist(w, l, m, 1/0.8, 0x1p46, -47*math.Ln2, h, 660) })
	})
	b.Run("weightsHist0", func(b *testing.B) {
		benchKernel(b, func() { weightsHist(w, l, m, 1/0.8, 0x1p46, -47*math.Ln2, h, 0) })
	})
}
