package tensor

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var quantTypes = []DType{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, MXFP4, IQ3_S}

var dotTypes = []DType{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4, IQ3_S}

// roundTripBound: largest relative RMSE of QuantizeRow→DequantizeRow on
// Gaussian data (≈1.2× measured).
var roundTripBound = map[DType]float64{
	Q8_0: 0.0065, Q8_K: 0.0085, Q6_K: 0.021, Q5_K: 0.043, Q5_1: 0.045,
	Q5_0: 0.052, Q4_K: 0.085, Q4_1: 0.090, Q4_0: 0.110, Q3_K: 0.21, Q2_K: 0.40,
	IQ4_NL: 0.092, IQ4_XS: 0.093, MXFP4: 0.135, IQ3_S: 0.20,
}

func qGauss(r *rand.Rand, n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * std)
	}
	return v
}

func qEncode(t testing.TB, ty DType, x []float32) []byte {
	t.Helper()
	n, err := ty.RowBytes(len(x))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if err := QuantizeRow(b, ty, x); err != nil {
		t.Fatal(err)
	}
	return b
}

func qDecode(ty DType, b []byte, n int) []float32 {
	v := make([]float32, n)
	DequantizeRow(v, ty, b)
	return v
}

func TestQuantizeRowErrors(t *testing.T) {
	x := make([]float32, 64)
	if err := QuantizeRow(make([]byte, 10), Q4_0, x); err == nil {
		t.Error("wrong dst length accepted")
	}
	if err := QuantizeRow(make([]byte, 144), Q4_K, x); err == nil {
		t.Error("64 elements accepted for a 256-element block type")
	}
	if err := QuantizeRow(nil, I32, x); err == nil {
		t.Error("I32 accepted")
	}
	if err := QuantizeRow(nil, DType(99), x); err == nil {
		t.Error("unknown type accepted")
	}
	for _, ty := range quantTypes {
		if !CanQuantize(ty) || !Computable(ty) {
			t.Errorf("%s: CanQuantize %v Computable %v", ty, CanQuantize(ty), Computable(ty))
		}
	}
	var a quantizedActs
	if err := quantizeActs(&a, F32, x); err == nil {
		t.Error("quantizeActs accepted F32 weights")
	}
	if err := quantizeActs(&a, Q4_K, x); err == nil {
		t.Error("quantizeActs accepted 64 elements for Q8_K")
	}
}

func TestQuantRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 64 * 256
	x := qGauss(r, n, 0.02)
	// Edge blocks: all zero, constant, one outlier, all negative.
	clear(x[0:256])
	for i := 256; i < 512; i++ {
		x[i] = 0.5
	}
	x[600] = 3
	for i := 768; i < 1024; i++ {
		x[i] = -qabs(x[i])
	}
	for _, ty := range append(quantTypes, F16, BF16, F32) {
		b := qEncode(t, ty, x)
		y := qDecode(ty, b, n)
		for i := 0; i < 256; i++ {
			if y[i] != 0 {
				t.Fatalf("%s: zero block decodes to %g at %d", ty, y[i], i)
			}
		}
		// Relative RMSE on the Gaussian part only (edge blocks skew it).
		rel := qRelRMSE(y[1024:], x[1024:])
		bound, ok := roundTripBound[ty]
		if !ok {
			bound = 0.005 // float types
		}
		if rel > bound {
			t.Errorf("%s: round-trip relative RMSE %.4f > %.4f", ty, rel, bound)
		}
		if e := qRelRMSE(y[256:512], x[256:512]); e > 0.25 {
			t.Errorf("%s: constant block relative RMSE %.3f", ty, e)
		}
		t.Logf("%-5s rel RMSE %.5f  (%.2f bits/weight)", ty, rel, 8*float64(ty.blockBytes())/float64(ty.BlockSize()))
	}
}

// TestQuantIdempotent: re-quantizing decoded values gives the same bytes.
// ggml's symmetric single-scale formats (Q8_0, Q4_0, Q5_0) are idempotent:
// the decoded extreme value reproduces the fp16 scale exactly.
func TestQuantIdempotent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := qGauss(r, 16*256, 1)
	for _, ty := range []DType{Q8_0, Q4_0, Q5_0} {
		b := qEncode(t, ty, x)
		b2 := qEncode(t, ty, qDecode(ty, b, len(x)))
		if !bytes.Equal(b, b2) {
			t.Errorf("%s: not idempotent", ty)
		}
	}
}

