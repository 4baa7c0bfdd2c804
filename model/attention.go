package model

import (
	"math"
	"sync/atomic"

	"nanoserve/kvcache"
)

// Attention over the paged cache, and the model's own workers.
//
// For token i (sequence s, position pos) and query head h of group
// g = h / (Heads/KVHeads), attention is
//
//	score[p] = q_h · K_g[p] / √HeadDim                 start ≤ p ≤ pos
//	a_h      = Σ_p softmax(score)[p] · V_g[p]
//
// where K_g[p] is the HeadDim-wide slice at offset g·HeadDim of the cache
// row Slot(s, p). Within a cache block the rows of consecutive positions
// are consecutive (stride kv_dim), so both loops run block by block over
// strided runs of up to BlockSize rows: attnScores (four rows per step,
// q loaded once for the four) and attnAccum (the 64-wide output held in
// registers over the whole run). Each (token, head) needs only its
// (pos+1)-float score row, so a worker's scratch is O(positions) and a
// long prompt never materialises an (n × n) matrix.
//
// Work is split by (token, head) tasks, task = i·Heads + h, claimed in
// chunks from an atomic counter by the model's workers (the caller is
// worker 0), so a prefill's causal imbalance (later tokens attend over
// more positions) and a busy core both even out. Consecutive tasks are
// heads of one group over the same K/V rows, which then come from L1/L2.

// jobKind selects what a parallel job computes.
type jobKind int

const (
	jobAttn   jobKind = iota // attendRange over (token, head) tasks
	jobNorm                  // norm of rows
	jobSwiGLU                // swiglu over elements
	jobGELU                  // geluTanh over elements
	jobRope                  // RoPE of q and k, per token
)

// parJob is one parallel job; it lives in the Model and is reused.
type parJob struct {
	kind     jobKind
	n, chunk int // work items [0, n) claimed chunk at a time
	next     atomic.Int64

	b *Batch // jobAttn, jobRope
	c *kvcache.Cache
	l int

	o, x, g, bias []float32 // jobNorm: rows of o = norm(x); jobSwiGLU: x = swiglu(x, o); jobGELU: x; jobRope: q = x, k = o
}

// run claims and computes chunks until none are left.
func (j *parJob) run(m *Model, worker int) {
	for {
		lo := int(j.next.Add(int64(j.chunk))) - j.chunk
		if lo >= j.n {
			return
		}
		hi := min(lo+j.chunk, j.n)
		switch j.kind {
		case jobAttn:
			m.attendRange(j.b, j.c, j.l, lo, hi, m.ws.scores[worker])
		case jobNorm:
			d := m.Dim
			m.normRows(j.o[lo*d:hi*d], j.x[lo*d:hi*d], j.g, j.bias)
		case jobSwiGLU:
			swiglu(j.x[lo:hi], j.o[lo:hi])
		case jobGELU:
			for i, h := range j.x[lo:hi] {
				j.x[lo+i] = geluTanh(h)
			}
		case jobRope:
			m.ropeTokens(j.x, j.o, lo, hi)
		}
	}
}

// parallel runs the job set up in m.aw.job over [0, n) in chunks on up to
// Threads workers; it returns when all are done.
func (m *Model) parallel(kind jobKind, n, chunk int) {
	j := &m.aw.job
	j.kind, j.n, j.chunk = kind, n, max(1, chunk)
	j.next.Store(0)
	workers := min(m.pool.Threads(), (n+j.chunk-1)/j.chunk)
	if workers > 1 {
		m.aw.start(m, workers-1)
		for i := 1; i < workers; i++ {
			m.aw.wake[i-1] <- i
		}
	}
	j.run(m, 0)
	for i := 1; i < workers; i++ {
		<-m.aw.done
	}
	j.b, j.c, j.o, j.x, j.g, j.bias = nil, nil, nil, nil, nil, nil
}

// attnWorkers are goroutines started on first use and stopped by Close;
// waking them through channels allocates nothing.
type attnWorkers struct {
	wake []chan int // one per background worker; receives the worker index
	done chan struct{}
	job  parJob
}

