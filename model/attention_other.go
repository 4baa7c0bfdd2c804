//go:build !amd64

package model

var hasAVX2 = false // no assembly kernels on this architecture

func attnScores(out, q, k []float32, stride, n int, scale float32) {
	attnScoresGo(out, q, k, stride, n, scale)
}

func attnAccum(out, v []float32, stride int, a []float32) { attnAccumGo(out, v, stride, a) }
