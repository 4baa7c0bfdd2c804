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
//   - a worker that finished its previous job recently is still polling
//     that counter (for its spin budget, see below) and starts at once;
//   - a worker that has been idle longer is parked on a sync.Cond and is
//     woken by a Broadcast (the caller only takes the lock when someone
//     sleeps);
//   - the caller works too (it is worker 0); when it runs out of work to
//     claim it closes the job and waits, the same way (poll, then block on
//     a channel), for the workers that joined it and are still computing —
//     never for one that has not joined yet.
//
// A worker joins a job by entering it (an atomic count tagged with the
// job's generation) and can enter only while the job is open. The caller
// closes the job when its own task.run returns, which a task does only
// when no work is left to claim, so a worker that arrives after that
// would find nothing to do: it is not waited for. Before, the caller
// waited for every worker to see every job; a worker that was parked, or
// whose thread the OS had descheduled, made the caller wait for its
// wake-up even when the caller had meanwhile computed the whole job (a
// 110M decode step's products are tens of microseconds, a wake-up on a
// loaded VM about 100). Stats.Joins counts the workers that took part.
//
// Spin, then park, with an adaptive budget. A wake-up through the lock
// and the Go scheduler costs tens of microseconds on a VM, longer than the
// serial gaps between two products of a small model's decode step
// (attention, norms, the KV store); with a fixed 20k-load spin (5-15 µs on
// Zen 5) every one of a 110M decode step's 53 dispatches found its worker
// parked. Polling longer fixes that on idle cores but is ruinous when the
// cores are oversubscribed (more runnable threads than CPUs): a poller
// then holds the CPU that the thread it waits for needs, and a 110M
// decode step measured 2-4× slower with 50-500 µs spins. So each waiter
// (every worker, and the caller at the end-of-job barrier) keeps its own
// budget, measured in time, and sets it from how long its waits actually
// were: a wait shorter than spinMax (which covers a decode step's gaps)
// doubles the budget, whether it ended while polling or after parking —
// polling a little longer would have caught it — and a longer one halves
// it (down to spinMin). A parked worker measures its wait up to the job's
// publication, not its own wake-up, which comes tens of microseconds
// later. (Halving on every park, as before, was a trap: once a budget
// had shrunk below the typical gap, every wait parked, nothing doubled it
// again, and a TinyLlama decode step kept its worker joining each of its
// ~100 jobs a wake-up late, 5-30% of its decode rate.) On free cores the
// waits are short, the budgets stay at spinMax and nobody parks inside a
// forward pass; on oversubscribed ones the thread waited for is
// descheduled for whole time slices, and a wait that long (sliceWait)
// drops the budget to spinMin and holds it there for a while (holdFor),
// so the pool parks almost at once, as a shared core needs. Between
// requests a worker polls at most spinMax, then parks and burns no CPU.
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
	pub      atomic.Int64  // when the current job was published, ns since epoch (a parked worker's wait ends there)
	state    atomic.Uint64 // the current job: generation (low 32 bits) << 32 | stClosed | workers inside
	joins    atomic.Uint64 // background workers that entered a job (Stats.Joins)
	sleepers atomic.Int32  // background workers parked on cond
	closed   atomic.Bool
	mu       sync.Mutex
	cond     sync.Cond
	done     chan struct{} // after close, the last worker to leave the job sends one token
	job      task          // the current job, valid while it is open or a worker is inside

	scratch []workerScratch // per worker
	mm      matJob          // the MatMul job, reused (no allocation per call)
	sh      sharedJob       // the MatMulShared job, reused
	cl      claims          // the matrix-vector jobs' chunks, one region per worker (claims.go)
	fr      forTask         // the For job, reused
	shared  sharedScratch   // buffers prepared by the caller, read by all workers
	acts    quantizedActs   // x quantized for a quantized matrix-vector product

	waitBudget spinBudget // the caller's spin budget at the end-of-job barrier
	joins0     uint64     // joins at the last ResetStats

	stats PoolStats // the caller's counters (Stats); written by the caller only
}

// PoolStats are a Pool's hand-off counters since NewPool or ResetStats:
// what a job costs beyond its arithmetic. At small shapes (a 110M model's
// decode step: ~50 products of tens of microseconds) the hand-offs are a
// visible share of a step: Wait/Busy is the share of the dispatched time
// the caller spent idle at the end-of-job barrier (workers that joined
// still computing), Wakes how often a parked worker had to be woken
// through the lock, Parks how often the caller's poll at the barrier
// timed out, Joins/(Dispatches·(Threads-1)) the share of places in jobs
// that workers took (low when their cores are busy with other work).
type PoolStats struct {
	Dispatches uint64        // jobs handed to the workers (MatMul, For and a nil Pool's inline calls excluded)
	Wakes      uint64        // dispatches that found a worker parked and broadcast to it
	Parks      uint64        // end-of-job barriers where the caller stopped polling and blocked
	Joins      uint64        // background workers that entered a job (at most Dispatches·(Threads-1))
	Busy       time.Duration // time from publishing a job to its end, summed
	Wait       time.Duration // of Busy, the caller's time waiting for the others after its own share
}

// Stats returns the pool's counters (zero for a nil or one-worker Pool).
// Like the kernels, it must not run concurrently with the pool's caller.
func (p *Pool) Stats() PoolStats {
	if p == nil {
		return PoolStats{}
	}
	st := p.stats
	st.Joins = p.joins.Load() - p.joins0
	return st
}

// ResetStats zeroes the counters.
func (p *Pool) ResetStats() {
	if p != nil {
		p.stats = PoolStats{}
		p.joins0 = p.joins.Load()
	}
}

