package train

import (
	"sync"

	"nanoserve/tensor"
)

// mathOps runs the matrix products of the forward and backward passes.
// float32 goes through tensor.Pool.MatMul (the inference GEMM): the two
// backward orientations are rewritten as that product over transposed
// operands,
//
//	dx = dy·W      = dy·(Wᵀ)ᵀ          MatMul(Wᵀ (in, out), dy (N, out))
//	dW = dyᵀ·x     rows r: Σ_t xᵀ[c][t]·dyᵀ[r][t]   MatMul(xᵀ (in, N), dyᵀ (out, N))
//
// so every product uses the same fast kernel. float64 (the gradient-check
// reference) uses plain loops.
type mathOps[T Float] struct {
	threads int
	pool    *tensor.Pool // nil for float64
	ta, tb  []float32    // transpose scratch
	tc      []float32    // product scratch
}

func newMathOps[T Float](threads int) *mathOps[T] {
	threads = max(threads, 1)
	m := &mathOps[T]{threads: threads}
	var z T
	if _, ok := any(z).(float32); ok {
		m.pool = tensor.NewPool(threads)
	}
	return m
}

func (m *mathOps[T]) close() {
	if m.pool != nil {
		m.pool.Close()
	}
}

// parallel runs fn(job) for job in [0, n) on the workers.
func (m *mathOps[T]) parallel(n int, fn func(job int)) {
	m.parallelW(n, func(job, _ int) { fn(job) })
}

// parallelW is parallel that also passes the worker index (< threads).
func (m *mathOps[T]) parallelW(n int, fn func(job, worker int)) {
	w := min(m.threads, n)
	if w <= 1 {
		for j := range n {
			fn(j, 0)
		}
		return
	}
	var wg sync.WaitGroup
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := k; j < n; j += w {
				fn(j, k)
			}
		}()
	}
	wg.Wait()
}

func f32[T Float](s []T) []float32 { return any(s).([]float32) }

// matmul sets dst (N, out) = x (N, in) · Wᵀ, W (out, in).
func (m *mathOps[T]) matmul(dst, w, x []T, N, out, in int) {
	if m.pool != nil {
		m.pool.MatMul(f32(dst), tensor.F32Mat(out, in, f32(w)), f32(x), N)
		return
	}
	m.parallel(N, func(t int) {
		xt := x[t*in : (t+1)*in]
		for r := range out {
			wr := w[r*in : (r+1)*in]
			var s T
			for c, v := range xt {
				s += v * wr[c]
			}
			dst[t*out+r] = s
		}
	})
}

// matmulAdd adds x·Wᵀ to dst.
func (m *mathOps[T]) matmulAdd(dst, w, x []T, N, out, in int, tmp *[]T) {
	*tmp = grow(*tmp, N*out)
	m.matmul(*tmp, w, x, N, out, in)
	for i, v := range *tmp {
		dst[i] += v
	}
}

// transpose writes src (rows, cols) transposed into dst (cols, rows).
func transpose(dst, src []float32, rows, cols int) {
	const bs = 32
	for r0 := 0; r0 < rows; r0 += bs {
		for c0 := 0; c0 < cols; c0 += bs {
			for r := r0; r < min(r0+bs, rows); r++ {
				for c := c0; c < min(c0+bs, cols); c++ {
					dst[c*rows+r] = src[r*cols+c]
				}
			}
		}
	}
}

func growF(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// matmulBackX sets dx (N, in) = dy (N, out) · W (out, in).
func (m *mathOps[T]) matmulBackX(dx, dy, w []T, N, out, in int) {
	if m.pool != nil {
		m.ta = growF(m.ta, out*in)
		transpose(m.ta, f32(w), out, in)
		m.pool.MatMul(f32(dx), tensor.F32Mat(in, out, m.ta), f32(dy), N)
		return
	}
	m.parallel(N, func(t int) {
		d := dx[t*in : (t+1)*in]
		clear(d)
		for r := range out {
			g := dy[t*out+r]
			wr := w[r*in : (r+1)*in]
			for c := range d {
				d[c] += g * wr[c]
			}
		}
	})
}

// matmulBackW adds dyᵀ·x to dw (out, in): dw[r][c] += Σ_t dy[t][r]·x[t][c].
func (m *mathOps[T]) matmulBackW(dw, dy, x []T, N, out, in int) {
	if m.pool != nil {
		m.ta = growF(m.ta, in*N)
		m.tb = growF(m.tb, out*N)
		m.tc = growF(m.tc, out*in)
		transpose(m.ta, f32(x), N, in)
		transpose(m.tb, f32(dy), N, out)
		m.pool.MatMul(m.tc, tensor.F32Mat(in, N, m.ta), m.tb, out)
		d := f32(dw)
		for i, v := range m.tc {
			d[i] += v
		}
		return
	}
	m.parallel(out, func(r int) {
		d := dw[r*in : (r+1)*in]
		for t := range N {
			g := dy[t*out+r]
			if g == 0 {
				continue
			}
			xt := x[t*in : (t+1)*in]
			for c := range d {
				d[c] += g * xt[c]
			}
		}
	})
}
