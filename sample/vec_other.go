//go:build !amd64

package sample

// No assembly on this architecture: the Go kernels in vec.go run.
const hasAVX2 = false

func weightsAVX2(w *uint64, l *float32, n int, c *expConsts, tab *[64]float64) uint64 {
	panic("unreachable")
}
func weightsHistAVX2(w *uint64, l *float32, n int, c *expConsts, tab *[64]float64, hist *[histBins]uint64) uint64 {
	panic("unreachable")
}
func weightsExpSumAVX2(w *uint64, l *float32, n int, c *expConsts, tab *[64]float64, lanes *[4]float64) uint64 {
	panic("unreachable")
}
func expSumAVX2(l *float32, n int, c *expConsts, tab *[64]float64, lanes *[4]float64) {
	panic("unreachable")
}
func maxValidAVX2(l *float32, n int) (float32, bool)  { panic("unreachable") }
func indexAboveAVX2(l *float32, n int, v float32) int { panic("unreachable") }
func indexEqualAVX2(l *float32, n int, v float32) int { panic("unreachable") }

func drawAtLeastAVX2(w *uint64, n int, thr, t uint64) (int, uint64) { panic("unreachable") }

func indexBetweenAVX2(l *float32, n int, a, b float32) int { panic("unreachable") }
