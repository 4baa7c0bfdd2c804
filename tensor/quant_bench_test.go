package tensor

import (
	"math/rand/v2"
	"testing"
)

// Benchmarks over one 4096-element row; SetBytes is the weight row's
// encoded size, so MB/s compares formats by weight bandwidth.

const benchCols = 4096

func benchRow(b *testing.B, wt DType) ([]byte, []float32) {
	r := rand.New(rand.NewPCG(1, 1))
	return qEncode(b, wt, qGauss(r, benchCols, 0.05)), qGauss(r, benchCols, 1)
}

func BenchmarkDequantize(b *testing.B) {
	for _, wt := range dotTypes {
		b.Run(wt.String(), func(b *testing.B) {
			w, _ := benchRow(b, wt)
			dst := make([]float32, benchCols)
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				DequantizeRow(dst, wt, w)
			}
		})
	}
}

func BenchmarkDotDequant(b *testing.B) {
	for _, wt := range dotTypes {
		b.Run(wt.String(), func(b *testing.B) {
			w, x := benchRow(b, wt)
			b.SetBytes(int64(len(w)))
			var s float32
			for b.Loop() {
				s += dotDequant(wt, w, x)
			}
			_ = s
		})
	}
}

func BenchmarkDotQ(b *testing.B) {
	for _, wt := range dotTypes {
		b.Run(wt.String(), func(b *testing.B) {
			w, x := benchRow(b, wt)
			var a quantizedActs
			if err := quantizeActs(&a, wt, x); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(w)))
			var s float32
			for b.Loop() {
				s += dotQ(wt, w, &a, 0)
			}
			_ = s
		})
	}
}

// BenchmarkQuantizeActs: SetBytes is the float32 input size.
func BenchmarkQuantizeActs(b *testing.B) {
	for _, wt := range []DType{Q8_0, Q4_1, Q4_K} {
		f, _ := actsFormat(wt)
		b.Run(f.String(), func(b *testing.B) {
			_, x := benchRow(b, wt)
			var a quantizedActs
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				_ = quantizeActs(&a, wt, x)
			}
		})
	}
}

// BenchmarkQuantizeRow: SetBytes is the float32 input size.
func BenchmarkQuantizeRow(b *testing.B) {
	for _, wt := range quantTypes {
		b.Run(wt.String(), func(b *testing.B) {
			r := rand.New(rand.NewPCG(2, 2))
			x := qGauss(r, benchCols, 0.05)
			n, _ := wt.RowBytes(benchCols)
			dst := make([]byte, n)
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				_ = QuantizeRow(dst, wt, x)
			}
		})
	}
}
