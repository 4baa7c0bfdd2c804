package tensor

import "fmt"

// GemmNN sets dst (m, n) = a (m, k) · b (k, n) for row-major float32
// matrices with row strides lda, ldb and ldd (in floats). It is the "NN"
// product, contracted over a's columns and b's rows, computed as outer
// products: each step of k adds a[i][k]·b[k][j0:j1] to a strip of dst's row
// i. MatMul (dst = x·Wᵀ) instead ends every (row, token) in a horizontal
// sum, which for a short contraction — an attention head's 32 dimensions —
// costs as much as the multiplications; here k may be small at full speed.
//
// The kernels (gemmNN4x32Z on AVX-512, gemmNN4x16 on AVX2+FMA) keep a 4×32
// or 4×16 block of dst in registers over the whole of k; the ragged rows and
// columns, and machines without them, take the Go loop. Per element the sum
// runs over k in order, one fused multiply-add a step in the kernels and a
// multiply then an add in Go, so the paths agree to float32 rounding, not
// bit for bit. Runs on the calling goroutine; allocates nothing.
func GemmNN(dst []float32, ldd int, a []float32, lda int, b []float32, ldb int, m, n, k int) {
	if m <= 0 || n <= 0 {
		return
	}
	if k < 0 || lda < k || ldb < n || ldd < n ||
		len(a) < (m-1)*lda+k || len(b) < max(0, (k-1)*ldb+n) || len(dst) < (m-1)*ldd+n {
		panic(fmt.Sprintf("tensor: GemmNN (%d, %d)·(%d, %d) with strides %d, %d, %d: a %d, b %d, dst %d floats",
			m, k, k, n, lda, ldb, ldd, len(a), len(b), len(dst)))
	}
	i, nw := 0, 0
	if k > 0 {
		switch {
		case hasSIMD && hasAVX512:
			nw = n &^ 31
			for ; i+4 <= m && nw > 0; i += 4 {
				for j := 0; j < nw; j += 32 {
					gemmNN4x32Z(&a[i*lda], uintptr(lda*4), &b[j], uintptr(ldb*4), k, &dst[i*ldd+j], uintptr(ldd*4))
				}
			}
		case hasSIMD && hasGemmNNArch:
			nw = n &^ 15
			for ; i+4 <= m && nw > 0; i += 4 {
				for j := 0; j < nw; j += 16 {
					gemmNN4x16(&a[i*lda], uintptr(lda*4), &b[j], uintptr(ldb*4), k, &dst[i*ldd+j], uintptr(ldd*4))
				}
			}
		}
	}
	gemmNNGo(dst, ldd, a, lda, b, ldb, 0, i, nw, n, k) // columns past the kernels' blocks
	gemmNNGo(dst, ldd, a, lda, b, ldb, i, m, 0, n, k)  // rows past them
}

// GemmNNFast reports whether GemmNN runs a vector kernel here (else its Go
// loop, slower than MatMul's kernels: callers with a choice of orientation
// take MatMul then).
func GemmNNFast() bool { return hasSIMD && (hasAVX512 || hasGemmNNArch) }

// gemmNNGo is GemmNN's reference: rows [i0, i1), columns [j0, j1).
func gemmNNGo(dst []float32, ldd int, a []float32, lda int, b []float32, ldb int, i0, i1, j0, j1, k int) {
	if j0 >= j1 {
		return
	}
	for i := i0; i < i1; i++ {
		d := dst[i*ldd+j0 : i*ldd+j1]
		clear(d)
		for kk, av := range a[i*lda : i*lda+k] {
			for j, bv := range b[kk*ldb+j0 : kk*ldb+j1] {
				d[j] += av * bv
			}
		}
	}
}
