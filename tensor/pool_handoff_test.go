package tensor

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Tests of the pool's hand-off protocol (pool.go): jobs a worker joins
// late are not waited for, idle workers park, Close leaves no goroutine,
// and results stay complete and bit-identical under random gaps between
// jobs, several pools at once and more workers than cores.

// TestPoolCallerDoesNotWaitForAbsentWorker: a job whose workers never
// turn up (here: no worker goroutine runs at all) completes on the caller
// alone, and a worker arriving after the job closed cannot enter it. Under
// the old protocol the caller waited for all Threads-1 workers to see every
// job, so this run would block.
func TestPoolCallerDoesNotWaitForAbsentWorker(t *testing.T) {
	s := &pool{n: 3, done: make(chan struct{}, 1), scratch: make([]workerScratch, 3), waitBudget: spinBudget{d: spinMax}}
	s.cond.L = &s.mu
	out := make([]int, 100)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range 3 {
			s.fr.n, s.fr.chunk, s.fr.job = len(out), 7, RangeFunc(func(lo, hi, _ int) {
				for i := lo; i < hi; i++ {
					out[i]++
				}
			})
			s.fr.next.Store(0)
			s.run(&s.fr)
		}
	}()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("run waited for workers that never joined")
	}
	for i, v := range out {
		if v != 3 {
			t.Fatalf("item %d ran %d times, want 3", i, v)
		}
	}
	if s.enter(s.gen.Load()) {
		t.Error("a worker entered a closed job")
	}
	if st := s.stats; st.Dispatches != 3 || st.Parks != 0 {
		t.Errorf("stats %+v: want 3 dispatches, no park", st)
	}
}

// TestPoolEnterLeave checks the job state machine: workers enter only the
// current open job, the caller closing sees who is inside, and only the
// last worker to leave a closed job sends the done token — once.
func TestPoolEnterLeave(t *testing.T) {
	s := &pool{n: 3, done: make(chan struct{}, 1)}
	const g = 5
	s.state.Store(g << 32)
	if s.enter(g - 1) {
		t.Fatal("entered a superseded generation")
	}
	if !s.enter(g) {
		t.Fatal("could not enter the open job")
	}
	s.leave() // the last one out, but before close: no token
	if len(s.done) != 0 {
		t.Fatal("a worker leaving an open job sent the done token")
	}
	if !s.enter(g) || !s.enter(g) {
		t.Fatal("could not enter the open job")
	}
	s.leave()
	if st := s.state.Or(stClosed); st&stInside != 1 {
		t.Fatalf("closing saw %d workers inside, want 1", st&stInside)
	}
	if s.enter(g) {
		t.Fatal("entered a closed job")
	}
	s.leave()
	if len(s.done) != 1 {
		t.Fatal("the last worker leaving a closed job did not send the done token")
	}
	<-s.done
	// A job closed with nobody inside sends nothing.
	s.state.Store((g + 1) << 32)
	if st := s.state.Or(stClosed); st&stInside != 0 || len(s.done) != 0 {
		t.Fatalf("empty job: %d inside, %d tokens", st&stInside, len(s.done))
	}
}

// TestPoolIdleWorkersPark: workers poll briefly after a burst of jobs,
// then park — an idle pool burns no CPU.
func TestPoolIdleWorkersPark(t *testing.T) {
	for _, th := range []int{2, 3} {
		p := NewPool(th)
		out := make([]int, 4096)
		for range 200 {
			p.For(len(out), 64, RangeFunc(func(lo, hi, _ int) {
				for i := lo; i < hi; i++ {
					out[i]++
				}
			}))
		}
		deadline := time.Now().Add(2 * time.Second) // spinMax is 100 µs; leave room for a loaded machine
		for p.sleepers.Load() != int32(th-1) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := p.sleepers.Load(); got != int32(th-1) {
			t.Errorf("threads=%d: %d of %d workers parked 2 s after the last job", th, got, th-1)
		}
		p.Close()
	}
}

// TestAdaptBudget: a spin budget follows the length of the waits, within
// [spinMin, spinMax]: halved by waits longer than spinMax, doubled by
// shorter ones — also when the budget had run out and the waiter parked
// (a 30 µs gap with a 4 µs budget), which is what gets a budget out of
// spinMin again once the gaps are short — and held at spinMin for holdFor
// after a wait longer than sliceWait.
func TestAdaptBudget(t *testing.T) {
	now := time.Now()
	b := spinBudget{d: spinMax}
	for range 20 {
		b.adapt(2*spinMax, now)
	}
	if b.d != spinMin {
		t.Errorf("after 20 long waits: %v, want %v", b.d, spinMin)
	}
	b.adapt(30*time.Microsecond, now) // longer than the budget: the waiter parked
	if b.d != 2*spinMin {
		t.Errorf("after a 30 µs wait: %v, want %v", b.d, 2*spinMin)
	}
	for range 20 {
		b.adapt(time.Microsecond, now)
	}
	if b.d != spinMax {
		t.Errorf("after 20 short waits: %v, want %v", b.d, spinMax)
	}
	b.adapt(spinMax, now)
	if b.d != spinMax {
		t.Errorf("after a wait of spinMax: %v, want %v", b.d, spinMax)
	}
	b.adapt(spinMax+time.Microsecond, now)
	if b.d != spinMax/2 {
		t.Errorf("after a wait just over spinMax: %v, want %v", b.d, spinMax/2)
	}

	// A time-slice-long wait: spinMin, and short waits do not raise it
	// until holdFor has passed.
	b.adapt(sliceWait+time.Microsecond, now)
	for i := range 20 {
		b.adapt(time.Microsecond, now.Add(holdFor*time.Duration(i)/20))
	}
	if b.d != spinMin {
		t.Errorf("short waits within holdFor of a %v wait: %v, want %v", sliceWait, b.d, spinMin)
	}
	b.adapt(time.Microsecond, now.Add(holdFor+time.Microsecond))
	if b.d != 2*spinMin {
		t.Errorf("a short wait after holdFor: %v, want %v", b.d, 2*spinMin)
	}
}

