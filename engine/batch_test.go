package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/model"
	"nanoserve/sample"
)

// aidreams is the trained 260K-parameter model (context 128): fast enough
// to run many requests per test.
func aidreams(t testing.TB, opts Options) *Engine {
	t.Helper()
	e := newEngine(t, goldenSets[2].model, goldenSets[2].tok, opts)
	t.Cleanup(func() { e.Close() })
	return e
}

// mixedRequests are requests of different prompt lengths, output lengths
// and policies (greedy, seeded hot sampling with top-p, penalties).
func mixedRequests(t testing.TB) []Request {
	t.Helper()
	var reqs []Request
	for i, run := range loadGoldens(t, "aidreams260K") {
		greedy := withMax(sample.Greedy(), 20+7*i)
		greedy.IgnoreEOS = true
		reqs = append(reqs, Request{Prompt: run.Prompt, Policy: greedy})
		hot := withMax(seeded(sample.Defaults(), uint64(100+i)), 30+3*i)
		hot.Temperature, hot.TopP = 1.1, 0.95
		reqs = append(reqs, Request{Prompt: run.Prompt, Policy: hot})
		if i%2 == 0 {
			pen := withMax(seeded(sample.Defaults(), uint64(7*i+1)), 25)
			pen.RepetitionPenalty = 1.3
			reqs = append(reqs, Request{Prompt: run.Prompt + " and more", Policy: pen})
		}
	}
	return reqs
}

// alone runs each request by itself on a fresh engine (nothing else in the
// batch, no prefix cache shared with other requests).
func alone(t testing.TB, reqs []Request) []*Result {
	t.Helper()
	e := aidreams(t, Options{NoPrefixCache: true})
	out := make([]*Result, len(reqs))
	for i, r := range reqs {
		out[i] = generate(t, e, r)
	}
	return out
}

// concurrently submits all requests back to back (Submit queues at once,
// so they run together) and collects the results.
func concurrently(t testing.TB, e *Engine, reqs []Request) []*Result {
	t.Helper()
	streams := make([]*Stream, len(reqs))
	for i, r := range reqs {
		st, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		streams[i] = st
	}
	out := make([]*Result, len(reqs))
	for i, st := range streams {
		out[i] = st.Result()
		if out[i].FinishReason == FinishError {
			t.Fatalf("request %d failed: %v", i, out[i].Err)
		}
	}
	return out
}

// together submits reqs as one SubmitAll — queued in one go, so the
// first step already sees all of them whatever the machine's load (Submit
// one by one lets a busy engine start the first before the last arrives) —
// and waits for their results.
func together(t testing.TB, e *Engine, reqs []Request) []*Result {
	t.Helper()
	streams, err := e.SubmitAll(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*Result, len(reqs))
	for i, st := range streams {
		out[i] = st.Result()
		if out[i].FinishReason == FinishError {
			t.Fatalf("request %d failed: %v", i, out[i].Err)
		}
	}
	return out
}

func sameTokens(t *testing.T, what string, got, want []*Result) {
	t.Helper()
	for i := range want {
		if !slices.Equal(got[i].IDs, want[i].IDs) || got[i].Text != want[i].Text || got[i].FinishReason != want[i].FinishReason {
			t.Errorf("%s: request %d:\n got %v (%s)\nwant %v (%s)", what, i, got[i].IDs, got[i].FinishReason, want[i].IDs, want[i].FinishReason)
		}
	}
}

// settled returns the stats of the idle engine (observed on the scheduler
// goroutine once it has nothing to do) after checking the cache's
// bookkeeping there.
func settled(t testing.TB, e *Engine) Stats {
	t.Helper()
	var err error
	e.whenIdle(func() {
		err = e.cache.Check()
		e.snapshot()
	})
	if err != nil {
		t.Fatal(err)
	}
	return e.Stats()
}

