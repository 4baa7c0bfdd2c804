package model

import (
	"math/rand/v2"
	"nanoserve/tensor"
	"slices"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/kvcache"
)

// TestAttnKernels compares the assembly kernels with the Go ones over
// head widths, row counts and strides.
func TestAttnKernels(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no assembly kernels on this machine")
	}
	r := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	for _, hd := range []int{8, 16, 24, 32, 40, 64, 72, 96, 104, 128, 136} {
		for _, n := range []int{1, 3, 4, 5, 8, 12, 13, 15, 16, 17, 31} {
			stride := hd + 8*r.IntN(3)
			q, k := fill(hd), fill(n*stride)
			a := fill(n)
			got, want := make([]float32, n), make([]float32, n)
			attnScores(got, q, k, stride, n, 0.125)
			attnScoresGo(want, q, k, stride, n, 0.125)
			if d, at := maxAbsDiff(got, want); d > 1e-5 {
				t.Errorf("scores hd %d n %d: differ by %g at %d", hd, n, d, at)
			}
			o1, o2 := fill(hd), make([]float32, hd)
			copy(o2, o1)
			attnAccum(o1, k, stride, a)
			attnAccumGo(o2, k, stride, a)
			if d, at := maxAbsDiff(o1, o2); d > 1e-5 {
				t.Errorf("accum hd %d n %d: differ by %g at %d", hd, n, d, at)
			}
		}
	}
}

// TestParallelAttention runs a 256-token prefill and decode steps with two
// workers (parallel attention, norms, RoPE, SwiGLU) and with one, with the
// block table reversed (no runs across blocks), and with the Go kernels,
// and compares the logits.
func TestParallelAttention(t *testing.T) {
	path := testshared.Path(t, "models/llama2c/tiny_gqa.bin")
	const n = 256
	toks := make([]int, n)
	for i := range toks {
		toks[i] = 1 + (i*37)%500
	}
	run := func(threads int, reversed bool) []float32 {
		m := mustLoad(t, path, Options{Threads: threads})
		c, _ := m.NewCache(n + 8)
		s := &kvcache.Seq{}
		if err := c.Reserve(s, n+8); err != nil {
			t.Fatal(err)
		}
		if reversed { // no two consecutive positions' blocks are adjacent
			slices.Reverse(s.Blocks)
		}
		out := make([]bool, n)
		for i := range out {
			out[i] = i%50 == 49
		}
		pos := make([]int, n)
		for i := range pos {
			pos[i] = i
		}
		lg, err := m.Forward(Batch{Tokens: toks, Pos: pos, Seq: slices.Repeat([]*kvcache.Seq{s}, n), Output: out}, c)
		if err != nil {
			t.Fatal(err)
		}
		res := slices.Clone(lg)
		for p := n; p < n+8; p++ {
			lg, err := m.Forward(Batch{Tokens: []int{7 + p}, Pos: []int{p}, Seq: []*kvcache.Seq{s}}, c)
			if err != nil {
				t.Fatal(err)
			}
			res = append(res, lg...)
		}
		return res
	}
	serial := run(1, false)
	if d, at := maxAbsDiff(run(2, false), serial); d > 1e-4 {
		t.Errorf("2 workers differ from 1 by %g at %d", d, at)
	}
	if d, at := maxAbsDiff(run(2, true), serial); d > 1e-4 {
		t.Errorf("reversed block table differs by %g at %d", d, at)
	}
	if hasAVX2 {
		hasAVX2 = false
		goKernels := run(2, false)
		hasAVX2 = true
		if d, at := maxAbsDiff(goKernels, serial); d > 1e-4 {
			t.Errorf("Go kernels differ from assembly by %g at %d", d, at)
		}
	}
}

