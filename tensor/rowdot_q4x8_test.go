package tensor

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ4x8 checks the packed kernels bit for bit against the reference
// dots (every packed type, one token and, where q4x8Four, four): whole and partial
// last groups, chunks of rows starting inside the matrix, activations
// with a 30× larger token and weights with extreme scales (fp16 max and
// a subnormal; E8M0 0, 1 and 254).
func TestQ4x8(t *testing.T) {
	if !q4x8Arch || !hasSIMD {
		t.Skip("no packed Q4_0 kernels here (amd64 with AVX2)")
	}
	for _, wt := range []DType{Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, Q8_0} {
		// (Q8_0 stays on its eight-lane kernels where the AVX-512 ones run;
		// the packed kernels are still tested there.)
		if m := (&Mat{Type: wt, Rows: 8, Cols: 32}); !useQ4x8(m) && !(wt == Q8_0 && (hasQ8Z || hasVNNI)) {
			t.Fatalf("%s is not packed here", wt)
		}
		testQ4x8(t, wt)
	}
	for e := range 256 {
		if got := e8m0FromHalf(uint16(math.Float32bits(e8m0Half(uint8(e))) >> 16)); got != uint8(e) {
			t.Fatalf("E8M0 %d packed and unpacked is %d", e, got)
		}
	}
}

