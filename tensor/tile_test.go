package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTileKernelParity: every float tile kernel (4 rows × 2 or 3 tokens,
// and 6 on zmm,
// F32, F16, BF16) gives, for each (row, token), bit for bit the row dot
// dot4 gives that row and token alone, for column counts from one 8-column
// step up through odd numbers of steps, row and token strides wider than
// a row, and a token with a 30× larger range; on each assembly kernel set
// the machine has (zmm where AVX-512F, ymm), as each has its own order.
func TestTileKernelParity(t *testing.T) {
	if !hasTileArch || !hasSIMD {
		t.Skip("no tile kernels on this machine (hasTileArch, hasSIMD off): MatMul takes dot4 only")
	}
	forSIMDPaths(t, func(path string) { testTileKernelParity(t, path) })
}

// forSIMDPaths runs f once per assembly kernel set this machine has —
// "avx512" (hasAVX512: the zmm float kernels), then "avx2" (the ymm ones) —
// with the flags set accordingly and restored after.
func forSIMDPaths(t *testing.T, f func(path string)) {
	saved := hasAVX512
	defer func() { hasAVX512 = saved }()
	for _, z := range []bool{true, false} {
		if z && !saved {
			t.Log("no AVX-512F on this machine (or NANOSERVE_NOAVX512 set): the zmm kernels did not run")
			continue
		}
		hasAVX512 = z
		path := "avx2"
		if z {
			path = "avx512"
		}
		f(path)
	}
}

func testTileKernelParity(t *testing.T, path string) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, ty := range []DType{F32, F16, BF16} {
		for _, k := range []int{8, 16, 24, 32, 40, 48, 128, 200, 1024} {
			cols := k + 8 // rows and tokens wider than k: strides ≠ k
			rb := cols * floatBytes(ty)
			const tiles = 3 // the ymm kernels run them in one call
			data, _ := qgRandRows(t, rng, ty, tiles*tileMR, cols)
			x := randVec(rng, tileNRZ*cols)
			for c := range cols {
				x[cols+c] *= 30
			}
			nts := []int{2, 3, tileNR4}
			if path == "avx512" {
				nts = []int{2, 3, tileNRZ}
			}
			for _, nt := range nts {
				const ldd = tiles*tileMR + 3 // (token, ldd) results, ragged stride
				out := make([]float32, nt*ldd)
				tileKernel(ty, nt, data, rb, x, cols, k, out, ldd, tiles)
				for tok := range nt {
					for r := range tiles * tileMR {
						var want [4]float32
						dot4(ty, data[r*rb:r*rb+k*floatBytes(ty)], 0, x[tok*cols:tok*cols+k], &want)
						if got := out[tok*ldd+r]; math.Float32bits(got) != math.Float32bits(want[0]) {
							t.Fatalf("%s %s k=%d tile 4x%d row %d token %d: %v, dot4 %v", path, ty, k, nt, r, tok, got, want[0])
						}
					}
				}
			}
		}
	}
}