// Many requests at once give exactly the tokens each gives alone, and the
// engine really batched them.
func TestConcurrentEqualsAlone(t *testing.T) {
	reqs := mixedRequests(t)
	want := alone(t, reqs)
	e := aidreams(t, Options{})
	got := concurrently(t, e, reqs)
	sameTokens(t, "batched", got, want)
	st := settled(t, e)
	if st.Steps == 0 || float64(st.StepSeqs)/float64(st.Steps) < 2 {
		t.Errorf("mean sequences per step %d/%d: the requests were not batched", st.StepSeqs, st.Steps)
	}
	if st.KVBlocksUsed != 0 {
		t.Errorf("%d blocks still used after all requests", st.KVBlocksUsed)
	}
	var gen int64
	for _, r := range got {
		gen += int64(len(r.IDs))
	}
	if st.Requests != int64(len(reqs)) || st.GeneratedTokens < gen {
		t.Errorf("stats %d requests, %d generated; want %d, ≥ %d", st.Requests, st.GeneratedTokens, len(reqs), gen)
	}
	t.Logf("%d requests: %d steps, mean batch %.1f tokens / %.1f sequences", len(reqs), st.Steps,
		float64(st.StepTokens)/float64(st.Steps), float64(st.StepSeqs)/float64(st.Steps))
}

// Batched greedy decoding still reproduces the reference implementation's
// ids (for the random-weight Llama-2-vocabulary models too).
func TestConcurrentGreedyMatchesGoldens(t *testing.T) {
	for _, set := range goldenSets {
		t.Run(set.name, func(t *testing.T) {
			e := newEngine(t, set.model, set.tok, Options{})
			defer e.Close()
			runs := loadGoldens(t, set.name)
			var reqs []Request
			for _, run := range runs {
				pol := withMax(sample.Greedy(), len(run.GeneratedTokens))
				pol.IgnoreEOS = true
				reqs = append(reqs, Request{Prompt: run.Prompt, Policy: pol})
			}
			for i, res := range concurrently(t, e, reqs) {
				if !slices.Equal(res.IDs, runs[i].GeneratedTokens) {
					t.Errorf("run %d (%q):\n got %v\nwant %v", i, runs[i].Prompt, res.IDs, runs[i].GeneratedTokens)
				}
			}
		})
	}
}

// A prompt whose leading full blocks are cached reuses them and generates
// the same tokens as a cold run; Stats count the hit.
func TestPrefixCacheHit(t *testing.T) {
	runs := loadGoldens(t, "aidreams260K")
	long := runs[4].Prompt // 37 tokens: two full blocks of 16
	pol := withMax(sample.Greedy(), 24)
	pol.IgnoreEOS = true
	cold := alone(t, []Request{{Prompt: long, Policy: pol}, {Prompt: long + " again", Policy: pol}})

	e := aidreams(t, Options{})
	first := generate(t, e, Request{Prompt: long, Policy: pol})
	if first.Usage.CachedTokens != 0 {
		t.Fatalf("cold run reused %d tokens", first.Usage.CachedTokens)
	}
	st0 := settled(t, e)
	if st0.KVBlocksUsed != 0 || st0.KVBlocksCached == 0 {
		t.Fatalf("after one request: %d used, %d cached blocks", st0.KVBlocksUsed, st0.KVBlocksCached)
	}
	second := generate(t, e, Request{Prompt: long, Policy: pol})
	third := generate(t, e, Request{Prompt: long + " again", Policy: pol})
	bs := st0.KVBlockSize
	if want := (len(first.PromptIDs) - 1) / bs * bs; second.Usage.CachedTokens != want || want == 0 {
		t.Errorf("same prompt reused %d tokens, want %d", second.Usage.CachedTokens, want)
	}
	if third.Usage.CachedTokens < bs {
		t.Errorf("extended prompt reused %d tokens", third.Usage.CachedTokens)
	}
	sameTokens(t, "prefix-cached", []*Result{second, third}, cold)
	if !slices.Equal(first.IDs, cold[0].IDs) {
		t.Errorf("first run %v, cold %v", first.IDs, cold[0].IDs)
	}
	st := settled(t, e)
	if hit := st.PrefixHitTokens; hit != int64(second.Usage.CachedTokens+third.Usage.CachedTokens) {
		t.Errorf("stats: %d hit tokens, want %d", hit, second.Usage.CachedTokens+third.Usage.CachedTokens)
	}
	if q := st.PrefixQueryTokens; q != int64(len(first.PromptIDs)+len(second.PromptIDs)+len(third.PromptIDs)) {
		t.Errorf("stats: %d queried tokens", q)
	}

	// Concurrent requests sharing a prefix share its blocks while running.
	reqs := slices.Repeat([]Request{{Prompt: long + " together", Policy: pol}}, 4)
	ref := alone(t, reqs[:1])[0]
	for i, r := range concurrently(t, e, reqs) {
		if !slices.Equal(r.IDs, ref.IDs) {
			t.Errorf("shared-prefix request %d: %v, alone %v", i, r.IDs, ref.IDs)
		}
	}
}

