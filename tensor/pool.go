package tensor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a persistent set of worker goroutines that run the kernels of one
// caller at a time.
//
// Why persistent: a decode step of a 22-layer model runs ~150 matrix
// products of a few hundred microseconds each. Starting a goroutine per
// chunk per product costs a few microseconds of scheduler work each time and
// leaves cores idle while the runtime wakes them; instead the workers are
// started once (NewPool) and woken per job:
//
//   - the caller publishes the job and bumps a generation counter;
//   - a worker that finished its previous job recently is still spinning on
//     that counter (spinIters loads, tens of microseconds) and starts at once;
//   - a worker that has been idle longer is parked on a sync.Cond and is
//     woken by a Broadcast (the caller only takes the lock when someone
//     sleeps);
//   - the caller works too (it is worker 0), then waits for the others the
//     same way: spin on the pending count, then block on a channel.
//
// Work inside a job is split dynamically: workers claim chunks (aligned
// groups of rows) from an atomic counter until none are left, so a worker
// whose core is busy with something else simply claims fewer chunks.
//
// A Pool is safe for use by one caller at a time: MatMul and the other
// kernels must not be called concurrently on the same Pool (use one Pool per
// concurrent caller). A nil *Pool is valid and runs everything on the
// calling goroutine. Steady-state calls allocate nothing, nil Pool
// included: scratch buffers are grown on first use and kept (a nil Pool
// borrows a one-worker pool's scratch from a process-wide cache).
//
// The pool is the process's one parallel mechanism: MatMul splits matrix
// products over it and For runs any other chunked loop (attention, norms,
// RoPE in model; the training loop's element-wise passes) on the same
// workers, so exactly one set of goroutines spins per model.
type Pool struct {
	*pool
}

type pool struct {
	n int // workers including the caller

	gen      atomic.Uint64 // bumped once per job
	pending  atomic.Int32  // background workers still running the current job
	sleepers atomic.Int32  // background workers parked on cond
	closed   atomic.Bool
	mu       sync.Mutex
	cond     sync.Cond
	done     chan struct{} // the last background worker to finish sends one token
	job      task          // the current job, valid while pending > 0

	scratch []workerScratch // per worker
	mm      matJob          // the MatMul job, reused (no allocation per call)
	sh      sharedJob       // the MatMulShared job, reused
	cl      claims          // the matrix-vector jobs' chunks, one region per worker (claims.go)
	fr      forTask         // the For job, reused
	shared  sharedScratch   // buffers prepared by the caller, read by all workers
	acts    quantizedActs   // x quantized for a quantized matrix-vector product

	stats PoolStats // the caller's counters (Stats); written by the caller only
}

// PoolStats are a Pool's hand-off counters since NewPool or ResetStats:
// what a job costs beyond its arithmetic. At small shapes (a 110M model's
// decode step: ~60 products of tens of microseconds) the hand-offs are a
// visible share of a step: Wait/Busy is the share of the dispatched time
// the caller spent idle at the end-of-job barrier (the other workers
// still computing, or still being woken), Wakes how often a parked worker
// had to be woken through the lock.
type PoolStats struct {
	Dispatches uint64        // jobs handed to the workers (MatMul, For and a nil Pool's inline calls excluded)
	Wakes      uint64        // dispatches that found a worker parked and broadcast to it
	Busy       time.Duration // time from publishing a job to its end, summed
	Wait       time.Duration // of Busy, the caller's time waiting for the others after its own share
}

// Stats returns the pool's counters (zero for a nil or one-worker Pool).
// Like the kernels, it must not run concurrently with the pool's caller.
func (p *Pool) Stats() PoolStats {
	if p == nil {
		return PoolStats{}
	}
	return p.stats
}

// ResetStats zeroes the counters.
func (p *Pool) ResetStats() {
	if p != nil {
		p.stats = PoolStats{}
	}
}

// task is a job run by every worker; run claims its own pieces of work.
type task interface {
	run(worker int)
}

// spinIters is how many times an idle worker (or the waiting caller) polls
// before parking. ~20k atomic loads is on the order of 10-40 µs: longer than
// the gap between two matrix products of a decode step, far shorter than
// the gap between two requests.
const spinIters = 20000

