package model

import "golang.org/x/sys/cpu"

// hasAVX2 selects the assembly kernels of attention_amd64.s (AVX2 and
// FMA3; x/sys/cpu reports AVX2 only when the OS saves YMM state). Tests
// flip it to compare them with the Go versions on the same machine.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// hasF16C adds F16C's VCVTPH2PS for the F16 cache kernels.
var hasF16C = cpu.X86.HasF16C

//go:noescape
func attnScoresAVX2(q *float32, k *float32, stride uintptr, n int, hd int, scale float32, out *float32)

//go:noescape
func attnAccumAVX2(out *float32, v *float32, stride uintptr, n int, hd int, a *float32)

// attnScores sets out[i] = scale · q·k_i for the n rows k_i = k[i·stride:]
// (len(q) wide each).
func attnScores(out, q, k []float32, stride, n int, scale float32) {
	hd := len(q)
	if n <= 0 {
		return
	}
	_ = k[(n-1)*stride+hd-1] // the assembly reads up to here
	_ = out[n-1]
	if hasAVX2 && hd > 0 && hd%8 == 0 {
		attnScoresAVX2(&q[0], &k[0], uintptr(stride*4), n, hd, scale, &out[0])
		return
	}
	attnScoresGo(out, q, k, stride, n, scale)
}

// attnAccum adds Σ_i a[i]·v_i into out for the len(a) rows
// v_i = v[i·stride:] (len(out) wide each).
func attnAccum(out, v []float32, stride int, a []float32) {
	hd, n := len(out), len(a)
	if n == 0 {
		return
	}
	_ = v[(n-1)*stride+hd-1]
	if hasAVX2 && hd > 0 && hd%8 == 0 {
		attnAccumAVX2(&out[0], &v[0], uintptr(stride*4), n, hd, &a[0])
		return
	}
	attnAccumGo(out, v, stride, a)
}

//go:noescape
func attnScoresF16AVX2(q *float32, k *byte, stride uintptr, n int, hd int, scale float32, out *float32)

//go:noescape
func attnAccumF16AVX2(out *float32, v *byte, stride uintptr, n int, hd int, a *float32)

// attnScoresF16 is attnScores over F16 rows k_i = k[i·stride:] (stride in
// bytes, len(q) halves each).
func attnScoresF16(out, q []float32, k []byte, stride, n int, scale float32) {
	hd := len(q)
	if n <= 0 {
		return
	}
	_ = k[(n-1)*stride+2*hd-1] // the assembly reads up to here
	_ = out[n-1]
	if hasAVX2 && hasF16C && hd > 0 && hd%8 == 0 {
		attnScoresF16AVX2(&q[0], &k[0], uintptr(stride), n, hd, scale, &out[0])
		return
	}
	attnScoresF16Go(out, q, k, stride, n, scale)
}

// attnAccumF16 is attnAccum over F16 rows v_i = v[i·stride:] (stride in
// bytes, len(out) halves each).
func attnAccumF16(out []float32, v []byte, stride int, a []float32) {
	hd, n := len(out), len(a)
	if n == 0 {
		return
	}
	_ = v[(n-1)*stride+2*hd-1]
	if hasAVX2 && hasF16C && hd > 0 && hd%8 == 0 {
		attnAccumF16AVX2(&out[0], &v[0], uintptr(stride), n, hd, &a[0])
		return
	}
	attnAccumF16Go(out, v, stride, a)
}

//go:noescape
func attnScores3AVX2(q0, q1, q2 *float32, k *float32, stride uintptr, n int, hd int, scale float32, out0, out1, out2 *float32)

//go:noescape
func attnScores3F16AVX2(q0, q1, q2 *float32, k *byte, stride uintptr, n int, hd int, scale float32, out0, out1, out2 *float32)

//go:noescape
func attnAccum3AVX2(out0, out1, out2 *float32, v *float32, stride uintptr, n int, hd int, a0, a1, a2 *float32)

//go:noescape
func attnAccum3F16AVX2(out0, out1, out2 *float32, v *byte, stride uintptr, n int, hd int, a0, a1, a2 *float32)

// multiQuery reports whether the multi-query kernels take nq queries of
// head width hd (a multiple of mult; f16: F16 rows, which need F16C).
func multiQuery(hd, mult, nq int, f16 bool) bool {
	return hasAVX2 && (hasF16C || !f16) && hd > 0 && hd%mult == 0 && nq >= 2 && nq <= 3
}

// attnScores3 runs attnScores for the two or three queries q[t] at once
// (out[t] their scores, each query's bits of attnScores) where the
// multi-query kernel applies, and reports whether it ran.
func attnScores3(out, q [][]float32, k []float32, stride, n int, scale float32) bool {
	hd, t2 := len(q[0]), len(q)-1
	if !multiQuery(hd, 8, len(q), false) || n <= 0 {
		return false
	}
	_ = k[(n-1)*stride+hd-1]
	for t := range q {
		_, _ = q[t][hd-1], out[t][n-1]
	}
	attnScores3AVX2(&q[0][0], &q[1][0], &q[t2][0], &k[0], uintptr(stride*4), n, hd, scale, &out[0][0], &out[1][0], &out[t2][0])
	return true
}

// attnScores3F16 is attnScores3 over F16 rows (attnScoresF16's bits).
func attnScores3F16(out, q [][]float32, k []byte, stride, n int, scale float32) bool {
	hd, t2 := len(q[0]), len(q)-1
	if !multiQuery(hd, 8, len(q), true) || n <= 0 {
		return false
	}
	_ = k[(n-1)*stride+2*hd-1]
	for t := range q {
		_, _ = q[t][hd-1], out[t][n-1]
	}
	attnScores3F16AVX2(&q[0][0], &q[1][0], &q[t2][0], &k[0], uintptr(stride), n, hd, scale, &out[0][0], &out[1][0], &out[t2][0])
	return true
}

// attnAccum3 runs attnAccum for the two or three outputs out[t] with
// weights a[t] (each len(a[0]) rows) at once where the multi-query kernel
// applies (head widths a multiple of 32), with attnAccum's bits, and
// reports whether it ran.
func attnAccum3(out [][]float32, v []float32, stride int, a [][]float32) bool {
	hd, n, t2 := len(out[0]), len(a[0]), len(out)-1
	if !multiQuery(hd, 32, len(out), false) || n == 0 {
		return false
	}
	_ = v[(n-1)*stride+hd-1]
	for t := range out {
		_, _ = out[t][hd-1], a[t][n-1]
	}
	attnAccum3AVX2(&out[0][0], &out[1][0], &out[t2][0], &v[0], uintptr(stride*4), n, hd, &a[0][0], &a[1][0], &a[t2][0])
	return true
}

// attnAccum3F16 is attnAccum3 over F16 rows (attnAccumF16's bits).
func attnAccum3F16(out [][]float32, v []byte, stride int, a [][]float32) bool {
	hd, n, t2 := len(out[0]), len(a[0]), len(out)-1
	if !multiQuery(hd, 32, len(out), true) || n == 0 {
		return false
	}
	_ = v[(n-1)*stride+2*hd-1]
	for t := range out {
		_, _ = out[t][hd-1], a[t][n-1]
	}
	attnAccum3F16AVX2(&out[0][0], &out[1][0], &out[t2][0], &v[0], uintptr(stride), n, hd, &a[0][0], &a[1][0], &a[t2][0])
	return true
}