// A cache too small for all requests at once forces preemption; the
// preempted requests recompute and still give the unpressured tokens.
func TestPreemptionKeepsOutputs(t *testing.T) {
	reqs := mixedRequests(t)
	want := alone(t, reqs)
	// 128 positions = 8 blocks for ~17 requests of up to ~80 positions.
	e := aidreams(t, Options{CacheTokens: 128, MaxSeqs: 8})
	got := concurrently(t, e, reqs)
	sameTokens(t, "under preemption", got, want)
	st := settled(t, e)
	if st.Preemptions == 0 {
		t.Errorf("no preemption with %d blocks: %+v", st.KVBlocksTotal, st)
	}
	if st.KVBlocksUsed != 0 {
		t.Errorf("%d blocks used after all requests", st.KVBlocksUsed)
	}
	t.Logf("%d preemptions over %d steps", st.Preemptions, st.Steps)
}

// Cancelled requests (context, leaving the stream, cancelled while
// queued) end "cancelled" and return every block.
func TestCancelFreesBlocks(t *testing.T) {
	// A long context so that no request can end by itself before it is
	// cancelled.
	e := aidreams(t, Options{MaxSeqs: 2, CtxSize: 4096})
	pol := sample.Greedy()
	pol.IgnoreEOS = true
	long := loadGoldens(t, "aidreams260K")[4].Prompt
	var wg sync.WaitGroup
	results := make([]*Result, 6)
	for i := range results {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			for _, err := range e.GenerateStream(ctx, Request{Prompt: fmt.Sprintf("%s %d", long, i), Policy: pol}, &results[i]) {
				if err != nil {
					t.Error(err)
					return
				}
				n++
				if i%2 == 0 && n == 3 {
					break // leave the stream
				}
				if i%2 == 1 && n == 2 {
					cancel() // the client goes away
				}
			}
		})
	}
	wg.Wait()
	for i, r := range results {
		if r == nil || r.FinishReason != FinishCancelled {
			t.Fatalf("request %d: %+v", i, r)
		}
		if i%2 == 0 && len(r.IDs) != 3 {
			t.Errorf("request %d left after 3 tokens, result has %d", i, len(r.IDs))
		}
	}
	// One cancelled before the scheduler saw it: it ends without running.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, err := e.Generate(ctx, Request{Prompt: "queued", Policy: pol}); err != nil || r.FinishReason != FinishCancelled || len(r.IDs) != 0 {
		t.Errorf("cancelled in the queue: %+v %v", r, err)
	}
	if st := settled(t, e); st.KVBlocksUsed != 0 {
		t.Errorf("%d blocks used after cancelling everything (%d cached)", st.KVBlocksUsed, st.KVBlocksCached)
	}
}

