package engine

import (
	"context"
	"slices"
	"testing"

	"nanoserve/sample"
)

// oracle is a test proposer that knows each request's plain greedy
// continuation (full: prompt then generated ids) and proposes its next
// tokens, with every token at a position p where (p*7+salt)%every == 0
// replaced by a wrong id (every ≤ 0: never), so verification sees both
// accepted and rejected proposals.
type oracle struct {
	full  [][]int
	every int
	salt  int
	vocab int
}

func (o *oracle) Propose(dst, tokens []int, k int) []int {
	dst = dst[:0]
	for _, f := range o.full {
		if len(f) <= len(tokens) || !slices.Equal(f[:len(tokens)], tokens) {
			continue
		}
		for p := len(tokens); p < min(len(f), len(tokens)+k); p++ {
			t := f[p]
			if o.every > 0 && (p*7+o.salt)%o.every == 0 {
				t = (t + 1) % o.vocab
			}
			dst = append(dst, t)
		}
		return dst
	}
	return dst
}

// fullSeqs is each result's prompt followed by its generated ids.
func fullSeqs(res []*Result) [][]int {
	var f [][]int
	for _, r := range res {
		f = append(f, append(slices.Clone(r.PromptIDs), r.IDs...))
	}
	return f
}

func greedyReqs(t testing.TB, name string, max int) []Request {
	var reqs []Request
	for i, run := range loadGoldens(t, name) {
		p := withMax(sample.Greedy(), max+5*i)
		p.IgnoreEOS = true
		reqs = append(reqs, Request{Prompt: run.Prompt, Policy: p})
	}
	return reqs
}

func runAll(t testing.TB, e *Engine, reqs []Request, batched bool) []*Result {
	t.Helper()
	if batched {
		return concurrently(t, e, reqs)
	}
	out := make([]*Result, len(reqs))
	for i, r := range reqs {
		out[i] = generate(t, e, r)
	}
	return out
}

var _ = context.Background

// Greedy output is identical with and without speculation on every
// llama2c model, alone and batched, while proposals are both accepted and
// rejected; the cache's bookkeeping holds and no block leaks.
func TestSpecGreedyIdentical(t *testing.T) {
	for _, gs := range goldenSets {
		t.Run(gs.name, func(t *testing.T) {
			reqs := greedyReqs(t, gs.name, 40)
			plain := newEngine(t, gs.model, gs.tok, Options{NoPrefixCache: true})
			want := runAll(t, plain, reqs, false)
			plain.Close()
			for _, batched := range []bool{false, true} {
				for _, every := range []int{0, 3, 5} {
					or := &oracle{full: fullSeqs(want), every: every, salt: 1, vocab: 32}
					e := newEngine(t, gs.model, gs.tok, Options{Spec: SpecOptions{Proposer: or, K: 4, Fixed: true}})
					got := runAll(t, e, reqs, batched)
					sameTokens(t, "speculative", got, want)
					st := settled(t, e)
					e.Close()
					if st.SpecAcceptedTokens == 0 || (every > 0 && st.SpecAcceptedTokens == st.SpecDraftTokens) {
						t.Errorf("every %d: accepted %d of %d proposed", every, st.SpecAcceptedTokens, st.SpecDraftTokens)
					}
					if st.KVBlocksUsed != 0 {
						t.Errorf("%d blocks used after all ended", st.KVBlocksUsed)
					}
					t.Logf("batched %v every %d: drafts %d proposed %d accepted %d", batched, every, st.SpecDrafts, st.SpecDraftTokens, st.SpecAcceptedTokens)
				}
			}
		})
	}
}