// TestDequantKnownBlocks pins the element order of formats with no shipped
// real-data fixture, using index formulas written independently of the
// decoder loops.
func TestDequantKnownBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	rb := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	setF16 := func(b []byte, f float32) { putF16(b, f) }
	check := func(ty DType, blk []byte, want func(e int) float32) {
		t.Helper()
		got := qDecode(ty, blk, ty.BlockSize())
		for e, g := range got {
			if w := want(e); g != w {
				t.Fatalf("%s element %d: got %g want %g", ty, e, g, w)
			}
		}
	}
	nib := func(qs []byte, e int) int { // element e of a 32-element nibble block
		if e < 16 {
			return int(qs[e] & 15)
		}
		return int(qs[e-16] >> 4)
	}
	{ // Q4_0
		b := rb(18)
		setF16(b, 0.5)
		check(Q4_0, b, func(e int) float32 { return float32(nib(b[2:], e)-8) * 0.5 })
	}
	{ // Q4_1
		b := rb(20)
		setF16(b, 0.25)
		setF16(b[2:], -1)
		check(Q4_1, b, func(e int) float32 { return float32(nib(b[4:], e))*0.25 - 1 })
	}
	{ // Q5_0 and Q5_1: fifth bit of element e is bit e of qh
		b := rb(22)
		setF16(b, 0.5)
		qh := u32At(b[2:])
		check(Q5_0, b, func(e int) float32 { return float32(nib(b[6:], e)+int(qh>>e&1)*16-16) * 0.5 })
		b = rb(24)
		setF16(b, 0.5)
		setF16(b[2:], 2)
		qh = u32At(b[4:])
		check(Q5_1, b, func(e int) float32 { return float32(nib(b[8:], e)+int(qh>>e&1)*16)*0.5 + 2 })
	}
	{ // Q2_K: element e sits in qs[32·(e/128) + e%32], bits 2·((e%128)/32); scale index e/16
		b := rb(84)
		setF16(b[80:], 0.5)
		setF16(b[82:], 0.25)
		check(Q2_K, b, func(e int) float32 {
			q := int(b[16+32*(e/128)+e%32]>>(2*((e%128)/32))) & 3
			sc := b[e/16]
			return float32(0.5*float32(sc&15))*float32(q) - 0.25*float32(sc>>4)
		})
	}
	{ // Q3_K: as Q2_K plus high bit (e%32 in hmask, bit e/32), 6-bit scales
		b := rb(110)
		setF16(b[108:], 0.5)
		check(Q3_K, b, func(e int) float32 {
			q := int(b[32+32*(e/128)+e%32]>>(2*((e%128)/32))) & 3
			if b[e%32]>>(e/32)&1 == 0 {
				q -= 4
			}
			j := e / 16
			lo := int(b[96+j%8]>>(4*(j/8))) & 15
			hi := int(b[96+8+j%4]>>(2*(j/4))) & 3
			return 0.5 * float32(lo|hi<<4-32) * float32(q)
		})
	}
	{ // Q4_K: sub-block s = e/32; nibble (s%2) of qs[32·(s/2) + e%32]
		b := rb(144)
		setF16(b, 0.5)
		setF16(b[2:], 0.25)
		check(Q4_K, b, func(e int) float32 {
			s := e / 32
			q := int(b[16+32*(s/2)+e%32]>>(4*(s%2))) & 15
			sc, m := scaleMinK4(s, b[4:16])
			return float32(0.5*float32(sc))*float32(q) - 0.25*float32(m)
		})
	}
	{ // Q6_K: half h = e/128, r = e%128: low nibble from ql[64h + r%64] (nibble r/64),
		// high bits from qh[32h + r%32] bits 2·(r/32); scale 8h + r/16
		b := rb(210)
		setF16(b[208:], 0.5)
		check(Q6_K, b, func(e int) float32 {
			h, rr := e/128, e%128
			lo := int(b[64*h+rr%64]>>(4*(rr/64))) & 15
			hi := int(b[128+32*h+rr%32]>>(2*(rr/32))) & 3
			sc := int8(b[192+8*h+rr/16])
			return float32(0.5*float32(sc)) * float32(lo|hi<<4-32)
		})
	}
}

// qActsValue decodes quantized activation i.
func qActsValue(a *quantizedActs, i int) float64 {
	return float64(a.Q[i]) * float64(a.D[i/a.Format.BlockSize()])
}