// Requests that fail (too long, bad policy, bad ids, busy session) fail
// alone: the others give their usual tokens.
func TestBadRequestsDoNotDisturbOthers(t *testing.T) {
	good := mixedRequests(t)[:6]
	want := alone(t, good)
	e := aidreams(t, Options{})
	sess := e.NewSession()
	defer sess.Close()
	bad := []Request{
		{Prompt: strings.Repeat("word ", 200), Policy: sample.Greedy()},
		{Prompt: "x", Policy: sample.Policy{}},
		{PromptIDs: []int{1, 99999}, Policy: sample.Greedy()},
	}
	var wg sync.WaitGroup
	got := make([]*Result, len(good))
	start := make(chan struct{})
	for i, r := range good {
		wg.Go(func() {
			<-start
			got[i] = generate(t, e, r)
		})
	}
	for i, r := range bad {
		wg.Go(func() {
			<-start
			if _, err := e.Generate(context.Background(), r); err == nil {
				t.Errorf("bad request %d: no error", i)
			} else if i == 0 && !errors.Is(err, ErrPromptTooLong) {
				t.Errorf("long prompt: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	sameTokens(t, "beside failing requests", got, want)
}

// Sessions run concurrently with other requests and keep their history.
func TestSessionsConcurrent(t *testing.T) {
	e := aidreams(t, Options{CacheTokens: 256})
	pol := withMax(sample.Greedy(), 12)
	runs := loadGoldens(t, "aidreams260K")
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			sess := e.NewSession()
			defer sess.Close()
			p := runs[1+i].Prompt
			r1 := generate(t, e, Request{Prompt: p, Policy: pol, Session: sess})
			p2 := slices.Concat(r1.PromptIDs, r1.IDs, e.tok.Encode(" so", false))
			r2 := generate(t, e, Request{PromptIDs: p2, Policy: pol, Session: sess})
			if r2.Usage.CachedTokens == 0 {
				t.Errorf("session %d: second turn reused nothing", i)
			}
			ref := alone(t, []Request{{PromptIDs: p2, Policy: pol}})[0]
			if !slices.Equal(r2.IDs, ref.IDs) {
				t.Errorf("session %d turn 2: %v, alone %v", i, r2.IDs, ref.IDs)
			}
		})
	}
	wg.Wait()
	if st := settled(t, e); st.KVBlocksUsed != 0 {
		t.Errorf("%d blocks used after closing all sessions", st.KVBlocksUsed)
	}
}

// BenchmarkConcurrentDecode measures aggregate decode throughput (tokens
// per second over all requests) with 1, 4 and 8 concurrent requests of 64
// greedy tokens each, on one thread (tok/cpu-s: tokens per CPU-second of
// the process, which stays meaningful on a machine shared with other jobs):
//
//   - tiny_mha (shared/, dim 128, vocabulary 32000, 16 MB of f32 weights
//     that stay in the CPU cache: batching saves little memory traffic);
//   - the synthetic llama2c-110m Q8_0 GGUF that `nanoserve bench
//     --synthetic llama2c --type q8_0` writes to os.TempDir()/nanoserve-bench
//     (skipped when absent): 117 MB streamed from DRAM once per step
//     whatever the batch, so throughput grows with the batch; and its
//     Q4_K_M sibling.
//
// Run: go test ./engine -run '^$' -bench ConcurrentDecode -benchtime 3x
func BenchmarkConcurrentDecode(b *testing.B) {
	models := []struct{ name, path, tok string }{
		{"tiny_mha", goldenSets[0].model, goldenSets[0].tok},
		{"llama2c-110m-q8_0", filepath.Join(os.TempDir(), "nanoserve-bench", "llama2c-110m-q8_0-1.gguf"), ""},
		{"llama2c-110m-q4_k_m", filepath.Join(os.TempDir(), "nanoserve-bench", "llama2c-110m-q4_k_m-1.gguf"), ""},
	}
	for _, mc := range models {
		b.Run(mc.name, func(b *testing.B) {
			var m *model.Model
			var err error
			if mc.tok != "" {
				sh := testshared.Dir(b)
				m, err = model.Load(filepath.Join(sh, mc.path), model.Options{Tokenizer: filepath.Join(sh, mc.tok), Threads: 1})
			} else {
				if _, serr := os.Stat(mc.path); serr != nil {
					b.Skipf("%s not written (nanoserve bench --synthetic llama2c --type q8_0)", mc.path)
				}
				m, err = model.Load(mc.path, model.Options{Threads: 1})
			}
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			for _, conc := range []int{1, 2, 3, 4, 8} {
				b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
					e, err := New(m, Options{CtxSize: 256, CacheTokens: 8 * 256})
					if err != nil {
						b.Skip(err) // e.g. a synthetic file without a vocabulary
					}
					defer e.Close()
					pol := withMax(sample.Greedy(), 64)
					pol.IgnoreEOS = true
					var tokens atomic.Int64
					cpu0 := cpuSeconds()
					for b.Loop() {
						var wg sync.WaitGroup
						for i := range conc {
							wg.Go(func() {
								r, err := e.Generate(context.Background(), Request{PromptIDs: []int{1, 100 + i, 200 + i, 300 + i}, Policy: pol})
								if err != nil {
									b.Error(err)
									return
								}
								tokens.Add(int64(len(r.IDs)))
							})
						}
						wg.Wait()
					}
					b.ReportMetric(float64(tokens.Load())/b.Elapsed().Seconds(), "tok/s")
					if cpu := cpuSeconds() - cpu0; cpu > 0 {
						b.ReportMetric(float64(tokens.Load())/cpu, "tok/cpu-s")
					}
				})
			}
		})
	}
}

// A storm of requests on a tiny cache — sessions, shared prefixes,
// cancellations at random points, preemption — keeps the block manager
// consistent, gives every uncancelled request its lone-run tokens, and
// leaves no block used.
func TestStormKeepsCacheConsistent(t *testing.T) { storm(t, false) }

