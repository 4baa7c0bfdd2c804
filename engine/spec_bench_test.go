package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"nanoserve/defaultmodel"
	"nanoserve/model"
	"nanoserve/sample"
)

// specPair runs every request on a plain engine and on a speculating one,
// interleaved, once per benchmark iteration, checks that their ids agree,
// and reports decode tokens/s of both (tokens after the first over decode
// time, summed over the requests), their ratio and the acceptance rate.
func specPair(b *testing.B, m *model.Model, spec SpecOptions, reqs []Request) {
	plain, err := New(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	sp, err := New(m, Options{Spec: spec})
	if err != nil {
		b.Fatal(err)
	}
	defer sp.Close()
	var tok [2]int
	var dur [2]time.Duration
	for b.Loop() {
		for _, r := range reqs {
			var ids [2][]int
			for i, e := range []*Engine{plain, sp} {
				res := generate(b, e, r)
				tok[i] += len(res.IDs) - 1
				dur[i] += time.Duration(res.Timings.DecodeMs * float64(time.Millisecond))
				ids[i] = res.IDs
			}
			if !slices.Equal(ids[0], ids[1]) {
				b.Fatalf("speculative ids %v, plain %v", ids[1], ids[0])
			}
		}
	}
	rate := func(i int) float64 { return float64(tok[i]) / dur[i].Seconds() }
	b.ReportMetric(rate(0), "plain-tok/s")
	b.ReportMetric(rate(1), "spec-tok/s")
	b.ReportMetric(rate(1)/rate(0), "speedup")
	st := sp.Stats()
	if st.SpecDraftTokens > 0 {
		b.ReportMetric(float64(st.SpecAcceptedTokens)/float64(st.SpecDraftTokens), "accept-rate")
	}
	b.ReportMetric(float64(st.SpecDrafts)/float64(b.N), "drafts/op")
	var ca, cb float64
	sp.whenIdle(func() { ca, cb, _ = sp.cost.fit() })
	b.ReportMetric(ca*1e6, "step-a-µs")
	b.ReportMetric(cb*1e6, "step-b-µs/tok")
}

// Prompt lookup on the built-in Go model, code editing: each prompt is a
// small Go file followed by the start of a slightly changed copy, and the
// model writes the rest (greedy, token healing as `generate` does for the
// built-in model). And on aidreams260K, free text from its golden prompts,
// where prompt lookup rarely matches and backs off.
func BenchmarkSpecPromptLookup(b *testing.B) {
	b.Run("builtin-code-edit", func(b *testing.B) {
		p, err := defaultmodel.Path()
		if errors.Is(err, defaultmodel.ErrMissing) {
			b.Skip("no built-in model in this build")
		}
		if err != nil {
			b.Fatal(err)
		}
		m, err := model.Load(p, model.Options{Threads: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		var reqs []Request
		for _, f := range []string{"stack_edit.txt", "sum_edit.txt", "table_edit.txt"} {
			text, err := os.ReadFile(filepath.Join("testdata", "spec", f))
			if err != nil {
				b.Fatal(err)
			}
			pol := withMax(sample.Greedy(), 256)
			reqs = append(reqs, Request{Prompt: string(text), Policy: pol, TokenHealing: true})
		}
		specPair(b, m, SpecOptions{Mode: SpecNgram}, reqs)
	})
	b.Run("aidreams-free-text", func(b *testing.B) {
		m := loadModelB(b, 2)
		defer m.Close()
		var reqs []Request
		for _, run := range loadGoldens(b, "aidreams260K") {
			pol := withMax(sample.Greedy(), 200)
			pol.IgnoreEOS = true
			reqs = append(reqs, Request{Prompt: run.Prompt, Policy: pol})
		}
		specPair(b, m, SpecOptions{Mode: SpecNgram}, reqs)
	})
}

func loadModelB(b *testing.B, gs int) *model.Model {
	b.Helper()
	m, err := loadGolden(b, gs)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// Verification cost against k at scale: the TinyLlama-shaped synthetic
// model (random weights, Q8_0; `nanoserve bench --synthetic tinyllama
// --type q8_0` writes it), with an oracle proposer that replays the plain
// greedy continuation, so (up to the batch variance of quantized kernels)
// every proposal is accepted: decode tokens/s for k = 0 (plain), 1, 2, 4,
// 8, as one step verifies k+1 tokens for about the weight-reading cost of
// one.
func BenchmarkSpecOracleK(b *testing.B) {
	path := filepath.Join(os.TempDir(), "nanoserve-bench", "tinyllama-1.1b-q8_0-1.gguf")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("%s not written (nanoserve bench --synthetic tinyllama --type q8_0)", path)
	}
	m, err := model.Load(path, model.Options{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	pol := withMax(sample.Greedy(), 24)
	pol.IgnoreEOS = true
	req := Request{PromptIDs: []int{1, 450, 4996, 17354, 1701, 432}, Policy: pol}
	plain, err := New(m, Options{CtxSize: 256})
	if err != nil {
		b.Fatal(err)
	}
	want := generate(b, plain, req)
	plain.Close()
	// Every iteration runs each k once, interleaved, so the machine's load
	// falls on all of them alike; the ratios are against k = 0.
	ks := []int{0, 1, 2, 4, 8}
	engines := make([]*Engine, len(ks))
	for i, k := range ks {
		o := Options{CtxSize: 256}
		if k > 0 {
			o.Spec = SpecOptions{Proposer: &oracle{full: fullSeqs([]*Result{want})}, K: k, Fixed: true}
		}
		if engines[i], err = New(m, o); err != nil {
			b.Fatal(err)
		}
		defer engines[i].Close()
	}
	tok := make([]int, len(ks))
	dur := make([]time.Duration, len(ks))
	for b.Loop() {
		for i, e := range engines {
			r := generate(b, e, req)
			tok[i] += len(r.IDs) - 1
			dur[i] += time.Duration(r.Timings.DecodeMs * float64(time.Millisecond))
		}
	}
	rate := func(i int) float64 { return float64(tok[i]) / dur[i].Seconds() }
	for i, k := range ks {
		b.ReportMetric(rate(i), fmt.Sprintf("k%d-tok/s", k))
		if k > 0 {
			b.ReportMetric(rate(i)/rate(0), fmt.Sprintf("k%d-speedup", k))
			if st := engines[i].Stats(); st.SpecDraftTokens > 0 {
				b.ReportMetric(float64(st.SpecAcceptedTokens)/float64(st.SpecDraftTokens), fmt.Sprintf("k%d-accept", k))
			}
		}
	}
}
