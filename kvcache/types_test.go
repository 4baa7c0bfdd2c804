package kvcache

import (
	"math"
	"math/rand/v2"
	"testing"

	"nanoserve/tensor"
)

// TestTypesRoundTrip: Store then Load gives each value back exactly (F32),
// within half an F16 ulp (F16: relative 2^-11), or within half a Q8_0 step
// of its 32-block (|x − d·q| ≤ d/2 with d = max|x|/127, plus 127 times the
// scale's F16 rounding, max|x|/2048); Bytes counts the encoded rows (F16 half of F32, Q8_0
// 34 bytes per 32 values).
func TestTypesRoundTrip(t *testing.T) {
	const layers, kvDim, bs, blocks = 2, 64, 4, 3
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		t     tensor.DType
		bytes int64 // of the whole cache
	}{
		{tensor.F32, 2 * layers * bs * blocks * kvDim * 4},
		{tensor.F16, 2 * layers * bs * blocks * kvDim * 2},
		{tensor.Q8_0, 2 * layers * bs * blocks * kvDim / 32 * 34},
	} {
		c, err := NewType(tc.t, layers, kvDim, bs, blocks)
		if err != nil {
			t.Fatal(err)
		}
		if c.Bytes() != tc.bytes {
			t.Errorf("%s: Bytes = %d, want %d", tc.t, c.Bytes(), tc.bytes)
		}
		rows := bs * blocks
		k, v := make([][]float32, rows), make([][]float32, rows)
		for s := range rows {
			k[s], v[s] = make([]float32, kvDim), make([]float32, kvDim)
			for i := range kvDim {
				k[s][i], v[s][i] = float32(r.NormFloat64()*3), float32(r.NormFloat64()/5)
			}
			c.Store(1, s, k[s], v[s])
		}
		gk, gv := make([]float32, kvDim), make([]float32, kvDim)
		for s := range rows {
			c.Load(1, s, gk, gv)
			for _, p := range [][2][]float32{{k[s], gk}, {v[s], gv}} {
				want, got := p[0], p[1]
				for i := range kvDim {
					var tol float64
					switch tc.t {
					case tensor.F16:
						tol = math.Abs(float64(want[i])) * (1.0 / 2048)
					case tensor.Q8_0:
						amax := 0.0
						for _, x := range want[i/32*32 : i/32*32+32] {
							amax = max(amax, math.Abs(float64(x)))
						}
						tol = amax/127/2 + amax/2048 // half a step, plus the F16 scale's rounding times |q| ≤ 127
					}
					if d := math.Abs(float64(got[i] - want[i])); d > tol || (tol == 0 && d != 0) {
						t.Fatalf("%s row %d col %d: stored %g, loaded %g (tolerance %g)", tc.t, s, i, want[i], got[i], tol)
					}
				}
			}
		}
	}
}

// TestTypeErrors: unknown names, a non-cache type and a Q8_0 row that is
// not whole blocks are refused with the reason.
func TestTypeErrors(t *testing.T) {
	for s, want := range map[string]tensor.DType{"f32": tensor.F32, "F16": tensor.F16, "q8_0": tensor.Q8_0} {
		if got, err := ParseType(s); err != nil || got != want {
			t.Errorf("ParseType(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseType("q4_0"); err == nil {
		t.Error("ParseType(q4_0) accepted")
	}
	if _, err := NewType(tensor.Q8_0, 1, 48, 4, 2); err == nil {
		t.Error("Q8_0 with kv_dim 48 accepted")
	}
	if _, err := NewType(tensor.Q4_0, 1, 64, 4, 2); err == nil {
		t.Error("Q4_0 cache accepted")
	}
}

// TestTruncateCopiesEncodedRows: the copy-on-write of a shared partial
// block copies the encoded rows of every layer (F16 and Q8_0 caches).
func TestTruncateCopiesEncodedRows(t *testing.T) {
	for _, typ := range []tensor.DType{tensor.F16, tensor.Q8_0} {
		c, err := NewType(typ, 2, 32, 4, 4)
		if err != nil {
			t.Fatal(err)
		}
		var a, b Seq
		if err := c.Reserve(&a, 6); err != nil {
			t.Fatal(err)
		}
		a.Len = 6
		row := func(p int) []float32 {
			x := make([]float32, 32)
			for i := range x {
				x[i] = float32(p*32 + i)
			}
			return x
		}
		for p := range 6 {
			for l := range 2 {
				c.Store(l, c.Slot(&a, p), row(p+l), row(-p-l))
			}
		}
		c.Fork(&b, &a)
		c.Truncate(&b, b.Len)
		if b.Blocks[1] == a.Blocks[1] {
			t.Fatalf("%s: no copy-on-write", typ)
		}
		ka, va, kb, vb := make([]float32, 32), make([]float32, 32), make([]float32, 32), make([]float32, 32)
		for p := range 6 {
			for l := range 2 {
				c.Load(l, c.Slot(&a, p), ka, va)
				c.Load(l, c.Slot(&b, p), kb, vb)
				for i := range 32 {
					if ka[i] != kb[i] || va[i] != vb[i] || ka[i] == 0 && p+l > 0 {
						t.Fatalf("%s layer %d position %d col %d: parent %g/%g, fork %g/%g", typ, l, p, i, ka[i], va[i], kb[i], vb[i])
					}
				}
			}
		}
	}
}