func TestQuantizeActsMatchesQuantizeRow(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x := qGauss(r, 4*256, 1)
	x[5] = 0
	clear(x[256:512]) // a zero super-block
	for _, f := range []struct {
		wt, fmt DType
	}{{Q4_0, Q8_0}, {Q4_1, Q8_1}, {Q4_K, Q8_K}} {
		var a quantizedActs
		if err := quantizeActs(&a, f.wt, x); err != nil {
			t.Fatal(err)
		}
		if a.Format != f.fmt || a.N != len(x) {
			t.Fatalf("%s: format %s N %d", f.wt, a.Format, a.N)
		}
		bs, bb := f.fmt.BlockSize(), f.fmt.blockBytes()
		var b []byte
		if f.fmt == Q8_1 {
			bb = 36 // ggml's block_q8_1 {d, s fp16; qs [32]i8}
			b = make([]byte, len(x)/32*bb)
			quantizeQ8_1(b, x)
		} else {
			b = qEncode(t, f.fmt, x)
		}
		for blk := 0; blk < len(x)/bs; blk++ {
			raw := b[blk*bb : (blk+1)*bb]
			var d float32
			var qs []byte
			switch f.fmt {
			case Q8_0:
				d, qs = f16At(raw), raw[2:]
			case Q8_1:
				d, qs = f16At(raw), raw[4:]
				if a.S[blk] != f16At(raw[2:]) {
					t.Fatalf("Q8_1 block %d: s %g vs %g", blk, a.S[blk], f16At(raw[2:]))
				}
			case Q8_K:
				d, qs = f32At(raw), raw[4:260]
				for j := range 16 {
					if want := int16(uint16(raw[260+2*j]) | uint16(raw[261+2*j])<<8); a.BSums[16*blk+j] != want {
						t.Fatalf("Q8_K block %d: bsums[%d] %d vs %d", blk, j, a.BSums[16*blk+j], want)
					}
				}
			}
			if a.D[blk] != d {
				t.Fatalf("%s block %d: d %g vs %g", f.fmt, blk, a.D[blk], d)
			}
			for j := range bs {
				if a.Q[blk*bs+j] != int8(qs[j]) {
					t.Fatalf("%s block %d: q[%d] %d vs %d", f.fmt, blk, j, a.Q[blk*bs+j], int8(qs[j]))
				}
			}
		}
	}
}

func TestDotQ(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, wt := range dotTypes {
		bs := wt.BlockSize()
		for nb := 1; nb <= 8; nb++ {
			n := nb * bs
			for trial := range 3 {
				w := qEncode(t, wt, qGauss(r, n, 0.05))
				x := qGauss(r, n, 1)
				if trial == 2 {
					for i := range x { // all-positive activations stress the min terms
						x[i] = qabs(x[i]) + 0.5
					}
				}
				var a quantizedActs
				if err := quantizeActs(&a, wt, x); err != nil {
					t.Fatal(err)
				}
				got := float64(dotQ(wt, w, &a, 0))
				// (a) exactly the dot of the decoded operands, up to float32
				// rounding. For Q4_1/Q5_1 the offset term m·Σx uses the
				// activations' stored s = fp16(d·Σq), as ggml does.
				wd := qDecode(wt, w, n)
				var exact, mag, wn, xn float64
				for i := range n {
					wi := float64(wd[i])
					if a.Format == Q8_1 {
						m := float64(f16At(w[i/32*wt.blockBytes()+2:]))
						wi = float64(wd[i]) - m
						if i%32 == 0 {
							exact += m * float64(a.S[i/32])
							mag += math.Abs(m * float64(a.S[i/32]))
						}
					}
					p := wi * qActsValue(&a, i)
					exact += p
					mag += math.Abs(p)
					wn += float64(wd[i]) * float64(wd[i])
					xn += float64(x[i]) * float64(x[i])
				}
				if math.Abs(got-exact) > 2e-6*mag+1e-30 {
					t.Fatalf("%s n=%d: dotQ %g, decoded operands give %g", wt, n, got, exact)
				}
				// (b) close to the float reference with exact activations:
				// 8-bit activations err by ~0.8% of σ(x) per element, so the
				// dot errs by ~0.008·‖w‖‖x‖/√n; allow 6×.
				ref := float64(dotDequant(wt, w, x))
				if e := math.Abs(got-ref) / math.Sqrt(wn*xn); e > 0.05/math.Sqrt(float64(n)) {
					t.Fatalf("%s n=%d: dotQ %g vs dotDequant %g: relative error %.4f", wt, n, got, ref, e)
				}
			}
		}
	}
}