// attnBenchModel is a bare TinyLlama-shaped Model (no weights) with a
// one-layer cache holding n random positions of one sequence, and random
// queries for n tokens at positions 0..n-1.
func attnBenchModel(b *testing.B, n int, kv tensor.DType, kvHeads int) (*Model, *kvcache.Cache, *Batch) {
	m := &Model{Config: Config{Dim: 2048, HiddenDim: 5632, Layers: 1, Heads: 32, KVHeads: kvHeads, HeadDim: 64, Vocab: 32000, RopeDim: 64}}
	m.w.layers = make([]layerWeights, 1)
	c, err := kvcache.ForTokensType(kv, 1, m.KVDim(), n)
	if err != nil {
		b.Fatal(err)
	}
	s := &kvcache.Seq{}
	if err := c.Reserve(s, n); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	k, v := make([]float32, m.KVDim()), make([]float32, m.KVDim())
	for slot := range c.NumBlocks * c.BlockSize {
		for i := range k {
			k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		c.Store(0, slot, k, v)
	}
	bt := &Batch{Tokens: make([]int, n), Pos: make([]int, n), Seq: slices.Repeat([]*kvcache.Seq{s}, n)}
	for i := range n {
		bt.Pos[i] = i
	}
	m.ensure(n, n-1)
	for i := range m.ws.q {
		m.ws.q[i] = float32(r.NormFloat64())
	}
	return m, c, bt
}

// kvBenchTypes are the cache types the attention benchmarks run over.
var kvBenchTypes = []tensor.DType{tensor.F32, tensor.F16, tensor.Q8_0}

// BenchmarkAttnPrefill is one layer's attention of a 512-token prompt
// (TinyLlama shape: 32 heads, 4 KV heads, head dim 64) on one goroutine,
// per cache type.
func BenchmarkAttnPrefill(b *testing.B) {
	for _, kvh := range []struct {
		name string
		n    int
	}{{"gqa", 4}, {"mha", 32}} {
		for _, kv := range kvBenchTypes {
			b.Run(kvh.name+"/"+kv.String(), func(b *testing.B) { benchAttnPrefill(b, kv, kvh.n) })
		}
	}
}

func benchAttnPrefill(b *testing.B, kv tensor.DType, kvHeads int) {
	const n = 512
	m, c, bt := attnBenchModel(b, n, kv, kvHeads)
	cpu0 := cpuSeconds()
	for b.Loop() {
		m.attendRange(bt, c, 0, 0, attnBlocks(n, m.Heads/m.KVHeads)*m.KVHeads, m.ws.scores[0])
	}
	flops := 4.0 * float64(m.Heads*m.HeadDim) * float64(n*(n+1)/2) * float64(b.N)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu := cpuSeconds() - cpu0; cpu > 0 {
		b.ReportMetric(flops/cpu/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkAttnDecode is one layer's attention of one token at depth 1024,
// per cache type, with TinyLlama's 4 KV heads (gqa) and with 32 (mha: each
// K/V row serves one head, as in llama2.c's 110M).
func BenchmarkAttnDecode(b *testing.B) {
	for _, kvh := range []struct {
		name string
		n    int
	}{{"gqa", 4}, {"mha", 32}} {
		for _, kv := range kvBenchTypes {
			b.Run(kvh.name+"/"+kv.String(), func(b *testing.B) { benchAttnDecode(b, kv, kvh.n) })
		}
	}
}

func benchAttnDecode(b *testing.B, kv tensor.DType, kvHeads int) {
	const n = 1024
	m, c, bt := attnBenchModel(b, n, kv, kvHeads)
	one := &Batch{Tokens: bt.Tokens[:1], Pos: []int{n - 1}, Seq: bt.Seq[:1]}
	cpu0 := cpuSeconds()
	for b.Loop() {
		m.attendRange(one, c, 0, 0, m.KVHeads, m.ws.scores[0])
	}
	flops := 4.0 * float64(m.Heads*m.HeadDim) * n * float64(b.N)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu := cpuSeconds() - cpu0; cpu > 0 {
		b.ReportMetric(flops/cpu/1e9, "GFLOP/cpu-s")
	}
}

// TestCacheRun pins how positions map to runs of consecutive cache rows:
// a run ends at its block's boundary even when the next block id follows
// (so runs do not depend on the allocator: batch invariance), and never
// passes last.
func TestCacheRun(t *testing.T) {
	blocks := []int{3, 4, 5, 9, 10, 2}
	const bs = 4
	for _, tc := range []struct{ p, last, row, cnt int }{
		{0, 23, 12, 4}, // block 3 only, though 4 follows
		{5, 23, 17, 3}, // rest of 4
		{12, 23, 36, 4},
		{15, 23, 39, 1},
		{20, 23, 8, 4}, // block 2
		{0, 2, 12, 3},  // stops at last
		{2, 9, 14, 2},
	} {
		row, cnt := cacheRun(blocks, bs, tc.p, tc.last)
		if row != tc.row || cnt != tc.cnt {
			t.Errorf("cacheRun(p=%d, last=%d) = %d, %d; want %d, %d", tc.p, tc.last, row, cnt, tc.row, tc.cnt)
		}
	}
}
