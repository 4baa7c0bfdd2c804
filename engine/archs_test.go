package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/sample"
)

// TestArchsUnderPressure serves the llama.cpp goldens of the newer
// architectures (sliding windows, experts) concurrently, twice, through a
// cache too small for all of them (requests are preempted and recomputed),
// then one at a time twice (the repeats reuse cached prefixes); every
// request gives llama.cpp's greedy ids.
func TestArchsUnderPressure(t *testing.T) {
	for _, name := range []string{"gemma3", "gemma2", "qwen3moe"} {
		t.Run(name, func(t *testing.T) {
			var g struct {
				GGUFFile string `json:"gguf_file"`
				Prompts  []struct {
					Prompt       string `json:"prompt"`
					GeneratedIDs []int  `json:"generated_ids"`
				} `json:"prompts"`
			}
			raw, err := os.ReadFile(testshared.Path(t, "testdata/gguf-archs/"+name+"/"+name+"-F16.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
			// ~55 positions per request, 4 requests: 96 positions force
			// preemption.
			e := newEngine(t, "testdata/gguf-archs/"+name+"/"+g.GGUFFile, "testdata/gguf-archs/"+name+"/"+g.GGUFFile, Options{CtxSize: 64, CacheTokens: 96, MaxSeqs: 4})
			t.Cleanup(func() { e.Close() })
			var reqs []Request
			for _, p := range g.Prompts {
				pol := withMax(sample.Greedy(), len(p.GeneratedIDs))
				pol.IgnoreEOS = true
				reqs = append(reqs, Request{Prompt: p.Prompt, Policy: pol})
			}
			for round := range 2 {
				res := make([]*Result, len(reqs))
				errs := make([]error, len(reqs))
				var wg sync.WaitGroup
				for i, r := range reqs {
					wg.Go(func() { res[i], errs[i] = e.Generate(context.Background(), r) })
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
				for i, r := range res {
					if !slices.Equal(r.IDs, g.Prompts[i].GeneratedIDs) {
						t.Errorf("round %d prompt %d: %v, llama.cpp %v", round, i, r.IDs, g.Prompts[i].GeneratedIDs)
					}
				}
			}
			// One at a time, twice: the repeat attaches the cached prefix
			// (its window-crossing positions included).
			for i, r := range reqs {
				for range 2 {
					if res := generate(t, e, r); !slices.Equal(res.IDs, g.Prompts[i].GeneratedIDs) {
						t.Errorf("alone, prompt %d: %v, llama.cpp %v", i, res.IDs, g.Prompts[i].GeneratedIDs)
					}
				}
			}
			st := e.Stats()
			if st.Preemptions == 0 || st.PrefixHitTokens == 0 {
				t.Errorf("no preemption or prefix hit: %+v", st)
			}
			t.Logf("%s: %d preemptions, %d prefix-hit tokens", name, st.Preemptions, st.PrefixHitTokens)
		})
	}
}
