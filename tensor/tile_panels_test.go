package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestTileF16Panels: F16 rows longer than tilePanelK (the panel path of
// the zmm tiles, tileF16Panels/tileF16x6ZP) give every (row, token) the
// bits of the one-token product (dotRowsF16Z, the canonical arithmetic),
// whatever the batch: rows with a 4-row remainder, K with a 16-column
// panel end, an 8-column remainder and a Cols%8 tail, more 6-token
// groups than one pass holds (n = 61: 10 groups) and a token remainder.
// Seen failing with accumulator Z1's reload offset changed in
// tileF16x6ZP (64 → 128) and with the mode's load bit never set (each
// panel started from zero).
func TestTileF16Panels(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512 here: the panel path is not taken")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	p := NewPool(2)
	defer p.Close()
	for _, sh := range [][2]int{{70, 1040}, {9, 2061}, {8, 3584}} {
		rows, K := sh[0], sh[1]
		rb, _ := F16.RowBytes(K)
		data := make([]byte, rows*rb)
		v := make([]float32, K)
		for r := range rows {
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			if err := QuantizeRow(data[r*rb:(r+1)*rb], F16, v); err != nil {
				t.Fatal(err)
			}
		}
		w := &Mat{Type: F16, Rows: rows, Cols: K, Data: data}
		for _, n := range []int{6, 7, 61} {
			t.Run(fmt.Sprintf("%dx%d/n=%d", rows, K, n), func(t *testing.T) {
				x := make([]float32, n*K)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				for _, pool := range []*Pool{nil, p} {
					got := make([]float32, n*rows)
					pool.MatMul(got, w, x, n)
					one := make([]float32, rows)
					for tk := range n {
						pool.MatMul(one, w, x[tk*K:(tk+1)*K], 1)
						for r := range rows {
							if g := got[tk*rows+r]; math.Float32bits(g) != math.Float32bits(one[r]) {
								t.Fatalf("token %d row %d: %v in a batch of %d, %v alone", tk, r, g, n, one[r])
							}
						}
					}
				}
			})
		}
	}
}
