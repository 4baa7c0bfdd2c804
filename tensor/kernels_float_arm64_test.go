package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// These tests exist only on arm64 (run them on amd64 with qemu-user; see
// testdata/arm64.sh). The shared parity tests already cover the NEON
// kernels through hasSIMD; these add both integer-dot variants (SDOT and
// plain ASIMD) on one machine, raw weight bytes (−128 quants), and the
// float helpers bit for bit.

// TestNEONFeatures logs which kernels this CPU selects.
func TestNEONFeatures(t *testing.T) {
	t.Logf("ASIMD (NEON kernels) %v, ASIMDDP (SDOT) %v", hasSIMD, hasDotProd)
}

// dotVariants runs f once per integer-dot variant this CPU can execute,
// with hasDotProd set accordingly.
func dotVariants(t *testing.T, f func(t *testing.T)) {
	if !hasSIMD {
		t.Skip("no ASIMD")
	}
	saved := hasDotProd
	defer func() { hasDotProd = saved }()
	for _, dp := range []bool{false, true} {
		if dp && !saved {
			continue
		}
		hasDotProd = dp
		t.Run(map[bool]string{false: "asimd", true: "sdot"}[dp], f)
	}
}

// TestQdotNEONVariants checks dotQRows (several rows, stride > row bytes)
// against the reference dotQ for the types with NEON kernels, on quantized
// rows and on random bytes (every quant value, −128 included), for block
// counts from 1 up, with both integer-dot variants.
func TestQdotNEONVariants(t *testing.T) {
	dotVariants(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		for _, wt := range []DType{Q8_0, Q4_K} {
			bs, bb := qBlock(wt)
			for _, nb := range []int{1, 2, 3, 8, 11} {
				cols := nb * bs
				for trial := range 3 {
					const rows = 5
					stride := nb*bb + 3
					w := make([]byte, rows*stride)
					for r := range rows {
						row := w[r*stride : r*stride+nb*bb]
						if trial == 2 { // raw bytes, with finite fp16 scales
							for i := range row {
								row[i] = byte(rng.Uint32())
							}
							for b := range nb {
								blk := row[b*bb:]
								for _, o := range []int{0, 2} {
									if o == 2 && wt != Q4_K {
										continue
									}
									h := F32ToF16(float32(rng.NormFloat64() * 0.01))
									blk[o], blk[o+1] = byte(h), byte(h>>8)
								}
							}
							continue
						}
						v := randVec(rng, cols)
						for i := range v {
							v[i] *= []float32{1, 40}[trial]
						}
						if err := QuantizeRow(row, wt, v); err != nil {
							t.Fatal(err)
						}
					}
					x := randVec(rng, 2*cols)
					var a quantizedActs
					if err := quantizeActs(&a, wt, x); err != nil {
						t.Fatal(err)
					}
					for _, off := range []int{0, cols} {
						got := make([]float32, rows)
						dotQRows(wt, got, w, stride, cols, &a, off)
						for r := range rows {
							row := w[r*stride : r*stride+nb*bb]
							want := dotQ(wt, row, &a, off)
							wf := make([]float32, cols)
							DequantizeRow(wf, wt, row)
							var mag float64
							for i := range wf {
								mag += math.Abs(float64(wf[i]) * float64(x[off+i]))
							}
							if e := math.Abs(float64(got[r]-want)) / max(mag, 1e-30); !(e < 1e-5) {
								t.Fatalf("%s nb=%d trial %d off=%d row %d: got %g, want %g (rel %g)", wt, nb, trial, off, r, got[r], want, e)
							}
						}
					}
				}
			}
		}
	})
}

// TestFloatHelpersNEON checks cvtRow (F16, BF16) bit for bit against the Go
// conversions, including subnormals, infinities and signed zeros, and
// sumF32 against a float64 sum, on lengths with ragged tails.
func TestFloatHelpersNEON(t *testing.T) {
	if !hasSIMD {
		t.Skip("no ASIMD")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 100, 1000} {
		src := make([]byte, 2*n)
		for i := range n {
			h := uint16(rng.Uint32())
			if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
				h &^= 0x3ff // NaN payloads may differ (quieting); keep Inf
			}
			src[2*i], src[2*i+1] = byte(h), byte(h>>8)
		}
		for _, ty := range []DType{F16, BF16} {
			got := make([]float32, n)
			cvtRow(got, ty, src)
			for i := range n {
				h := uint16(src[2*i]) | uint16(src[2*i+1])<<8
				want := F16ToF32(h)
				if ty == BF16 {
					want = bf16ToF32(h)
				}
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("%s n=%d: element %d (%#04x) = %g, want %g", ty, n, i, h, got[i], want)
				}
			}
		}
		v := randVec(rng, n)
		var want float64
		var mag float64
		for _, f := range v {
			want += float64(f)
			mag += math.Abs(float64(f))
		}
		if got := sumF32(v); math.Abs(float64(got)-want) > 1e-6*mag {
			t.Fatalf("sumF32 n=%d: %g, want %g", n, got, want)
		}
	}
}
