package train

import "nanoserve/tensor"

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
	pool    *tensor.Pool // every parallel loop runs on it (tensor.Pool.For); MatMul only for float32
	f32     bool         // T is float32
	ta, tb  []float32    // transpose scratch
	tc      []float32    // product scratch
}

func newMathOps[T Float](threads int) *mathOps[T] {
	threads = max(threads, 1)
	m := &mathOps[T]{threads: threads, pool: tensor.NewPool(threads)}
	var z T
	_, m.f32 = any(z).(float32)
	return m
}

func (m *mathOps[T]) close() { m.pool.Close() }

// rows runs fn over [0, n) split into one contiguous range per worker:
// range k is [k·n/w, (k+1)·n/w) and fn receives k as its slot. The split
// depends only on n and the thread count, and each slot is one range, so
// per-slot partial sums reduce deterministically whichever worker ran it.
func (m *mathOps[T]) rows(n int, fn func(lo, hi, slot int)) {
	w := min(m.threads, n)
	if w <= 1 {
		fn(0, n, 0)
		return
	}
	m.pool.For(w, 1, tensor.RangeFunc(func(k0, k1, _ int) {
		for k := k0; k < k1; k++ {
			fn(k*n/w, (k+1)*n/w, k)
		}
	}))
}

// add sets dst[i] += src[i], split over the workers.
func (m *mathOps[T]) add(dst, src []T) {
	m.rows(len(dst)/1024+1, func(lo, hi, _ int) {
		lo, hi = lo*1024, min(hi*1024, len(dst))
		d, s := dst[lo:hi], src[lo:hi]
		for i := range d {
			d[i] += s[i]
		}
	})
}

// transpose writes src (r, c) transposed into dst (c, r), split over the
// workers by blocks of source rows.
func (m *mathOps[T]) transpose(dst, src []float32, r, c int) {
	const bs = 8
	m.rows((r+bs-1)/bs, func(lo, hi, _ int) {
		transpose(dst, src, r, c, lo*bs, min(hi*bs, r))
	})
}

// parallel runs fn(job) for job in [0, n) on the workers.
func (m *mathOps[T]) parallel(n int, fn func(job int)) {
	m.parallelW(n, func(job, _ int) { fn(job) })
}

// parallelW is parallel that also passes the worker index (< threads), for
// per-worker scratch; jobs are claimed one at a time.
func (m *mathOps[T]) parallelW(n int, fn func(job, worker int)) {
	m.pool.For(n, 1, tensor.RangeFunc(func(lo, hi, w int) {
		for j := lo; j < hi; j++ {
			fn(j, w)
		}
	}))
}

func f32[T Float](s []T) []float32 { return any(s).([]float32) }

// matmul sets dst (N, out) = x (N, in) · Wᵀ, W (out, in).
func (m *mathOps[T]) matmul(dst, w, x []T, N, out, in int) {
	if m.f32 {
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
	m.add(dst[:N*out], *tmp)
}

// transpose writes rows [r0, r1) of src (rows, cols) transposed into dst
// (cols, rows).
func transpose(dst, src []float32, rows, cols, r0, r1 int) {
	transposeStrided(dst[r0:], rows, src[r0*cols:], cols, r1-r0, cols)
}

// transposeStrided writes the (rows, cols) block of src, row stride lds,
// transposed into dst, row stride ldd: dst[c·ldd+r] = src[r·lds+c]. 8×8
// tiles through fixed-size array views (no per-element bounds checks; eight
// destination rows in flight, which the 8-way L1 holds even when the row
// stride is a multiple of 4 KiB), then the ragged edges element by element.
func transposeStrided(dst []float32, ldd int, src []float32, lds, rows, cols int) {
	const bs = 8
	c8 := cols &^ (bs - 1)
	r := 0
	for ; r+bs <= rows; r += bs {
		for c := 0; c < c8; c += bs {
			s0 := (*[bs]float32)(src[(r+0)*lds+c:])
			s1 := (*[bs]float32)(src[(r+1)*lds+c:])
			s2 := (*[bs]float32)(src[(r+2)*lds+c:])
			s3 := (*[bs]float32)(src[(r+3)*lds+c:])
			s4 := (*[bs]float32)(src[(r+4)*lds+c:])
			s5 := (*[bs]float32)(src[(r+5)*lds+c:])
			s6 := (*[bs]float32)(src[(r+6)*lds+c:])
			s7 := (*[bs]float32)(src[(r+7)*lds+c:])
			for j := range bs {
				d := (*[bs]float32)(dst[(c+j)*ldd+r:])
				d[0], d[1], d[2], d[3] = s0[j], s1[j], s2[j], s3[j]
				d[4], d[5], d[6], d[7] = s4[j], s5[j], s6[j], s7[j]
			}
		}
		for i := r; i < r+bs; i++ {
			for c := c8; c < cols; c++ {
				dst[c*ldd+i] = src[i*lds+c]
			}
		}
	}
	for ; r < rows; r++ {
		for c := range cols {
			dst[c*ldd+r] = src[r*lds+c]
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
	if m.f32 {
		m.ta = growF(m.ta, out*in)
		m.transpose(m.ta, f32(w), out, in)
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
	if m.f32 {
		m.ta = growF(m.ta, in*N)
		m.tb = growF(m.tb, out*N)
		m.tc = growF(m.tc, out*in)
		m.transpose(m.ta, f32(x), N, in)
		m.transpose(m.tb, f32(dy), N, out)
		m.pool.MatMul(m.tc, tensor.F32Mat(in, N, m.ta), m.tb, out)
		m.add(dw, any(m.tc).([]T))
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