// TestPoolCloseLeavesNoGoroutine: Close stops every worker, parked or
// polling, for any thread count (also more than the CPUs).
func TestPoolCloseLeavesNoGoroutine(t *testing.T) {
	base := runtime.NumGoroutine()
	for _, th := range []int{1, 2, 3, 2*runtime.NumCPU() + 3} {
		for _, idle := range []time.Duration{0, 5 * time.Millisecond} {
			p := NewPool(th)
			p.For(1000, 1, RangeFunc(func(lo, hi, _ int) {}))
			time.Sleep(idle) // 0: workers still polling; 5 ms: parked
			p.Close()
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Errorf("%d goroutines after closing the pools, %d before", n, base)
	}
}

// TestPoolStress runs For and MatMul jobs back to back with random gaps
// (none, a short spin, sleeps that let the workers park) on pools of 1, 2,
// 3 and more workers than CPUs, several pools at once as the engine's
// concurrent models would: every For item runs exactly once on a worker
// index below Threads, and every product equals the one-goroutine result
// bit for bit. Run it with -race too.
func TestPoolStress(t *testing.T) {
	jobs := 300
	if testing.Short() || raceEnabled {
		jobs = 80
	}
	rng := rand.New(rand.NewPCG(3, 4))
	w := anyMat(t, rng, Q4_K, 96, 256)
	wf := anyMat(t, rng, F16, 80, 256)
	x := randVec(rng, 5*256)
	want := make([]float32, 5*96)
	wantF := make([]float32, 5*80)
	var nilPool *Pool
	nilPool.MatMul(want, w, x, 5)
	nilPool.MatMul(wantF, wf, x, 5)
	threads := []int{1, 2, 3, 2*runtime.NumCPU() + 1}
	var wg sync.WaitGroup
	errs := make(chan string, len(threads))
	for pi, th := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(pi), 77))
			p := NewPool(th)
			defer p.Close()
			f := &slowCounter{forCounter{out: make([]int, 777), busy: make([]atomic.Bool, th)}}
			got := make([]float32, 5*96)
			gotF := make([]float32, 5*80)
			for j := range jobs {
				switch rng.IntN(4) {
				case 0, 1:
					clear(f.out)
					p.For(len(f.out), 1+rng.IntN(40), f)
					for _, v := range f.out {
						if v != 1 {
							errs <- "For item ran more or less than once"
							return
						}
					}
				case 2:
					n := 1 + rng.IntN(5)
					p.MatMul(got, w, x, n)
					for i := range n * 96 {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							errs <- "Q4_K MatMul differs from the one-goroutine result"
							return
						}
					}
				case 3:
					n := 1 + rng.IntN(5)
					p.MatMul(gotF, wf, x, n)
					for i := range n * 80 {
						if math.Float32bits(gotF[i]) != math.Float32bits(wantF[i]) {
							errs <- "F16 MatMul differs from the one-goroutine result"
							return
						}
					}
				}
				switch g := rng.IntN(10); {
				case g < 5: // back to back
				case g < 8: // a serial gap of a few microseconds
					t0 := time.Now()
					for time.Since(t0) < time.Duration(rng.IntN(30))*time.Microsecond {
					}
				default: // long enough for the workers to park
					time.Sleep(time.Duration(rng.IntN(400)) * time.Microsecond)
				}
				if j%50 == 0 {
					if st := p.Stats(); th > 1 && st.Joins > st.Dispatches*uint64(th-1) {
						errs <- "more joins than dispatched places"
						return
					}
				}
			}
			if f.bad.Load() {
				errs <- "worker index out of range or reused concurrently"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// slowCounter is a forCounter whose background workers take ~20 µs per
// range, so that they are often still inside a job when the caller runs
// out of chunks and closes it.
type slowCounter struct{ forCounter }

func (f *slowCounter) Range(lo, hi, w int) {
	if w != 0 {
		t0 := time.Now()
		for time.Since(t0) < 20*time.Microsecond {
		}
	}
	f.forCounter.Range(lo, hi, w)
}