func testQ4x8(t *testing.T, wt DType) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, shape := range []struct{ rows, cols int }{{8, 32}, {13, 64}, {64, 256}, {67, 2048}, {5, 96}} {
		data, _ := qgRandRows(t, rng, wt, shape.rows, shape.cols)
		bb := wt.blockBytes()
		rb := shape.cols / 32 * bb
		if shape.rows == 67 {
			for r := range 3 { // row r's block r
				o := r*rb + bb*r
				if wt == MXFP4 {
					data[o] = []byte{0, 1, 254}[r]
				} else {
					data[o], data[o+1] = 0xff, 0x7b
				}
			}
			if wt != MXFP4 {
				data[5*rb], data[5*rb+1] = 0x01, 0x00
			}
			if wt == Q8_0 { // row 3's first block: the extreme bytes −128, 127
				for i := range 32 {
					data[3*rb+2+i] = []byte{0x80, 0x7f}[i%2]
				}
			}
		}
		m := &Mat{Type: wt, Rows: shape.rows, Cols: shape.cols, Data: data}
		pk := m.q4x8()
		for _, lo := range []int{0, 8} {
			if lo >= shape.rows || wt != Q4_0 && wt != IQ4_NL && wt != MXFP4 { // (q4x8Rows: the tiles' types)
				continue
			}
			back := make([]byte, len(data)-lo*rb)
			if q4x8Rows(back, wt, pk, lo, shape.rows, shape.cols); !bytes.Equal(back, data[lo*rb:]) {
				t.Fatalf("%s %v: rows %d.. unpacked from the packed copy differ from the file's", wt, shape, lo)
			}
		}
		for _, nt := range []int{1, 2, 3, 4, 5, 6, 7, 9} {
			x := randVec(rng, nt*shape.cols)
			for i := shape.cols; i < 2*shape.cols && nt > 1; i++ {
				x[i] *= 30
			}
			var a quantizedActs
			if err := quantizeActs(&a, wt, x); err != nil {
				t.Fatal(err)
			}
			a.q4Bias(wt)
			xs := make([]byte, (q4x8T4Tokens(nt)+3)/4*shape.cols/32*q4x8ActLen)
			if q4x8Four(wt) {
				q4x8ActGroups(xs, wt, &a, shape.cols, nt)
			}
			for _, rg := range [][2]int{{0, shape.rows}, {8, shape.rows}, {0, 8}} {
				lo, hi := rg[0], min(rg[1], shape.rows)
				if lo >= hi {
					continue
				}
				dst := make([]float32, nt*shape.rows)
				for i := range dst {
					dst[i] = float32(math.NaN())
				}
				dotQ4x8(wt, dst, shape.rows, pk, shape.rows, lo, hi, shape.cols, &a, xs, 0, nt)
				for tok := range nt {
					for r := range shape.rows {
						got := dst[tok*shape.rows+r]
						if r < lo || r >= hi {
							if !math.IsNaN(float64(got)) {
								t.Fatalf("%s %v nt=%d rows [%d,%d): row %d token %d written", wt, shape, nt, lo, hi, r, tok)
							}
							continue
						}
						want := dotQ(wt, data[r*rb:(r+1)*rb], &a, tok*shape.cols)
						if math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("%s %v nt=%d rows [%d,%d): row %d token %d: got %g, want %g", wt, shape, nt, lo, hi, r, tok, got, want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkQ4x8 is the packed kernels over 32 rows of 4096 elements
// (L2-resident) against one token (T1) and four (T4), Q4_0 and Q8_0 (the
// row dots of the same rows: BenchmarkDotQRows): MB/s of weight bytes per
// core and token group.
func BenchmarkQ4x8(b *testing.B) {
	const rows = 32
	for _, wt := range []DType{Q4_0, Q8_0} {
		w, x := benchRow(b, wt)
		wm := make([]byte, 0, rows*len(w))
		for range rows {
			wm = append(wm, w...)
		}
		m := &Mat{Type: wt, Rows: rows, Cols: benchCols, Data: wm}
		x4 := make([]float32, 0, 4*benchCols)
		for range 4 {
			x4 = append(x4, x...)
		}
		var a quantizedActs
		if err := quantizeActs(&a, wt, x4); err != nil {
			b.Fatal(err)
		}
		a.q4Bias(wt)
		xs := make([]byte, benchCols/32*q4x8ActLen)
		q4x8Acts(xs, wt, &a, benchCols, &[4]int{0, 1, 2, 3})
		dst := make([]float32, 4*rows)
		for _, nt := range []int{1, 4} {
			b.Run(wt.String()+"/T"+string(rune('0'+nt)), func(b *testing.B) {
				if !q4x8Arch || !hasSIMD {
					b.Skip("no packed kernels here")
				}
				pk := m.q4x8()
				b.SetBytes(int64(len(wm)))
				c0 := cpuSeconds()
				for b.Loop() {
					dotQ4x8(wt, dst, rows, pk, rows, 0, rows, benchCols, &a, xs, 0, nt)
				}
				if c := cpuSeconds() - c0; c > 0 {
					b.ReportMetric(float64(len(wm))*float64(b.N)/c/1e6, "cpuMB/s")
				}
			})
		}
	}
}

// TestQ4x8Prepare: Prepare packs a Q4_0 matrix once (the same copy on the
// next call and in MatMul), into its own huge-page mapping above 2 MiB,
// whose products keep the reference bits; other types need nothing.
func TestQ4x8Prepare(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	f := &Mat{Type: F16, Rows: 8, Cols: 64, Data: make([]byte, 8*64*2)}
	if f.Prepare() != 0 || f.Repacked() {
		t.Fatal("F16 matrix repacked")
	}
	if !q4x8Arch || !hasSIMD {
		t.Skip("no packed Q4_0 kernels here (amd64 with AVX2)")
	}
	const rows, cols = 2048, 2048 // 2.25 MiB packed: the mapping
	data, _ := qgRandRows(t, rng, Q4_0, rows, cols)
	m := &Mat{Type: Q4_0, Rows: rows, Cols: cols, Data: data}
	if !m.Repacked() {
		t.Fatal("Q4_0 matrix not repacked")
	}
	n := m.Prepare()
	if want := int64(rows / 8 * cols / 32 * q4x8Block); n != want {
		t.Fatalf("Prepare: %d bytes, want %d", n, want)
	}
	first := &(*m.packed.Load())[0]
	if m.Prepare() != n || &m.q4x8()[0] != first {
		t.Fatal("a second Prepare packed again")
	}
	x := randVec(rng, cols)
	dst := make([]float32, rows)
	p := NewPool(2)
	defer p.Close()
	p.MatMul(dst, m, x, 1)
	var a quantizedActs
	if err := quantizeActs(&a, Q4_0, x); err != nil {
		t.Fatal(err)
	}
	rb := cols / 32 * 18
	for r := 0; r < rows; r += 97 {
		if want := dotQ(Q4_0, data[r*rb:(r+1)*rb], &a, 0); math.Float32bits(dst[r]) != math.Float32bits(want) {
			t.Fatalf("row %d: %g, want %g", r, dst[r], want)
		}
	}
}