// TestDotQOffset: a batch quantized in one call gives each row's dot at
// off = t·cols, equal to quantizing the row alone.
func TestDotQOffset(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, wt := range dotTypes {
		cols := 2 * 256
		w := qEncode(t, wt, qGauss(r, cols, 0.05))
		x := qGauss(r, 3*cols, 1)
		var all, one quantizedActs
		if err := quantizeActs(&all, wt, x); err != nil {
			t.Fatal(err)
		}
		for row := range 3 {
			if err := quantizeActs(&one, wt, x[row*cols:(row+1)*cols]); err != nil {
				t.Fatal(err)
			}
			if g, w := dotQ(wt, w, &all, row*cols), dotQ(wt, w, &one, 0); g != w {
				t.Fatalf("%s row %d: batched %g, alone %g", wt, row, g, w)
			}
		}
	}
}

func TestMatMulQuant(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const rows, cols, n = 5, 512, 3
	x := qGauss(r, n*cols, 1)
	for _, wt := range append([]DType{F32, F16}, dotTypes...) {
		m, err := NewMat(wt, rows, cols, qEncode(t, wt, qGauss(r, rows*cols, 0.05)))
		if err != nil {
			t.Fatal(err)
		}
		ref := make([]float32, n*rows)
		got := make([]float32, n*rows)
		matMulRef(ref, m, x, n, 0, rows)
		matMulQuant(got, m, x, n, 0, 2)
		matMulQuant(got, m, x, n, 2, rows)
		wd := qDecode(wt, m.Data, rows*cols)
		for i := range ref {
			tok, row := i/rows, i%rows
			var wn, xn float64
			for c := range cols {
				wn += float64(wd[row*cols+c]) * float64(wd[row*cols+c])
				xn += float64(x[tok*cols+c]) * float64(x[tok*cols+c])
			}
			if e := math.Abs(float64(got[i]-ref[i])) / math.Sqrt(wn*xn); e > 0.05/math.Sqrt(cols) {
				t.Fatalf("%s: dst[%d] = %g, matMulRef %g (relative error %.5f)", wt, i, got[i], ref[i], e)
			}
		}
		for row := range rows { // dotDequant is matMulRef's value exactly
			if d := dotDequant(wt, m.Row(row), x[:cols]); d != ref[row] {
				t.Fatalf("%s row %d: dotDequant %g, matMulRef %g", wt, row, d, ref[row])
			}
		}
	}
}

func TestQuantNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	x := qGauss(r, 1024, 1)
	for _, wt := range []DType{Q4_0, Q4_1, Q4_K, Q6_K} {
		w := qEncode(t, wt, qGauss(r, 1024, 0.05))
		var a quantizedActs
		if err := quantizeActs(&a, wt, x); err != nil {
			t.Fatal(err)
		}
		var sink float32
		allocs := testing.AllocsPerRun(20, func() {
			_ = quantizeActs(&a, wt, x)
			sink += dotQ(wt, w, &a, 0)
			sink += dotDequant(wt, w, x)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per quantizeActs+dotQ+dotDequant", wt, allocs)
		}
		_ = fmt.Sprint(sink)
	}
}

// TestQuantSpecialValues: NaN, ±Inf, huge and tiny inputs must not panic
// (values are then meaningless, as in ggml).
func TestQuantSpecialValues(t *testing.T) {
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32, 1e-40, -1e-45, 0}
	r := rand.New(rand.NewPCG(17, 18))
	for _, ty := range quantTypes {
		for _, sp := range specials {
			x := qGauss(r, 256, 1)
			x[r.IntN(256)] = sp
			x[r.IntN(256)] = sp
			b := qEncode(t, ty, x)
			_ = qDecode(ty, b, len(x))
			if _, ok := actsFormat(ty); ok {
				var a quantizedActs
				if err := quantizeActs(&a, ty, x); err != nil {
					t.Fatal(err)
				}
				_ = dotQ(ty, b, &a, 0)
			}
		}
		for _, sp := range specials { // a whole block of one special value
			x := make([]float32, 256)
			for i := range x {
				x[i] = sp
			}
			_ = qDecode(ty, qEncode(t, ty, x), len(x))
		}
	}
}
