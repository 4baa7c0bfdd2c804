package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// randMat returns a (rows, cols) matrix of type t with values N(0,1)
// rounded to t, and its exact float32 values.
func randMat(rng *rand.Rand, t DType, rows, cols int) (*Mat, []float32) {
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	var data []byte
	switch t {
	case F32:
		data = F32Bytes(append([]float32(nil), v...))
	case F16, BF16:
		data = make([]byte, 2*len(v))
		for i, f := range v {
			var h uint16
			if t == F16 {
				h = F32ToF16(f)
				v[i] = F16ToF32(h)
			} else {
				h = f32ToBF16(f)
				v[i] = bf16ToF32(h)
			}
			data[2*i], data[2*i+1] = byte(h), byte(h>>8)
		}
	}
	m, err := NewMat(t, rows, cols, data)
	if err != nil {
		panic(err)
	}
	return m, v
}

func randVec(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// checkProduct compares dst with the float64 product of the exact weights
// v (rows, cols) and x (n, cols). The error of each output is measured
// relative to Σ_c |w·x| (the scale float32 rounding errors live on) and
// the worst is returned.
func checkProduct(t *testing.T, name string, dst, v, x []float32, rows, cols, n int) float64 {
	t.Helper()
	worst := 0.0
	for tok := range n {
		for r := range rows {
			var s, mag float64
			for c := range cols {
				p := float64(v[r*cols+c]) * float64(x[tok*cols+c])
				s += p
				mag += math.Abs(p)
			}
			got := float64(dst[tok*rows+r])
			e := math.Abs(got-s) / max(mag, 1e-30)
			if !(e <= 1e-5) { // catches NaN too
				t.Fatalf("%s: dst[%d][%d] = %g, want %g (rel err %.3g)", name, tok, r, got, s, e)
			}
			worst = max(worst, e)
		}
	}
	return worst
}

// TestMatMulParity runs the fast MatMul (each assembly kernel set — zmm
// where AVX-512F, ymm — and pure Go, 1 and 2
// threads, nil pool) on random shapes with ragged tails and compares it
// with an exact float64 product and with matMulRef.
func TestMatMulParity(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pools := []*Pool{nil, NewPool(1), NewPool(2)}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	shapes := [][2]int{{1, 1}, {3, 7}, {4, 8}, {5, 15}, {7, 16}, {6, 33}, {13, 64}, {48, 100}, {50, 257}, {97, 520}, {131, 31}}
	ns := []int{1, 2, 5, 16, 17, 40, 150}
	worst := map[string]float64{}
	savedZ := hasAVX512
	defer func() { hasAVX512 = savedZ }()
	for _, path := range []string{"avx512", "avx2", "go"} {
		asm := path != "go"
		if asm && !hasSIMD || path == "avx512" && !savedZ {
			continue
		}
		saved := hasSIMD
		hasSIMD, hasAVX512 = asm, path == "avx512"
		for _, ty := range []DType{F32, F16, BF16} {
			for _, sh := range shapes {
				rows, cols := sh[0], sh[1]
				w, v := randMat(rng, ty, rows, cols)
				for _, n := range ns {
					x := randVec(rng, n*cols)
					ref := make([]float32, n*rows)
					matMulRef(ref, w, x, n, 0, rows)
					for pi, p := range pools {
						dst := make([]float32, n*rows)
						for i := range dst {
							dst[i] = float32(math.NaN())
						}
						p.MatMul(dst, w, x, n)
						name := fmt.Sprintf("%s %s (%d,%d) n=%d pool#%d", path, ty, rows, cols, n, pi)
						e := checkProduct(t, name, dst, v, x, rows, cols, n)
						key := fmt.Sprintf("%s %s n>1=%v", path, ty, n > 1)
						worst[key] = max(worst[key], e)
						for i := range dst {
							d := math.Abs(float64(dst[i] - ref[i]))
							if d > 1e-4*max(1, math.Abs(float64(ref[i]))) {
								t.Fatalf("%s: differs from matMulRef at %d: %g vs %g", name, i, dst[i], ref[i])
							}
						}
					}
				}
			}
		}
		hasSIMD = saved
	}
	for k, e := range worst {
		t.Logf("%s: max error %.2g (relative to Σ|w·x|)", k, e)
	}
}

// TestMatMulAllocs pins that a warmed-up Pool allocates nothing per call,
// for float and quantized weights, decode and prefill.
func TestMatMulAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := NewPool(2)
	defer p.Close()
	for _, ty := range []DType{F16, Q4_K, Q5_0, Q8_0, Q4_0, IQ4_NL, MXFP4} {
		const rows, cols = 200, 256
		var w *Mat
		if ty == F16 {
			w, _ = randMat(rng, F16, rows, cols)
		} else {
			rb, _ := ty.RowBytes(cols)
			data := make([]byte, rows*rb)
			for r := range rows {
				if err := QuantizeRow(data[r*rb:(r+1)*rb], ty, randVec(rng, cols)); err != nil {
					t.Fatal(err)
				}
			}
			w = &Mat{Type: ty, Rows: rows, Cols: cols, Data: data}
		}
		for _, n := range []int{1, 3, 20} {
			x := randVec(rng, n*cols)
			dst := make([]float32, n*rows)
			p.MatMul(dst, w, x, n)
			if a := testing.AllocsPerRun(50, func() { p.MatMul(dst, w, x, n) }); a != 0 {
				t.Errorf("%s n=%d: %v allocations per MatMul, want 0", ty, n, a)
			}
		}
	}
}

