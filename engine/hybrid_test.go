package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/sample"
)

// The engine on hybrid models (recurrent state per sequence beside the KV
// blocks, kvcache/state.go): every test compares ids and logprobs with ==
// against the same request run alone and cold (a fresh engine without the
// prefix cache), and checks that every state slot comes back.

type hybridGolden struct {
	GGUFFile string `json:"gguf_file"`
	Prompts  []struct {
		Prompt       string `json:"prompt"`
		GeneratedIDs []int  `json:"generated_ids"`
	} `json:"prompts"`
}

func loadHybrid(t *testing.T, name string) (hybridGolden, string) {
	t.Helper()
	var g hybridGolden
	raw, err := os.ReadFile(testshared.Path(t, "testdata/gguf-archs/"+name+"/"+name+"-F16.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return g, "testdata/gguf-archs/" + name + "/" + g.GGUFFile
}

// greedyLP is greedy decoding of n tokens with the top-5 logprobs.
func greedyLP(n int) sample.Policy {
	p := withMax(sample.Greedy(), n)
	p.IgnoreEOS = true
	k := 5
	p.Logprobs = &k
	return p
}

// aloneCold runs each request by itself on a fresh engine without the
// prefix cache.
func aloneCold(t *testing.T, rel string, reqs []Request) []*Result {
	t.Helper()
	e := ggufEngine(t, rel, Options{NoPrefixCache: true})
	out := make([]*Result, len(reqs))
	for i, r := range reqs {
		out[i] = generate(t, e, r)
	}
	return out
}

// sameResultLogprobs requires bit-identical logprobs request by request.
func sameResultLogprobs(t *testing.T, what string, got, want []*Result) {
	t.Helper()
	for i := range want {
		if err := logprobDiff(got[i], want[i]); err != nil {
			t.Errorf("%s: request %d: %v", what, i, err)
		}
	}
}

// statesReturned checks, on the idle engine, that no state slot (other
// than saved prefix states, a cache) and no block is held and the cache's
// bookkeeping holds.
func statesReturned(t *testing.T, e *Engine) Stats {
	t.Helper()
	st := settled(t, e)
	var used []int
	var saved int
	e.whenIdle(func() { used, saved = e.cache.UsedStates(), e.cache.SavedStates() })
	if len(used) != saved || st.StateSlotsUsed != saved || st.KVBlocksUsed != 0 {
		t.Errorf("state slots %v (%d used of %d, %d saved prefix states), %d blocks still held", used, st.StateSlotsUsed, st.StateSlotsTotal, saved, st.KVBlocksUsed)
	}
	if st.StateSlotsTotal == 0 || st.StateBytes == 0 {
		t.Errorf("no state pool reported: %+v", st)
	}
	return st
}

// TestHybridChunkedPrefill: the goldens' prompts, all at once, with the
// prefill split into chunks of 1, 7 and 32 tokens: ids are llama.cpp's and
// logprobs bit-identical to each request alone (state carried across
// chunks, decodes and prefill chunks mixed in one step). The requests are
// queued together so that "batched" does not depend on the machine's load.
func TestHybridChunkedPrefill(t *testing.T) {
	for _, name := range []string{"qwen35", "lfm2"} {
		t.Run(name, func(t *testing.T) {
			g, rel := loadHybrid(t, name)
			var reqs []Request
			for _, p := range g.Prompts {
				reqs = append(reqs, Request{Prompt: p.Prompt, Policy: greedyLP(len(p.GeneratedIDs))})
			}
			want := aloneCold(t, rel, reqs)
			for i, r := range want {
				if !slices.Equal(r.IDs, g.Prompts[i].GeneratedIDs) {
					t.Errorf("alone, prompt %d: %v, llama.cpp %v", i, r.IDs, g.Prompts[i].GeneratedIDs)
				}
			}
			for _, chunk := range []int{1, 7, 32} {
				e := ggufEngine(t, rel, Options{PrefillChunk: chunk})
				got := together(t, e, reqs)
				what := fmt.Sprintf("chunk %d", chunk)
				sameTokens(t, what, got, want)
				sameResultLogprobs(t, what, got, want)
				st := statesReturned(t, e)
				if st.Steps == 0 || float64(st.StepSeqs)/float64(st.Steps) < 2 {
					t.Errorf("%s: mean sequences per step %d/%d: not batched", what, st.StepSeqs, st.Steps)
				}
			}
		})
	}
}

// TestHybridPreemption: 16 concurrent requests through a cache far too
// small for them (preemption drops a sequence's state with its blocks and
// it recomputes from position 0) give each request's lone ids and
// logprobs; every state slot comes back.
func TestHybridPreemption(t *testing.T) {
	g, rel := loadHybrid(t, "qwen35")
	var reqs []Request
	for i := range 16 {
		reqs = append(reqs, Request{Prompt: fmt.Sprintf("%s %d", g.Prompts[i%len(g.Prompts)].Prompt, i), Policy: greedyLP(6 + i)})
	}
	want := aloneCold(t, rel, reqs)
	e := ggufEngine(t, rel, Options{MaxSeqs: 16, CtxSize: 192, CacheTokens: 400, PrefillChunk: 48})
	got := concurrently(t, e, reqs)
	sameTokens(t, "under preemption", got, want)
	sameResultLogprobs(t, "under preemption", got, want)
	st := statesReturned(t, e)
	if st.Preemptions == 0 {
		t.Errorf("no preemption: %+v", st)
	}
	t.Logf("%d preemptions, %d state slots of %d bytes", st.Preemptions, st.StateSlotsTotal, st.StateBytes)
}

// TestHybridNChoices: n = 3 prefills the prompt once and forks the state:
// each choice equals a lone request with its seed.
func TestHybridNChoices(t *testing.T) {
	g, rel := loadHybrid(t, "qwen35")
	pol := withMax(seeded(sample.Defaults(), 900), 20)
	pol.Temperature, pol.TopP, pol.IgnoreEOS = 1.1, 0.95, true
	k := 3
	pol.Logprobs = &k
	var lone []Request
	for i := range 3 {
		lone = append(lone, Request{Prompt: g.Prompts[1].Prompt, Policy: withMax(seeded(pol, 900+uint64(i)), 20)})
	}
	want := aloneCold(t, rel, lone)
	e := ggufEngine(t, rel, Options{})
	st, err := e.Submit(context.Background(), Request{Prompt: g.Prompts[1].Prompt, Policy: pol, N: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := st.Results()
	sameTokens(t, "n = 3", got, want)
	sameResultLogprobs(t, "n = 3", got, want)
	s := statesReturned(t, e)
	if n := len(got[0].PromptIDs); s.PrefixQueryTokens != int64(n) || s.PromptTokens > int64(n)+8 {
		t.Logf("prompt tokens computed %d for a %d-token prompt", s.PromptTokens, n)
	}
}

// TestHybridCancel: requests left or cancelled mid-stream, and one
// cancelled in the queue, return every state slot and block.
func TestHybridCancel(t *testing.T) {
	g, rel := loadHybrid(t, "lfm2")
	e := ggufEngine(t, rel, Options{MaxSeqs: 2, CtxSize: 1024})
	pol := greedyLP(500)
	var wg sync.WaitGroup
	results := make([]*Result, 6)
	for i := range results {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			for _, err := range e.GenerateStream(ctx, Request{Prompt: fmt.Sprintf("%s %d", g.Prompts[i%4].Prompt, i), Policy: pol}, &results[i]) {
				if err != nil {
					t.Error(err)
					return
				}
				n++
				if i%2 == 0 && n == 3 {
					break
				}
				if i%2 == 1 && n == 2 {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	for i, r := range results {
		if r == nil || r.FinishReason != FinishCancelled {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, err := e.Generate(ctx, Request{Prompt: "queued", Policy: pol}); err != nil || r.FinishReason != FinishCancelled {
		t.Errorf("cancelled in the queue: %+v %v", r, err)
	}
	statesReturned(t, e)
}

// TestHybridPrefixCache: a prompt's recurrent state is saved at block
// boundaries (every StateSnapshotEvery positions and its last one); later
// requests sharing a prefix resume from the last saved state inside it and
// give bit for bit the ids and logprobs of a cold run.
func TestHybridPrefixCache(t *testing.T) {
	for _, name := range []string{"qwen35", "lfm2"} {
		t.Run(name, func(t *testing.T) {
			g, rel := loadHybrid(t, name)
			e := ggufEngine(t, rel, Options{StateSnapshotEvery: 32})
			base := g.Prompts[3].Prompt // the longest
			first := generate(t, e, Request{Prompt: base, Policy: greedyLP(8)})
			ids := first.PromptIDs
			reqs := []Request{
				{Prompt: base, Policy: greedyLP(8)},                                                    // the same prompt
				{PromptIDs: slices.Concat(ids[:56], ids[60:70]), Policy: greedyLP(8)},                  // shares 56 (3 blocks): resumes at 32
				{PromptIDs: slices.Concat(ids, e.tok.Encode(" and then", false)), Policy: greedyLP(8)}, // extends it
			}
			want := aloneCold(t, rel, reqs)
			var got []*Result
			for _, r := range reqs {
				got = append(got, generate(t, e, r))
			}
			sameTokens(t, "prefix hit", got, want)
			sameResultLogprobs(t, "prefix hit", got, want)
			last := (len(ids) - 1) / 16 * 16
			for i, wantHit := range []int{last, 32, last} {
				if got[i].Usage.CachedTokens != wantHit {
					t.Errorf("request %d reused %d positions, want %d", i, got[i].Usage.CachedTokens, wantHit)
				}
			}
			st := statesReturned(t, e)
			t.Logf("%s: %d saved prefix states of %d bytes; prefix hits %d of %d prompt tokens", name,
				st.StateSlotsUsed, st.StateBytes, st.PrefixHitTokens, st.PrefixQueryTokens)
		})
	}
}

// TestHybridSpec: speculative decoding on a hybrid model with proposals
// that are often wrong (a rejection restores the state snapshot taken
// before verification and recomputes the accepted tokens) gives, for
// concurrent requests, each lone plain run's ids and logprobs; snapshots
// come back to the pool.
func TestHybridSpec(t *testing.T) {
	for _, name := range []string{"qwen35", "lfm2"} {
		t.Run(name, func(t *testing.T) {
			g, rel := loadHybrid(t, name)
			var reqs []Request
			for _, p := range g.Prompts {
				reqs = append(reqs, Request{Prompt: p.Prompt, Policy: greedyLP(len(p.GeneratedIDs))})
			}
			want := aloneCold(t, rel, reqs)
			or := &oracle{full: fullSeqs(want), every: 3, salt: 1, vocab: 32000}
			e := ggufEngine(t, rel, Options{Spec: SpecOptions{Proposer: or, K: 4, Fixed: true}})
			got := concurrently(t, e, reqs)
			sameTokens(t, "speculative", got, want)
			sameResultLogprobs(t, "speculative", got, want)
			st := statesReturned(t, e)
			if st.SpecDraftTokens == 0 || st.SpecAcceptedTokens == 0 || st.SpecAcceptedTokens == st.SpecDraftTokens {
				t.Errorf("proposals %d, accepted %d: want both accepted and rejected ones", st.SpecDraftTokens, st.SpecAcceptedTokens)
			}
			// A rejection recomputes the accepted tokens only (from the
			// snapshot), not the whole sequence.
			if bound := st.PromptTokens + st.GeneratedTokens + 2*st.SpecDraftTokens + st.SpecDrafts; st.StepTokens > bound {
				t.Errorf("%d tokens computed, more than %d: rejections recompute from scratch", st.StepTokens, bound)
			}
			t.Logf("%s: %d drafts, %d proposed, %d accepted, %d tokens computed for %d prompt + %d generated", name,
				st.SpecDrafts, st.SpecDraftTokens, st.SpecAcceptedTokens, st.StepTokens, st.PromptTokens, st.GeneratedTokens)
		})
	}
}

// TestHybridSessions: a session's next turn that extends its history
// continues the recurrent state (its cached tokens are reused) and equals
// a fresh run; a diverging turn recomputes everything; idle sessions'
// states are taken back when a new request needs a slot.
func TestHybridSessions(t *testing.T) {
	g, rel := loadHybrid(t, "qwen35")
	e := ggufEngine(t, rel, Options{MaxSeqs: 2})
	fresh := ggufEngine(t, rel, Options{})
	pol := greedyLP(10)
	a, b := e.NewSession(), e.NewSession()
	defer a.Close()
	defer b.Close()
	res1 := generate(t, e, Request{Prompt: g.Prompts[0].Prompt, Policy: pol, Session: a})
	p2 := slices.Concat(res1.PromptIDs, res1.IDs, e.tok.Encode(" and then", false))
	res2 := generate(t, e, Request{PromptIDs: p2, Policy: pol, Session: a})
	if want := len(res1.PromptIDs) + len(res1.IDs) - 1; res2.Usage.CachedTokens != want {
		t.Errorf("turn 2 reused %d cached tokens, want %d", res2.Usage.CachedTokens, want)
	}
	ref := generate(t, fresh, Request{PromptIDs: p2, Policy: pol})
	sameTokens(t, "turn 2", []*Result{res2}, []*Result{ref})
	sameResultLogprobs(t, "turn 2", []*Result{res2}, []*Result{ref})
	res3 := generate(t, e, Request{Prompt: g.Prompts[2].Prompt, Policy: pol, Session: a})
	ref3 := generate(t, fresh, Request{Prompt: g.Prompts[2].Prompt, Policy: pol})
	if res3.Usage.CachedTokens != 0 {
		t.Errorf("diverging turn reused %d tokens of a recurrent state", res3.Usage.CachedTokens)
	}
	sameResultLogprobs(t, "diverging turn", []*Result{res3}, []*Result{ref3})
	generate(t, e, Request{Prompt: g.Prompts[1].Prompt, Policy: pol, Session: b})
	// Both slots are held by idle sessions: a new request takes one back.
	if r := generate(t, e, Request{Prompt: g.Prompts[3].Prompt, Policy: pol}); r.FinishReason != FinishLength {
		t.Errorf("request beside two idle sessions: %s %v", r.FinishReason, r.Err)
	}
	a.Close()
	b.Close()
	statesReturned(t, e)
}
