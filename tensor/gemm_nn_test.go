package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmNN: each path (AVX-512, AVX2, Go; the ones this machine has)
// matches the float64 definition on shapes that cover full and ragged
// blocks of rows and columns, k of 1 and an attention head's 32, strides
// wider than the matrices, and leaves dst's padding alone.
func TestGemmNN(t *testing.T) {
	savedSIMD, savedZ := hasSIMD, hasAVX512
	defer func() { hasSIMD, hasAVX512 = savedSIMD, savedZ }()
	paths := []struct {
		name      string
		simd, z   bool
		available bool
	}{
		{"go", false, false, true},
		{"avx2", true, false, savedSIMD && hasGemmNNArch},
		{"avx512", true, true, savedSIMD && savedZ},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := [][3]int{{1, 1, 1}, {4, 16, 1}, {4, 32, 32}, {5, 33, 7}, {8, 64, 32}, {7, 100, 32}, {128, 130, 32}, {3, 15, 9}, {4, 48, 0}}
	for _, p := range paths {
		if !p.available {
			t.Logf("%s: not on this machine", p.name)
			continue
		}
		hasSIMD, hasAVX512 = p.simd, p.z
		for _, sh := range shapes {
			m, n, k := sh[0], sh[1], sh[2]
			lda, ldb, ldd := k+3, n+5, n+2
			a, b := make([]float32, m*lda), make([]float32, max(1, k)*ldb)
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			dst := make([]float32, m*ldd)
			for i := range dst {
				dst[i] = 99
			}
			GemmNN(dst, ldd, a, lda, b, ldb, m, n, k)
			for i := range m {
				for j := range ldd {
					got := dst[i*ldd+j]
					if j >= n {
						if got != 99 {
							t.Fatalf("%s %v: padding dst[%d][%d] written: %g", p.name, sh, i, j, got)
						}
						continue
					}
					var want, mag float64
					for kk := range k {
						x := float64(a[i*lda+kk]) * float64(b[kk*ldb+j])
						want += x
						mag += math.Abs(x)
					}
					if math.Abs(float64(got)-want) > 1e-6*(mag+1) {
						t.Fatalf("%s %v: dst[%d][%d] = %g, want %g", p.name, sh, i, j, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkGemmNNvsMatMul: an attention block's scores, S (128, 1024) =
// Q (128, 32) · Kᵀ, as GemmNN over Kᵀ (32, 1024) and as MatMul over K
// (1024, 32): the same arithmetic, one thread.
func BenchmarkGemmNNvsMatMul(b *testing.B) {
	const m, n, k = 128, 1024, 32
	q, kt, kr, dst := make([]float32, m*k), make([]float32, k*n), make([]float32, n*k), make([]float32, m*n)
	for i := range q {
		q[i] = float32(i%7) * 0.1
	}
	for i := range kt {
		kt[i] = float32(i%5) * 0.1
		kr[i] = kt[i]
	}
	flops := func(b *testing.B) {
		b.ReportMetric(float64(b.N)*2*m*n*k/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	}
	b.Run("GemmNN", func(b *testing.B) {
		for range b.N {
			GemmNN(dst, n, q, k, kt, n, m, n, k)
		}
		flops(b)
	})
	b.Run("MatMul", func(b *testing.B) {
		var inline *Pool
		w := F32Mat(n, k, kr)
		for range b.N {
			inline.MatMul(dst, w, q, m)
		}
		flops(b)
	})
}