func (a *attnWorkers) start(m *Model, n int) {
	for len(a.wake) < n {
		if a.done == nil {
			a.done = make(chan struct{}, 64)
		}
		ch := make(chan int, 1)
		a.wake = append(a.wake, ch)
		go func() {
			for w := range ch {
				a.job.run(m, w)
				a.done <- struct{}{}
			}
		}()
	}
}

func (a *attnWorkers) stop() {
	for _, ch := range a.wake {
		close(ch)
	}
	a.wake = nil
}

// Below these many multiply-adds a job runs on the calling goroutine:
// waking a worker costs microseconds.
const (
	parAttnMin = 1 << 16
	parRowsMin = 1 << 15
)

// attention computes ws.att (n, q_dim) for layer l: each token's query
// heads attend over its sequence's cached positions [start, pos].
func (m *Model) attention(b *Batch, c *kvcache.Cache, l, n int) {
	tasks := n * m.Heads
	work := 0
	for i := range n {
		work += b.Pos[i] + 1
	}
	work *= m.Heads * m.HeadDim
	if m.pool.Threads() <= 1 || work < parAttnMin {
		m.attendRange(b, c, l, 0, tasks, m.ws.scores[0])
		return
	}
	// Chunks of whole groups (heads sharing K/V rows), about 16 per worker.
	group := m.Heads / m.KVHeads
	chunk := max(1, tasks/(16*m.pool.Threads())/group) * group
	j := &m.aw.job
	j.b, j.c, j.l = b, c, l
	m.parallel(jobAttn, tasks, chunk)
}

// attendRange handles the (token, head) tasks [lo, hi), task = i·Heads + h.
func (m *Model) attendRange(b *Batch, c *kvcache.Cache, l, lo, hi int, scores []float32) {
	hd, qd, kvd := m.HeadDim, m.QDim(), m.KVDim()
	group := m.Heads / m.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	kc, vc := c.K[l], c.V[l]
	bs := c.BlockSize
	for t := lo; t < hi; t++ {
		i, h := t/m.Heads, t%m.Heads
		s, pos := b.Seq[i], b.Pos[i]
		start := 0
		if m.SlidingWindow > 0 {
			start = max(0, pos-m.SlidingWindow+1)
		}
		q := m.ws.q[i*qd+h*hd : i*qd+(h+1)*hd]
		ko := (h / group) * hd // offset of this head's kv group in a row
		sc := scores[:pos+1-start]
		// Runs of consecutive rows within one block.
		for p := start; p <= pos; {
			r := p % bs
			cnt := min(bs-r, pos+1-p)
			row := (s.Blocks[p/bs]*bs+r)*kvd + ko
			attnScores(sc[p-start:p-start+cnt], q, kc[row:], kvd, cnt, scale)
			p += cnt
		}
		sum := softmaxExp(sc)
		out := m.ws.att[i*qd+h*hd : i*qd+(h+1)*hd]
		clear(out)
		for p := start; p <= pos; {
			r := p % bs
			cnt := min(bs-r, pos+1-p)
			row := (s.Blocks[p/bs]*bs+r)*kvd + ko
			attnAccum(out, vc[row:], kvd, sc[p-start:p-start+cnt])
			p += cnt
		}
		inv := 1 / sum
		for j := range out {
			out[j] *= inv
		}
	}
}

// attnScoresGo is attnScores in plain Go.
func attnScoresGo(out, q, k []float32, stride, n int, scale float32) {
	hd := len(q)
	for i := range n {
		kr := k[i*stride : i*stride+hd]
		var s0, s1, s2, s3 float32
		c := 0
		for ; c+4 <= hd; c += 4 {
			s0 += q[c] * kr[c]
			s1 += q[c+1] * kr[c+1]
			s2 += q[c+2] * kr[c+2]
			s3 += q[c+3] * kr[c+3]
		}
		for ; c < hd; c++ {
			s0 += q[c] * kr[c]
		}
		out[i] = ((s0 + s1) + (s2 + s3)) * scale
	}
}

// attnAccumGo is attnAccum in plain Go.
func attnAccumGo(out, v []float32, stride int, a []float32) {
	hd := len(out)
	for i, ai := range a {
		vr := v[i*stride : i*stride+hd]
		for c, x := range vr {
			out[c] += ai * x
		}
	}
}
