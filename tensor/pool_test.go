package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPoolStats: every job handed to the workers counts one dispatch and
// its time, inline calls (a single chunk, a nil Pool) count nothing, the
// caller's wait is part of the dispatched time, and ResetStats zeroes.
func TestPoolStats(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	sum := make([]int, 2)
	job := RangeFunc(func(lo, hi, w int) {
		for i := lo; i < hi; i++ {
			sum[w] += i
		}
	})
	p.For(100, 10, job)
	p.For(100, 100, job) // one chunk: inline
	w, err := NewMat(Q8_0, 64, 64, make([]byte, 64*68))
	if err != nil {
		t.Fatal(err)
	}
	p.MatMul(make([]float32, 64), w, make([]float32, 64), 1)
	st := p.Stats()
	if st.Dispatches != 2 {
		t.Errorf("Dispatches = %d, want 2 (a For of 10 chunks and a MatMul; the single-chunk For runs inline)", st.Dispatches)
	}
	if st.Busy <= 0 || st.Wait < 0 || st.Wait > st.Busy {
		t.Errorf("Busy %v, Wait %v: want 0 < Busy and 0 ≤ Wait ≤ Busy", st.Busy, st.Wait)
	}
	if st.Joins > st.Dispatches || st.Parks > st.Dispatches || st.Wakes > st.Dispatches {
		t.Errorf("%+v: want Joins ≤ Dispatches·(Threads-1) = Dispatches, Parks, Wakes ≤ Dispatches", st)
	}
	p.ResetStats()
	if st := p.Stats(); st != (PoolStats{}) {
		t.Errorf("after ResetStats: %+v", st)
	}
	p.For(100, 10, job)
	if st := p.Stats(); st.Dispatches != 1 || st.Joins > 1 {
		t.Errorf("one job after ResetStats: %+v", st)
	}
	var nilPool *Pool
	nilPool.For(100, 10, job)
	if st := nilPool.Stats(); st != (PoolStats{}) {
		t.Errorf("nil Pool: %+v", st)
	}
}

// TestMatMulShared: products sharing one input in one dispatch equal the
// separate MatMuls bit for bit (float, one K-quant activation format
// across Q4_K/Q6_K, Q8_0, the packed types mixed with others), in one
// hand-off where they can share and one
// each where they cannot (two activation formats, several tokens).
func TestMatMulShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	p := NewPool(2)
	defer p.Close()
	const cols = 512
	for _, c := range []struct {
		types    []DType
		n        int
		dispatch uint64
	}{
		{[]DType{F16, F16, F32}, 1, 1},
		{[]DType{Q4_K, Q6_K, Q4_K}, 1, 1},
		{[]DType{Q8_0, Q8_0}, 1, 1},
		{[]DType{Q8_0, Q4_K}, 1, 2},
		{[]DType{Q4_K, Q4_K}, 3, 2},
		// The packed types (rowdot_q4x8.go) beside others of their
		// activation format, each with its own bias of the one input.
		{[]DType{Q4_0, Q8_0, MXFP4}, 1, 1},
		{[]DType{Q5_0, MXFP4}, 1, 1},
		{[]DType{IQ4_NL, Q4_0}, 1, 1},
		{[]DType{Q4_1, Q5_1}, 1, 1},
	} {
		var ws []*Mat
		var got, want [][]float32
		for i, ty := range c.types {
			w := anyMat(t, rng, ty, 40+24*i, cols)
			ws = append(ws, w)
			got = append(got, make([]float32, c.n*w.Rows))
			want = append(want, make([]float32, c.n*w.Rows))
		}
		x := make([]float32, c.n*cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i, w := range ws {
			p.MatMul(want[i], w, x, c.n)
		}
		p.ResetStats()
		p.MatMulShared(x, c.n, ws, got)
		if d := p.Stats().Dispatches; d != c.dispatch {
			t.Errorf("%v n=%d: %d dispatches, want %d", c.types, c.n, d, c.dispatch)
		}
		for i := range ws {
			for r := range want[i] {
				if math.Float32bits(got[i][r]) != math.Float32bits(want[i][r]) {
					t.Fatalf("%v n=%d: matrix %d row %d: %v shared, %v alone", c.types, c.n, i, r, got[i][r], want[i][r])
				}
			}
		}
	}
}

// anyMat is a random (rows, cols) matrix of a float or quantized type.
func anyMat(t *testing.T, rng *rand.Rand, ty DType, rows, cols int) *Mat {
	if isFloat(ty) {
		w, _ := randMat(rng, ty, rows, cols)
		return w
	}
	rb, err := ty.RowBytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, rows*rb)
	for r := range rows {
		if err := QuantizeRow(data[r*rb:(r+1)*rb], ty, randVec(rng, cols)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := NewMat(ty, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
