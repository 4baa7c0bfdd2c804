package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNLTile checks the 16-token tiles of IQ4_NL and MXFP4
// (dotQRowsNLTile) against the row dots bit for bit, for every token of
// two groups and of a last partial group (one token with a 30× range),
// raw and quantized rows of
// several lengths (odd block counts too) at a stride padded with noise,
// row ranges not starting at 0 and not whole tiles of four rows.
func TestNLTile(t *testing.T) {
	savedZ := hasNLZV
	defer func() { hasNLZV = savedZ }()
	ran := false
	for _, z := range []bool{true, false} {
		if z && !savedZ || !z && !hasNLTileY {
			continue
		}
		hasNLZV, ran = z, true
		t.Run(map[bool]string{true: "zmm", false: "ymm"}[z], testNLTile)
	}
	if !ran {
		t.Skip("no IQ4_NL/MXFP4 tiles here (neither AVX-512 BW+VNNI+VBMI nor AVX2)")
	}
}

// testNLTile checks dotQRowsNLTile's tiles (those hasNLZV selects) against
// the row dots, bit for bit.
func testNLTile(t *testing.T) {
	if !useNLTile(IQ4_NL) {
		t.Fatal("the tiles are off")
	}
	rng := rand.New(rand.NewPCG(75, 76))
	for _, wt := range []DType{IQ4_NL, MXFP4} {
		for _, cols := range []int{32, 96, 256, 2048} {
			const rows, n = 11, 35
			rb, _ := wt.RowBytes(cols)
			stride := rb + 3
			w := make([]byte, rows*stride+rb)
			for i := range w { // noise in the padding and past the last row
				w[i] = byte(rng.Uint32())
			}
			for r := range rows {
				copy(w[r*stride:], iqRandRow(t, rng, wt, cols, 0.02, r%2 == 0))
			}
			x := randVec(rng, n*cols)
			for i := range cols {
				x[9*cols+i] *= 30
			}
			var a quantizedActs
			if err := quantizeActs(&a, wt, x); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, n*rows)
			for tok := range n {
				dotQRows(wt, want[tok*rows:(tok+1)*rows], w, stride, cols, &a, tok*cols)
			}
			pl := nlPackLen(cols)
			for _, nt := range []int{32, 35, 21} { // whole groups, a last group of 3 (not nlTiled's) or 5
				ng := (nt + 15) / 16
				pk := make([]byte, ng*pl)
				for i := range pk { // noise the packing must overwrite
					pk[i] = byte(rng.Uint32())
				}
				for g := range ng {
					nlPack(pk[g*pl:(g+1)*pl], &a, cols, 16*g, min(16, nt-16*g))
				}
				ws := make([]byte, nlWSLen(cols))
				for _, lo := range []int{0, 1, 4} {
					got := make([]float32, n*rows)
					dotQRowsNLTile(wt, got, rows, w, stride, lo, rows, cols, pk, nt, &a, ws)
					for tok := range n {
						for r := range rows {
							g, wnt := got[tok*rows+r], want[tok*rows+r]
							if tok >= nt || r < lo {
								wnt = 0 // not the tiles' to write
							}
							if math.Float32bits(g) != math.Float32bits(wnt) {
								t.Fatalf("%s cols=%d nt=%d lo=%d token %d row %d: tile %v, row dot %v", wt, cols, nt, lo, tok, r, g, wnt)
							}
						}
					}
				}
			}
		}
	}
}

// TestIQ3SZx8 checks IQ3_S's eight-token zmm kernel (dotQRowsKX8) against
// its row dots bit for bit, as TestKQuantZx8 does the K-quants'.
func TestIQ3SZx8(t *testing.T) {
	if !hasKZ {
		t.Skip("no AVX-512 BW+VNNI")
	}
	testKQuantZx8(t, rand.New(rand.NewPCG(77, 78)), IQ3_S)
}

// iqZTypes are the table formats whose zmm kernels BenchmarkIQZ times.
var iqZTypes = []DType{IQ4_NL, MXFP4, IQ3_S}

// BenchmarkIQZ sets the zmm and ymm kernels of the table formats side by
// side in one run, as BenchmarkKQuantZ: "L2" dotQRows over 32
// L2-resident rows of 4096 (cpuMB/s of weights per CPU-second), "DRAM" a
// decode MatMul through TinyLlama's (5632, 2048) FFN shape on one thread,
// "prefill" a 64-token MatMul through (2048, 2048) on one thread (the
// zmm tiles or eight-token kernels against the ymm row dots token after
// token).
//
//	go test ./tensor -run XXX -bench IQZ -benchtime 100x -count 3
func BenchmarkIQZ(b *testing.B) {
	defer func(saved bool) { hasKZ = saved }(hasKZ)
	paths := []string{"zmm", "ymm"}
	if !hasKZ {
		paths = paths[1:]
	}
	for _, wt := range iqZTypes {
		for _, path := range paths {
			b.Run(wt.String()+"/L2/"+path, func(b *testing.B) {
				hasKZ = path == "zmm"
				const rows = 32
				w, x := benchRow(b, wt)
				wm := make([]byte, 0, rows*len(w))
				for range rows {
					wm = append(wm, w...)
				}
				var a quantizedActs
				if err := quantizeActs(&a, wt, x); err != nil {
					b.Fatal(err)
				}
				dst := make([]float32, rows)
				b.SetBytes(int64(len(wm)))
				c0 := cpuSeconds()
				for b.Loop() {
					dotQRows(wt, dst, wm, len(w), benchCols, &a, 0)
				}
				if c := cpuSeconds() - c0; c > 0 {
					b.ReportMetric(float64(len(wm))*float64(b.N)/c/1e6, "cpuMB/s")
				}
			})
		}
		for _, path := range paths {
			b.Run(wt.String()+"/DRAM/5632x2048/"+path, func(b *testing.B) {
				hasKZ = path == "zmm"
				benchMatVec(b, benchMats(b, wt, 5632, 2048), 1)
			})
		}
		for _, path := range paths {
			b.Run(wt.String()+"/prefill/2048x2048/n=64/"+path, func(b *testing.B) {
				hasKZ = path == "zmm"
				const rows, cols, n = 2048, 2048, 64
				w := benchMats(b, wt, rows, cols)[0]
				x := randVec(rand.New(rand.NewPCG(5, 6)), n*cols)
				dst := make([]float32, n*rows)
				for b.Loop() {
					(*Pool)(nil).MatMul(dst, w, x, n)
				}
				b.ReportMetric(2*rows*cols*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
	}
}