// task is a job run by every worker that joins it; run claims pieces of
// work until none are left and only then returns (the caller's return
// closes the job: see Pool).
type task interface {
	run(worker int)
}

// The bounds of a waiter's spin budget (see Pool). spinMax covers the
// serial gaps of a decode step (a 110M model's attention at short context
// takes tens of microseconds on the caller alone) and is far shorter than
// the gap between two requests; spinMin is what a waiter keeps polling
// when its waits keep timing out. A wait longer than sliceWait means the
// thread waited for was descheduled (the cores are oversubscribed, or
// the pool is idle between requests): the budget drops to spinMin and
// stays there for holdFor — under oversubscription such waits recur every
// few time slices, so the pool keeps parking at once, which is what a
// shared core needs (a poller would hold the CPU that the thread it waits
// for is queued for); on free cores they are rare, and the budget grows
// back within a few jobs after holdFor.
const (
	spinMin   = 4 * time.Microsecond
	spinMax   = 100 * time.Microsecond
	sliceWait = 500 * time.Microsecond
	holdFor   = 5 * time.Millisecond
)

// spinBudget is one waiter's spin budget.
type spinBudget struct {
	d    time.Duration // how long the next wait polls before it parks
	hold time.Time     // d does not grow before this time
}

// adapt updates the budget after a wait that lasted waited and ended at
// now: doubled when the wait was at most spinMax (polling would have
// caught it, or did), halved when it was longer, dropped to spinMin and
// held there when it was longer than sliceWait.
func (b *spinBudget) adapt(waited time.Duration, now time.Time) {
	switch {
	case waited > sliceWait:
		b.d, b.hold = spinMin, now.Add(holdFor)
	case waited > spinMax:
		b.d = max(b.d/2, spinMin)
	case now.After(b.hold):
		b.d = min(2*b.d, spinMax)
	}
}

// epoch is the origin of pool.pub's clock (monotonic readings).
var epoch = time.Now()

// spinGen polls g until it differs from old or budget has passed, and
// returns its last value. The clock is read once per 64 loads.
func spinGen(g *atomic.Uint64, old uint64, budget time.Duration) uint64 {
	t0 := time.Now()
	for {
		for range 64 {
			if v := g.Load(); v != old {
				return v
			}
		}
		if time.Since(t0) > budget {
			return g.Load()
		}
	}
}

// spinEmpty polls a job's state until no worker is inside or budget has
// passed, and reports whether the job emptied.
func spinEmpty(st *atomic.Uint64, budget time.Duration) bool {
	t0 := time.Now()
	for {
		for range 64 {
			if st.Load()&stInside == 0 {
				return true
			}
		}
		if time.Since(t0) > budget {
			return st.Load()&stInside == 0
		}
	}
}

// The bits of pool.state below the generation tag.
const (
	stClosed = 1 << 31      // the caller has run out of work: no worker may enter
	stInside = stClosed - 1 // workers inside the job
)

// enter makes the calling worker a participant of job g, if g is still
// the current job and open.
func (s *pool) enter(g uint64) bool {
	for {
		st := s.state.Load()
		if st>>32 != g&(1<<32-1) || st&stClosed != 0 {
			return false
		}
		if s.state.CompareAndSwap(st, st+1) {
			return true
		}
	}
}

// leave ends a worker's part in the current job; the last to leave a
// closed job tells the caller.
func (s *pool) leave() {
	if st := s.state.Add(^uint64(0)); st&stClosed != 0 && st&stInside == 0 {
		s.done <- struct{}{}
	}
}

// NewPool returns a pool of n workers (n < 1 means 1). The calling goroutine
// is one of them, so n-1 goroutines are started. Call Close to stop them
// (a Pool that becomes unreachable is closed automatically).
func NewPool(n int) *Pool {
	if n < 1 {
		n = 1
	}
	s := &pool{n: n, done: make(chan struct{}, 1), scratch: make([]workerScratch, n), waitBudget: spinBudget{d: spinMax}}
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
	budget := spinBudget{d: spinMax}
	for {
		// Wait for a new generation: spin, then park.
		g := s.gen.Load()
		if g == seen {
			t0 := time.Now()
			g = spinGen(&s.gen, seen, budget.d)
			if g != seen {
				now := time.Now()
				budget.adapt(now.Sub(t0), now)
			} else {
				s.mu.Lock()
				s.sleepers.Add(1)
				for g = s.gen.Load(); g == seen; g = s.gen.Load() {
					s.cond.Wait()
				}
				s.sleepers.Add(-1)
				s.mu.Unlock()
				budget.adapt(time.Duration(s.pub.Load()-int64(t0.Sub(epoch))), time.Now())
			}
		}
		seen = g
		if s.closed.Load() {
			return
		}
		if !s.enter(g) {
			continue // closed already (or superseded): nothing left to claim
		}
		s.joins.Add(1)
		s.job.run(id)
		s.leave()
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
	s.pub.Store(int64(t0.Sub(epoch)))
	g := s.gen.Load() + 1  // only the caller (and close) change gen
	s.state.Store(g << 32) // open, nobody inside
	s.gen.Store(g)         // publishes job (atomics are sequentially consistent)
	if s.sleepers.Load() > 0 {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
		s.stats.Wakes++
	}
	t.run(0)
	t1 := time.Now()
	// t.run returned: nothing is left to claim. Close the job and wait for
	// the workers inside it, if any.
	waited := false
	if st := s.state.Or(stClosed); st&stInside != 0 {
		if !spinEmpty(&s.state, s.waitBudget.d) {
			s.stats.Parks++
		}
		<-s.done // sent by the last worker to leave
		waited = true
	}
	s.job = nil
	t2 := time.Now()
	if waited {
		s.waitBudget.adapt(t2.Sub(t1), t2)
	}
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
