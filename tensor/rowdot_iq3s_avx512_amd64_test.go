package tensor

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestIQ3SNib: iq3sNib holds iq3sGrid's four magnitudes as nibbles.
func TestIQ3SNib(t *testing.T) {
	for i, g := range iq3sGrid {
		for j := range 4 {
			if got, want := iq3sNib[i]>>(4*j)&0xF, uint16(g>>(8*j)&0xFF); got != want {
				t.Fatalf("entry %d magnitude %d: nibble %d, grid %d", i, j, got, want)
			}
		}
	}
}

// iq3sEveryIndexRows returns rows IQ3_S rows of nb super-blocks (stride
// bytes apart, random padding) whose groups run through all 512 grid
// indices: group g of super-block b of row r takes index (64b+g+37r)%512
// (qs byte and qh bit), with random signs, scales and fp16 d.
func iq3sEveryIndexRows(rng *rand.Rand, rows, nb, stride int) []byte {
	w := make([]byte, rows*stride)
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	for r := range rows {
		for b := range nb {
			blk := w[r*stride+110*b : r*stride+110*b+110]
			h := F32ToF16(float32(math.Ldexp(1+rng.Float64(), -10+rng.IntN(4))))
			blk[0], blk[1] = byte(h), byte(h>>8)
			for ib := range 8 {
				blk[66+ib] = 0
			}
			for k := range 64 {
				idx := (64*b + k + 37*r) % 512
				blk[2+k] = byte(idx)
				blk[66+k/8] |= byte(idx>>8) << (k % 8)
			}
		}
	}
	return w
}

// iq3sPermKernels are the permute kernels this machine runs: the word
// ones (AVX-512 BW) and, with VBMI, the byte ones.
func iq3sPermKernels() (names []string, row []func(*float32, int, *byte, uintptr, *int8, *float32, unsafe.Pointer, int), x8 []func(*float32, int, *byte, uintptr, *int8, *int16, *float32, int, uintptr, uintptr)) {
	names = append(names, "word")
	row = append(row, qdotIQ3_SZP)
	x8 = append(x8, qdotIQ3_Sx8ZP)
	if hasIQ3V {
		names = append(names, "byte")
		row = append(row, qdotIQ3_SZV)
		x8 = append(x8, qdotIQ3_Sx8ZV)
	}
	return
}

// TestIQ3SPermLookup: the permute kernels (qdotIQ3_SZP, qdotIQ3_Sx8ZP and
// the VBMI ones qdotIQ3_SZV, qdotIQ3_Sx8ZV) equal the reference dot bit
// for bit on rows that use every grid index at every group position, each
// row called alone and all rows at once; the eight-token kernels for
// every token of a group of eight.
func TestIQ3SPermLookup(t *testing.T) {
	if !hasKZ {
		t.Skip("no AVX-512 BW+VNNI")
	}
	names, rowK, x8K := iq3sPermKernels()
	if !hasIQ3V {
		t.Log("no AVX-512 VBMI: the byte kernels are not tested")
	}
	rng := rand.New(rand.NewPCG(3, 512))
	for _, nb := range []int{1, 8, 9} {
		const rows, n = 13, 8
		cols, stride := nb*qkK, nb*110+5
		w := iq3sEveryIndexRows(rng, rows, nb, stride)
		x := randVec(rng, n*cols)
		var a quantizedActs
		if err := quantizeActs(&a, IQ3_S, x); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, n*rows)
		for tok := range n {
			for r := range rows {
				want[tok*rows+r] = dotIQ3_S(w[r*stride:r*stride+nb*110], a.Q[tok*cols:(tok+1)*cols], a.D[tok*nb:(tok+1)*nb])
			}
		}
		lb, ld := qx8PackKLen(cols)
		bs, dz := make([]int16, lb), make([]float32, ld)
		qx8PackK(bs, dz, &a, cols, 0)
		for k, name := range names {
			for tok := range n {
				got := make([]float32, rows)
				rowK[k](&got[0], rows, &w[0], uintptr(stride), &a.Q[tok*cols], &a.D[tok*nb], nil, nb)
				for r := range rows {
					var one float32
					rowK[k](&one, 1, &w[r*stride], 0, &a.Q[tok*cols], &a.D[tok*nb], nil, nb)
					if g, wt := math.Float32bits(got[r]), math.Float32bits(want[tok*rows+r]); g != wt || math.Float32bits(one) != wt {
						t.Fatalf("%s nb=%d token %d row %d: row dot %v (alone %v), reference %v", name, nb, tok, r, got[r], one, want[tok*rows+r])
					}
				}
			}
			got := make([]float32, n*rows)
			x8K[k](&got[0], rows, &w[0], uintptr(stride), &a.Q[0], &bs[0], &dz[0], nb, uintptr(cols), uintptr(rows*4))
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s nb=%d token %d row %d: x8 %v, reference %v", name, nb, i/rows, i%rows, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkIQ3SLookup sets the permute kernels (word; byte with VBMI) side by side on 32 L2-resident rows of 2048:
// "row" one token (MB/s of weights per CPU-second, cpuMB/s), "x8" eight
// tokens per call.
//
//	go test ./tensor -run XXX -bench IQ3SLookup -count 3
func BenchmarkIQ3SLookup(b *testing.B) {
	if !hasKZ {
		b.Skip("no AVX-512 BW+VNNI")
	}
	const rows, nb = 32, 8
	cols, stride := nb*qkK, nb*110
	rng := rand.New(rand.NewPCG(1, 2))
	w := iq3sEveryIndexRows(rng, rows, nb, stride)
	var a quantizedActs
	if err := quantizeActs(&a, IQ3_S, randVec(rng, 8*cols)); err != nil {
		b.Fatal(err)
	}
	lb, ld := qx8PackKLen(cols)
	bs, dz := make([]int16, lb), make([]float32, ld)
	qx8PackK(bs, dz, &a, cols, 0)
	dst := make([]float32, 8*rows)
	kernels := []struct {
		name string
		run  func()
	}{
		{"row/permute", func() { qdotIQ3_SZP(&dst[0], rows, &w[0], uintptr(stride), &a.Q[0], &a.D[0], nil, nb) }},
		{"row/byte", func() { qdotIQ3_SZV(&dst[0], rows, &w[0], uintptr(stride), &a.Q[0], &a.D[0], nil, nb) }},
		{"x8/permute", func() {
			qdotIQ3_Sx8ZP(&dst[0], rows, &w[0], uintptr(stride), &a.Q[0], &bs[0], &dz[0], nb, uintptr(cols), rows*4)
		}},
	}
	kernels = append(kernels, struct {
		name string
		run  func()
	}{"x8/byte", func() {
		qdotIQ3_Sx8ZV(&dst[0], rows, &w[0], uintptr(stride), &a.Q[0], &bs[0], &dz[0], nb, uintptr(cols), rows*4)
	}})
	for _, k := range kernels {
		if strings.HasSuffix(k.name, "/byte") && !hasIQ3V {
			continue
		}
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(int64(rows * stride))
			c0 := cpuSeconds()
			for b.Loop() {
				k.run()
			}
			if c := cpuSeconds() - c0; c > 0 {
				b.ReportMetric(float64(rows*stride)*float64(b.N)/c/1e6, "cpuMB/s")
			}
		})
	}
}
