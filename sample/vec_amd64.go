package sample

import "golang.org/x/sys/cpu"

// hasAVX2: x/sys/cpu reports AVX2 only when the OS saves YMM state.
var hasAVX2 = cpu.X86.HasAVX2

//go:noescape
func weightsAVX2(w *uint64, l *float32, n int, c *expConsts, tab *[64]float64) (sum uint64)

//go:noescape
func weightsHistAVX2(w *uint64, l *float32, n int, c *expConsts, tab *[64]float64, hist *[histBins]uint64) (sum uint64)

//go:noescape
func weightsExpSumAVX2(w *uint64, l *float32, n int, c *expConsts, tab *[64]float64, lanes *[4]float64) (sum uint64)

//go:noescape
func expSumAVX2(l *float32, n int, c *expConsts, tab *[64]float64, lanes *[4]float64)

//go:noescape
func maxValidAVX2(l *float32, n int) (m float32, ok bool)

//go:noescape
func indexAboveAVX2(l *float32, n int, v float32) int

//go:noescape
func indexEqualAVX2(l *float32, n int, v float32) int

//go:noescape
func drawAtLeastAVX2(w *uint64, n int, thr, t uint64) (i int, acc uint64)

//go:noescape
func indexBetweenAVX2(l *float32, n int, a, b float32) int
