package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestXSTile checks the ymm tiles of IQ4_XS and IQ3_S (dotQRowsXSTile) against the row
// dots bit for bit: every token of whole groups (IQ4_XS: of 4; IQ3_S: of
// 8, and a last partial group), one token with a 30× range, raw and
// quantized rows of one to nine super-blocks at a stride padded with
// noise, packs and scratch prefilled with noise, row ranges not starting
// at 0 and not whole tiles (IQ4_XS: an odd last row, run as a pair with
// itself). Seen failing with qdotXSTileK's token 1 scaled by token 0's
// da.
func TestXSTile(t *testing.T) {
	if !hasXSTileY {
		t.Skip("no IQ4_XS ymm tiles here (amd64 with AVX2 only)")
	}
	rng := rand.New(rand.NewPCG(77, 78))
	for _, c := range []struct {
		wt   DType
		cols int
	}{{IQ4_XS, 256}, {IQ4_XS, 768}, {IQ4_XS, 2304}, {IQ3_S, 256}, {IQ3_S, 2304}} {
		wt, cols := c.wt, c.cols
		const rows, n = 19, 21
		rb, _ := wt.RowBytes(cols)
		stride := rb + 5
		w := make([]byte, rows*stride+rb)
		for i := range w {
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
		pl := xsPackLen(cols)
		nts := []int{16, 21, 10} // IQ3_S: whole groups of 8, a last group of 5 or 2
		if wt == IQ4_XS {
			nts = []int{16, 20, 8} // groups of 4
		}
		for _, nt := range nts {
			ng := (nt + 7) / 8
			pk := make([]byte, ng*pl)
			for i := range pk {
				pk[i] = byte(rng.Uint32())
			}
			for g := range ng {
				xsPack(pk[g*pl:(g+1)*pl], &a, cols, 8*g, min(8, nt-8*g))
			}
			ws := make([]byte, xsWSLen(cols))
			for i := range ws {
				ws[i] = byte(rng.Uint32())
			}
			for _, lo := range []int{0, 3, 11} {
				got := make([]float32, n*rows)
				p := pk
				if wt == IQ4_XS {
					p = nil // its tile reads the quantized activations
				}
				dotQRowsXSTile(wt, got, rows, w, stride, lo, rows, cols, &a, p, nt, ws)
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

// TestXSUnpackIQ3S: the assembly IQ3_S unpacking (xsUnpackIQ3S) writes the
// Go path's bytes (xsUnpack with xsUnpackGo): magnitudes, signed levels,
// scales and dw of raw rows (every grid index, sign pattern and scale
// nibble) of one to five super-blocks, into scratch prefilled with the
// same noise. Seen failing with the bit-8 multiplier of word 0 wrong and
// with the high scale words' unpacking (VPUNPCKHWD) swapped for the low.
func TestXSUnpackIQ3S(t *testing.T) {
	if !hasSIMD || !hasXSTileY {
		t.Skip("no AVX2 here: xsUnpack runs in Go only")
	}
	defer func() { xsUnpackGo = false }()
	rng := rand.New(rand.NewPCG(91, 92))
	for nb := 1; nb <= 5; nb++ {
		for trial := range 8 {
			w := iqRandRow(t, rng, IQ3_S, nb*qkK, 0, true)
			noise := make([]byte, nb*xsWSSB)
			for i := range noise {
				noise[i] = byte(rng.Uint32())
			}
			got, want := append([]byte(nil), noise...), append([]byte(nil), noise...)
			xsUnpackGo = true
			xsUnpack(IQ3_S, want, w, nb)
			xsUnpackGo = false
			xsUnpack(IQ3_S, got, w, nb)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("nb=%d trial %d: byte %d (super-block %d, offset %d): asm %#x, Go %#x", nb, trial, i, i/xsWSSB, i%xsWSSB, got[i], want[i])
				}
			}
		}
	}
}
