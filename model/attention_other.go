//go:build !amd64

package model

var hasAVX2 = false // no assembly kernels on this architecture

func attnScores(out, q, k []float32, stride, n int, scale float32) {
	attnScoresGo(out, q, k, stride, n, scale)
}

func attnAccum(out, v []float32, stride int, a []float32) { attnAccumGo(out, v, stride, a) }

func attnScoresF16(out, q []float32, k []byte, stride, n int, scale float32) {
	attnScoresF16Go(out, q, k, stride, n, scale)
}

func attnAccumF16(out []float32, v []byte, stride int, a []float32) {
	attnAccumF16Go(out, v, stride, a)
}

// No multi-query kernels here: attendRange runs the queries one by one.
func attnScores3([][]float32, [][]float32, []float32, int, int, float32) bool { return false }
func attnScores3F16([][]float32, [][]float32, []byte, int, int, float32) bool { return false }
func attnAccum3([][]float32, []float32, int, [][]float32) bool                { return false }
func attnAccum3F16([][]float32, []byte, int, [][]float32) bool                { return false }
