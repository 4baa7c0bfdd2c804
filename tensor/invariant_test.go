package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// qgRandRows returns rows random rows of type ty (cols columns), encoded,
// and their dequantized values.
func qgRandRows(t testing.TB, rng *rand.Rand, ty DType, rows, cols int) ([]byte, []float32) {
	rb, err := ty.RowBytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, rows*rb)
	v := make([]float32, rows*cols)
	for r := range rows {
		src := randVec(rng, cols)
		if isFloat(ty) {
			switch ty {
			case F32:
				copy(BytesF32(data[r*rb:(r+1)*rb]), src)
			case F16:
				for c, f := range src {
					h := F32ToF16(f)
					data[r*rb+2*c], data[r*rb+2*c+1] = byte(h), byte(h>>8)
				}
			case BF16:
				for c, f := range src {
					h := uint16(math.Float32bits(f) >> 16)
					data[r*rb+2*c], data[r*rb+2*c+1] = byte(h), byte(h>>8)
				}
			}
		} else if err := QuantizeRow(data[r*rb:(r+1)*rb], ty, src); err != nil {
			t.Fatal(err)
		}
		DequantizeRow(v[r*cols:(r+1)*cols], ty, data[r*rb:(r+1)*rb])
	}
	return data, v
}

// invariantTypes are the weight types whose batch invariance MatMul
// guarantees (every type it multiplies, in fact; these are the ones model
// files use).
var invariantTypes = []DType{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4, IQ3_S}

// TestMatMulBatchInvariant is batch invariance at the kernel level: for
// every weight type, each token of an M-token MatMul (M from 1 to 257,
// ragged against every tile, group and chunk size) equals, bit for bit,
// the same token multiplied alone (n = 1: the row dots), on each assembly
// kernel set (zmm float kernels where AVX-512F, ymm) and on the pure-Go
// fallback, for nil, 1- and 2-worker pools and
// shapes with ragged rows and column tails. A token with a 30× larger
// range sits in every batch (it would shift shared activation scales, if
// any were shared).
func TestMatMulBatchInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	pools := []*Pool{nil, NewPool(1), NewPool(2)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	ms := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 64, 65, 130, 257}
	if testing.Short() {
		ms = []int{2, 3, 5, 7, 8, 17, 65}
	}
	saved, savedVNNI, savedZ, savedKZ, savedQ8Z := hasSIMD, hasVNNI, hasAVX512, hasKZ, hasQ8Z
	defer func() { hasSIMD, hasVNNI, hasAVX512, hasKZ, hasQ8Z = saved, savedVNNI, savedZ, savedKZ, savedQ8Z }()
	// The kernel sets: the CPU's own (zmm float kernels where AVX-512F is
	// present; Q8_0's eight-token zmm and four-token VNNI kernels where
	// AVX-512 VNNI is; the zmm K-quant and IQ4_XS row dots and
	// eight-token kernels where AVX-512 BW+VNNI are), ymm on AVX2 alone
	// (vnni and zmm off: the four-token AVX2 kernels), pure Go.
	for _, path := range []struct {
		name         string
		asm, vnni, z bool
	}{{"native", true, savedVNNI, savedZ}, {"avx2", true, false, false}, {"go", false, false, false}} {
		if path.asm && !saved || path.name == "native" && !savedVNNI && !savedZ {
			continue
		}
		hasSIMD, hasVNNI, hasAVX512 = path.asm, path.vnni, path.z
		hasKZ = path.z && savedKZ
		hasQ8Z = path.z && savedQ8Z
		testMatMulBatchInvariant(t, rng, pools, ms, path.name, invariantTypes)
	}
}

func testMatMulBatchInvariant(t *testing.T, rng *rand.Rand, pools []*Pool, ms []int, asm string, types []DType) {
	for _, ty := range types {
		bs := ty.BlockSize()
		shapes := [][2]int{{37, 512}, {5, 256}}
		if isFloat(ty) {
			shapes = [][2]int{{37, 200}, {9, 88}, {5, 33}, {16, 16}, {3, 8}}
		} else if bs == 32 {
			shapes = append(shapes, [2]int{19, 96})
		}
		for _, sh := range shapes {
			rows, cols := sh[0], sh[1]
			data, _ := qgRandRows(t, rng, ty, rows, cols)
			w, err := NewMat(ty, rows, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			maxM := ms[len(ms)-1]
			x := randVec(rng, maxM*cols)
			for i := range cols {
				x[3*cols+i] *= 30
			}
			alone := make([]float32, maxM*rows) // (token, rows), each token by itself
			for tok := range maxM {
				pools[0].MatMul(alone[tok*rows:(tok+1)*rows], w, x[tok*cols:(tok+1)*cols], 1)
			}
			for _, m := range ms {
				// Tokens starting at an offset, so a token meets different
				// neighbours and a different place in its tiles each time.
				off := (m * 7) % (maxM - m + 1)
				for pi, p := range pools {
					dst := make([]float32, m*rows)
					p.MatMul(dst, w, x[off*cols:(off+m)*cols], m)
					for tok := range m {
						for r := range rows {
							got, want := dst[tok*rows+r], alone[(off+tok)*rows+r]
							if math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s %s (%d,%d) n=%d pool#%d token %d row %d: %v in the batch, %v alone",
									asm, ty, rows, cols, m, pi, off+tok, r, got, want)
							}
						}
					}
				}
			}
		}
	}
}