// TestPoolManyJobs runs many short jobs back to back (spin and park paths)
// and checks each worker ran and results are complete.
func TestPoolManyJobs(t *testing.T) {
	for _, th := range []int{1, 2, 3} {
		p := NewPool(th)
		out := make([]int, 1000)
		for it := range 200 {
			p.For(len(out), 7, RangeFunc(func(lo, hi, _ int) {
				for i := lo; i < hi; i++ {
					out[i] += i
				}
			}))
			if it%50 == 0 && out[999] != 999*(it+1) {
				t.Fatalf("threads=%d iteration %d: out[999] = %d", th, it, out[999])
			}
		}
		for i, v := range out {
			if v != 200*i {
				t.Fatalf("threads=%d: out[%d] = %d, want %d", th, i, v, 200*i)
			}
		}
		p.Close()
		p.Close()
		// A closed pool still computes (inline).
		p.For(10, 1, RangeFunc(func(lo, hi, _ int) { out[lo] = -1 }))
		if out[0] != -1 {
			t.Fatalf("closed pool did not run the job")
		}
	}
}

// forCounter is a RangeJob that counts items per worker and flags a worker
// index out of range or a worker running two ranges at once.
type forCounter struct {
	out  []int
	busy []atomic.Bool
	bad  atomic.Bool
}

func (f *forCounter) Range(lo, hi, w int) {
	if w < 0 || w >= len(f.busy) || f.busy[w].Swap(true) {
		f.bad.Store(true)
		return
	}
	for i := lo; i < hi; i++ {
		f.out[i]++
	}
	f.busy[w].Store(false)
}

// TestPoolFor checks For covers every item exactly once with worker
// indices below Threads, and that a nil Pool and a warm Pool allocate
// nothing (nor does MatMul on a nil Pool).
func TestPoolFor(t *testing.T) {
	for _, p := range []*Pool{nil, NewPool(1), NewPool(3)} {
		f := &forCounter{out: make([]int, 1001), busy: make([]atomic.Bool, p.Threads())}
		for _, chunk := range []int{0, 1, 7, 1000, 5000} {
			clear(f.out)
			p.For(len(f.out), chunk, f)
			for i, v := range f.out {
				if v != 1 {
					t.Fatalf("threads=%d chunk=%d: item %d ran %d times", p.Threads(), chunk, i, v)
				}
			}
		}
		if f.bad.Load() {
			t.Fatalf("threads=%d: worker index out of range or reused concurrently", p.Threads())
		}
		if a := testing.AllocsPerRun(20, func() { p.For(len(f.out), 16, f) }); a != 0 {
			t.Errorf("threads=%d: For allocates %.1f times per call", p.Threads(), a)
		}
		p.Close()
	}
	w := F32Mat(64, 32, make([]float32, 64*32))
	x, dst := make([]float32, 8*32), make([]float32, 8*64)
	var nilPool *Pool
	for _, n := range []int{1, 8} {
		nilPool.MatMul(dst, w, x, n)
		if a := testing.AllocsPerRun(20, func() { nilPool.MatMul(dst, w, x, n) }); a != 0 && !raceEnabled {
			t.Errorf("nil Pool MatMul of %d tokens allocates %.1f times per call", n, a)
		}
	}
}

// TestMatMulQuantTypes checks the quantized paths, assembly and pure Go:
// every n takes the 8-bit activations of n = 1, so all are compared with
// the 8-bit-activation reference matMulQuant.
func TestMatMulQuantTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p := NewPool(2)
	defer p.Close()
	saved := hasSIMD
	defer func() { hasSIMD = saved }()
	for _, asm := range []bool{true, false} {
		if asm && !saved {
			continue
		}
		hasSIMD = asm
		for _, ty := range dotTypes {
			rows, cols := 37, 768
			rb, _ := ty.RowBytes(cols)
			data := make([]byte, rows*rb)
			v := make([]float32, rows*cols)
			for r := range rows {
				src := randVec(rng, cols)
				if err := QuantizeRow(data[r*rb:(r+1)*rb], ty, src); err != nil {
					t.Fatal(err)
				}
				DequantizeRow(v[r*cols:(r+1)*cols], ty, data[r*rb:(r+1)*rb])
			}
			w, err := NewMat(ty, rows, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 3, 15, 17} {
				x := randVec(rng, n*cols)
				dst := make([]float32, n*rows)
				p.MatMul(dst, w, x, n)
				name := fmt.Sprintf("asm=%v %s n=%d", asm, ty, n)
				// 8-bit activations: the quantized reference.
				want := make([]float32, n*rows)
				matMulQuant(want, w, x, n, 0, rows)
				for tok := range n {
					for r := range rows {
						var mag float64
						for c := range cols {
							mag += math.Abs(float64(v[r*cols+c] * x[tok*cols+c]))
						}
						i := tok*rows + r
						if e := math.Abs(float64(dst[i]-want[i])) / mag; !(e < 1e-5) {
							t.Fatalf("%s token %d row %d: %g, want %g (rel %g)", name, tok, r, dst[i], want[i], e)
						}
					}
				}
			}
		}
	}
}
