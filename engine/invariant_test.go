package engine

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/model"
	"nanoserve/sample"
)

// ggufEngine loads a shared GGUF fixture on two threads.
func ggufEngine(t *testing.T, rel string, opts Options) *Engine {
	t.Helper()
	m, err := model.Load(filepath.Join(testshared.Dir(t), rel), model.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestConcurrentGreedyInvariant is the audit's case (issue 16): eight
// concurrent greedy requests on llama_gqa-Q8_0 give exactly the ids — and
// bit-identical logprobs, chosen and top 5, every step — that each gives
// run alone. Before batch-invariant kernels 20 of 22 such streams
// differed (a token's logits depended on how many tokens shared its step).
// F16 and the K-quant file run too.
func TestConcurrentGreedyInvariant(t *testing.T) {
	prompts := []string{
		"Once upon a time",
		"The quick brown fox jumps over the lazy dog, and then",
		"1, 2, 3, 4,",
		"In the beginning the Universe was created. This has made a lot of people very angry and been widely regarded as a bad move.",
		"Hello",
		"Roses are red, violets are blue,",
		"The capital of France is",
		"def fib(n):\n    if n < 2:\n        return n\n    return",
	}
	files := []string{"testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf", "testdata/gguf/llama_gqa/llama_gqa-F16.gguf", "testdata/gguf/llama_k/llama_k-Q4_K_M.gguf"}
	if testing.Short() {
		files = files[:1]
	}
	for _, rel := range files {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			var reqs []Request
			for i, p := range prompts {
				pol := withMax(sample.Greedy(), 24+4*i)
				pol.IgnoreEOS = true
				k := 5
				pol.Logprobs = &k
				reqs = append(reqs, Request{Prompt: p, Policy: pol})
			}
			lone := ggufEngine(t, rel, Options{NoPrefixCache: true})
			want := make([]*Result, len(reqs))
			for i, r := range reqs {
				want[i] = generate(t, lone, r)
			}
			e := ggufEngine(t, rel, Options{})
			got := concurrently(t, e, reqs)
			sameTokens(t, "concurrent", got, want)
			for i := range want {
				if err := logprobDiff(got[i], want[i]); err != nil {
					t.Errorf("request %d: %v", i, err)
				}
			}
			st := settled(t, e)
			if st.Steps == 0 || float64(st.StepSeqs)/float64(st.Steps) < 2 {
				t.Errorf("mean sequences per step %d/%d: the requests were not batched", st.StepSeqs, st.Steps)
			}
		})
	}
}

// logprobDiff reports the first step whose logprobs (chosen and top
// alternatives) are not bit-identical.
func logprobDiff(got, want *Result) error {
	if len(got.Logprobs) != len(want.Logprobs) {
		return fmt.Errorf("%d logprob steps, alone %d", len(got.Logprobs), len(want.Logprobs))
	}
	for s := range want.Logprobs {
		g, w := got.Logprobs[s], want.Logprobs[s]
		if math.Float32bits(g.Logprob) != math.Float32bits(w.Logprob) || len(g.Top) != len(w.Top) {
			return fmt.Errorf("step %d: logprob %v, alone %v", s, g.Logprob, w.Logprob)
		}
		for j := range w.Top {
			if g.Top[j].ID != w.Top[j].ID || math.Float32bits(g.Top[j].Logprob) != math.Float32bits(w.Top[j].Logprob) {
				return fmt.Errorf("step %d: alternative %d is %d (%v), alone %d (%v)", s, j, g.Top[j].ID, g.Top[j].Logprob, w.Top[j].ID, w.Top[j].Logprob)
			}
		}
	}
	return nil
}
