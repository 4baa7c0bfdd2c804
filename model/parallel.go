package model

import (
	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// The parallel jobs of a forward pass other than the matrix products
// (attention, norms, activations, RoPE), run on the model's tensor.Pool.

// jobKind selects what a parallel job computes.
type jobKind int

const (
	jobAttn    jobKind = iota // attendRange over (token, KV group) tasks
	jobNorm                   // norm of rows
	jobSwiGLU                 // swiglu over elements
	jobGELU                   // geluTanh over elements
	jobRope                   // RoPE of q and k, per token
	jobGeGLU                  // gelu(x)·o over elements
	jobExperts                // mixture of experts: whole experts of m.moe.active
	jobStore                  // KV cache store of tokens' K and V rows (storeKV)
)

// parJob is one parallel job, a tensor.RangeJob run on the model's pool
// (tensor.Pool.For); it lives in the Model and is reused, so a decode step
// allocates nothing.
type parJob struct {
	m    *Model
	kind jobKind

	b  *Batch         // jobAttn, jobRope
	c  *kvcache.Cache // jobAttn, jobStore
	l  int            // layer; jobStore: cache layer
	lw *layerWeights  // jobRope

	width int // jobSwiGLU, jobGELU, jobGeGLU, jobStore: row width (items are rows)

	o, x, g, bias []float32 // jobNorm: rows of o = norm(x); jobSwiGLU: x = swiglu(x, o); jobGELU: x; jobRope: q = x, k = o; jobStore: K = x, V = o
}

// Range computes the job's items [lo, hi) on worker.
func (j *parJob) Range(lo, hi, worker int) {
	m := j.m
	switch j.kind {
	case jobAttn:
		m.attendRange(j.b, j.c, j.l, lo, hi, m.ws.scores[worker])
	case jobExperts:
		for _, e := range m.moe.active[lo:hi] {
			m.runExpert(j.lw, e, nil)
		}
	case jobNorm:
		d := m.Dim
		m.normRows(j.o[lo*d:hi*d], j.x[lo*d:hi*d], j.g, j.bias)
	case jobSwiGLU:
		// Row by row: every token's row takes the same vector prefix and
		// scalar tail (which agree only to ~1 ulp), whatever the batch.
		w := j.width
		for r := lo; r < hi; r++ {
			tensor.SwiGLU(j.x[r*w:(r+1)*w], j.o[r*w:(r+1)*w])
		}
	case jobGELU:
		w := j.width
		for i, h := range j.x[lo*w : hi*w] {
			j.x[lo*w+i] = geluTanh(h)
		}
	case jobGeGLU:
		w := j.width
		for i, h := range j.x[lo*w : hi*w] {
			j.x[lo*w+i] = geluTanh(h) * j.o[lo*w+i]
		}
	case jobRope:
		m.ropeTokens(j.l, j.lw, j.x, j.o, lo, hi)
	case jobStore:
		w := j.width
		for i := lo; i < hi; i++ {
			j.c.Store(j.l, m.ws.slots[i], j.x[i*w:(i+1)*w], j.o[i*w:(i+1)*w])
		}
	}
}

// parallel runs the job set up in m.job over [0, n) in chunks on the
// model's pool; it returns when all are done.
func (m *Model) parallel(kind jobKind, n, chunk int) {
	j := &m.job
	j.m, j.kind = m, kind
	m.pool.For(n, chunk, j)
	j.b, j.c, j.o, j.x, j.g, j.bias, j.lw = nil, nil, nil, nil, nil, nil, nil
}

// norm normalises each dim-row of x into o: LayerNorm when a bias is given
// (GPT-2), else RMSNorm. Many rows are split over the workers.
func (m *Model) norm(o, x, g, bias []float32) {
	if len(x) < parRowsMin || m.pool.Threads() <= 1 {
		m.normRows(o, x, g, bias)
		return
	}
	j := &m.job
	j.o, j.x, j.g, j.bias = o, x, g, bias
	rows := len(x) / m.Dim
	m.parallel(jobNorm, rows, max(1, rows/(4*m.pool.Threads())))
}

// elementwise applies kind (jobSwiGLU: x = silu(x)·o; jobGELU: x =
// gelu(x)) to all of x, rows of width w (one per token), split over the
// workers by whole rows when it is long, so that a token's values never
// depend on where its row falls in the batch.
func (m *Model) elementwise(kind jobKind, x, o []float32, w int) {
	j := &m.job
	j.x, j.o, j.width = x, o, w
	rows := len(x) / w
	if len(x) < parRowsMin/4 || m.pool.Threads() <= 1 {
		j.m, j.kind = m, kind
		j.Range(0, rows, 0)
		j.x, j.o = nil, nil
		return
	}
	m.parallel(kind, rows, max(1, (1024+w-1)/w, rows/(4*m.pool.Threads())))
}