// storm runs the storm, with speculation (an oracle proposer, wrong at
// every third position) if spec.
func storm(t *testing.T, spec bool) Stats {
	base := mixedRequests(t)
	want := alone(t, base)
	o := Options{CacheTokens: 128, MaxSeqs: 6, MaxBatchTokens: 48}
	if spec {
		o.Spec = SpecOptions{Proposer: &oracle{full: fullSeqs(want), every: 3, vocab: 32}, K: 5, Fixed: true}
	}
	e := aidreams(t, o)
	rng := rand.New(rand.NewPCG(3, 4))
	type job struct {
		req       Request
		want      *Result
		cancelAt  int // cancel after this many tokens (0: never)
		breakAt   int // leave the stream after this many tokens (0: never)
		session   bool
		sessionID int
	}
	var jobs []job
	for i := range 3 * len(base) {
		j := job{req: base[i%len(base)], want: want[i%len(base)]}
		switch rng.IntN(5) {
		case 0:
			j.cancelAt = 1 + rng.IntN(8)
		case 1:
			j.breakAt = 1 + rng.IntN(8)
		case 2:
			j.session = true
		}
		jobs = append(jobs, j)
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := j.req
			if j.session {
				sess := e.NewSession()
				defer sess.Close()
				req.Session = sess
			}
			var res *Result
			n := 0
			for _, err := range e.GenerateStream(ctx, req, &res) {
				if err != nil {
					t.Errorf("job %d: %v", i, err)
					return
				}
				n++
				if n == j.cancelAt {
					cancel()
				}
				if n == j.breakAt {
					break
				}
			}
			switch {
			case j.breakAt > 0 && n == j.breakAt:
				if res.FinishReason != FinishCancelled || !slices.Equal(res.IDs, j.want.IDs[:n]) {
					t.Errorf("job %d (left after %d): %s %v, want prefix of %v", i, n, res.FinishReason, res.IDs, j.want.IDs)
				}
			case j.cancelAt > 0 && res.FinishReason == FinishCancelled:
				if !slices.Equal(res.IDs, j.want.IDs[:len(res.IDs)]) {
					t.Errorf("job %d (cancelled): %v, want a prefix of %v", i, res.IDs, j.want.IDs)
				}
			default:
				if !slices.Equal(res.IDs, j.want.IDs) || res.FinishReason != j.want.FinishReason {
					t.Errorf("job %d: %s %v, want %s %v", i, res.FinishReason, res.IDs, j.want.FinishReason, j.want.IDs)
				}
			}
		})
	}
	wg.Wait()
	st := settled(t, e)
	if st.KVBlocksUsed != 0 {
		t.Errorf("%d blocks used after the storm", st.KVBlocksUsed)
	}
	t.Logf("%d jobs: %d preemptions, %d prefix-hit of %d prompt tokens, %d steps", len(jobs), st.Preemptions, st.PrefixHitTokens, st.PrefixQueryTokens, st.Steps)
	return st
}

// n = 3 on the F32 aidreams model: choice i equals a lone request with
// seed + i, the prompt is admitted (prefilled) once, and every block
// returns at the end.
func TestNChoicesEqualLoneSeeds(t *testing.T) {
	prompt := loadGoldens(t, "aidreams260K")[1].Prompt
	pol := withMax(seeded(sample.Defaults(), 900), 24)
	pol.Temperature, pol.TopP = 1.1, 0.95
	var lone []Request
	for i := range 3 {
		lone = append(lone, Request{Prompt: prompt, Policy: withMax(seeded(pol, 900+uint64(i)), 24)})
	}
	want := alone(t, lone)
	e := aidreams(t, Options{})
	st, err := e.Submit(context.Background(), Request{Prompt: prompt, Policy: pol, N: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := st.Results()
	sameTokens(t, "n = 3", got, want)
	s := settled(t, e)
	if n := len(got[0].PromptIDs); s.PrefixQueryTokens != int64(n) || s.Requests != 1 {
		t.Errorf("prefix query tokens %d for a %d-token prompt and n = 3 (want one prefill)", s.PrefixQueryTokens, n)
	}
	if s.KVBlocksUsed != 0 {
		t.Errorf("%d blocks used after n = 3", s.KVBlocksUsed)
	}
}