// NewPool returns a pool of n workers (n < 1 means 1). The calling goroutine
// is one of them, so n-1 goroutines are started. Call Close to stop them
// (a Pool that becomes unreachable is closed automatically).
func NewPool(n int) *Pool {
	if n < 1 {
		n = 1
	}
	s := &pool{n: n, done: make(chan struct{}, 1), scratch: make([]workerScratch, n)}
	s.cond.L = &s.mu
	for i := 1; i < n; i++ {
		go s.worker(i)
	}
	p := &Pool{s}
	runtime.AddCleanup(p, func(s *pool) { s.close() }, s)
	return p
}

// Threads is the number of workers.
func (p *Pool) Threads() int {
	if p == nil {
		return 1
	}
	return p.n
}

// Close stops the background workers. The Pool must not be used afterwards
// except through Threads. Close is idempotent.
func (p *Pool) Close() {
	if p != nil {
		p.close()
	}
}

func (s *pool) close() {
	if s.closed.Swap(true) {
		return
	}
	s.gen.Add(1)
	s.mu.Lock()
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *pool) worker(id int) {
	var seen uint64 // not s.gen.Load(): a job may be published before this goroutine runs
	for {
		// Wait for a new generation: spin, then park.
		g := s.gen.Load()
		for i := 0; g == seen && i < spinIters; i++ {
			g = s.gen.Load()
		}
		if g == seen {
			s.mu.Lock()
			s.sleepers.Add(1)
			for g = s.gen.Load(); g == seen; g = s.gen.Load() {
				s.cond.Wait()
			}
			s.sleepers.Add(-1)
			s.mu.Unlock()
		}
		seen = g
		if s.closed.Load() {
			return
		}
		s.job.run(id)
		if s.pending.Add(-1) == 0 {
			s.done <- struct{}{}
		}
	}
}

// run executes t on every worker (the caller is worker 0) and returns when
// all are done.
func (s *pool) run(t task) {
	if s.n == 1 || s.closed.Load() {
		for i := 0; i < s.n; i++ { // a closed pool still computes, inline
			t.run(i)
		}
		return
	}
	t0 := time.Now()
	s.job = t
	s.pending.Store(int32(s.n - 1))
	s.gen.Add(1) // publishes job (atomics are sequentially consistent)
	if s.sleepers.Load() > 0 {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
		s.stats.Wakes++
	}
	t.run(0)
	t1 := time.Now()
	for i := 0; i < spinIters && s.pending.Load() != 0; i++ {
	}
	<-s.done
	s.job = nil
	t2 := time.Now()
	s.stats.Dispatches++
	s.stats.Busy += t2.Sub(t0)
	s.stats.Wait += t2.Sub(t1)
}

// RangeJob is work over the items [0, n) of a For call: Range computes
// items [lo, hi) on worker (0 ≤ worker < Threads()). A worker runs one
// Range call at a time, so per-worker scratch indexed by worker needs no
// locking. Range must not call back into the same Pool.
type RangeJob interface {
	Range(lo, hi, worker int)
}

// RangeFunc adapts a function to RangeJob. A closure escapes to the heap;
// hot paths pass a pointer to a long-lived struct instead.
type RangeFunc func(lo, hi, worker int)

// Range calls f(lo, hi, worker).
func (f RangeFunc) Range(lo, hi, worker int) { f(lo, hi, worker) }

// For runs job over [0, n) on the pool's workers (the caller is worker 0):
// workers claim chunks of chunk items (chunk < 1 means 1) from an atomic
// counter until none are left, so uneven items and a busy core even out.
// It returns when every item is done. A nil Pool, a one-worker Pool and a
// job of a single chunk run inline as worker 0 in one Range(0, n, 0)
// call. For allocates nothing: the claim counter lives in the Pool (a
// pointer job in the interface does not escape).
//
// Which worker computes which chunk varies from run to run; a result that
// must be bit-identical (per-worker partial sums) should index its
// partials by chunk, not by worker.
func (p *Pool) For(n, chunk int, job RangeJob) {
	if n <= 0 {
		return
	}
	chunk = max(chunk, 1)
	if p == nil || p.n == 1 || chunk >= n {
		job.Range(0, n, 0)
		return
	}
	f := &p.fr
	f.n, f.chunk, f.job = n, chunk, job
	f.next.Store(0)
	p.pool.run(f)
	f.job = nil
}

// forTask is the task behind For; one lives in each pool and is reused.
type forTask struct {
	n, chunk int
	next     atomic.Int64
	job      RangeJob
}

func (f *forTask) run(worker int) {
	for {
		lo := int(f.next.Add(int64(f.chunk))) - f.chunk
		if lo >= f.n {
			return
		}
		f.job.Range(lo, min(lo+f.chunk, f.n), worker)
	}
}
