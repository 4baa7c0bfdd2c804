package tensor

import "testing"

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
	p.ResetStats()
	if st := p.Stats(); st != (PoolStats{}) {
		t.Errorf("after ResetStats: %+v", st)
	}
	var nilPool *Pool
	nilPool.For(100, 10, job)
	if st := nilPool.Stats(); st != (PoolStats{}) {
		t.Errorf("nil Pool: %+v", st)
	}
}
