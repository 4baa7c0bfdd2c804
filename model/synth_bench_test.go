package model

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// Benchmarks on the synthetic full-size models that `nanoserve bench
// --synthetic` writes (package bench) into os.TempDir()/nanoserve-bench,
// e.g. tinyllama-1.1b-f16-1.gguf. They skip when the file is absent; write
// it first with
//
//	nanoserve bench --synthetic tinyllama --type f16
//
// Run them one type at a time, e.g.
//
//	go test ./model -run '^$' -bench 'Synth/tinyllama-1.1b-f16' -benchtime 20x
//
// Beside tok/s each reports tok/cpu-s: tokens per CPU-second of the whole
// process (user+system), which stays meaningful on a machine shared with
// other jobs, and cpu-ms/tok.

var synthModels = []string{
	"tinyllama-1.1b-f16-1", "tinyllama-1.1b-q8_0-1", "tinyllama-1.1b-q4_k_m-1",
	"llama2c-110m-f16-1", "llama2c-110m-q8_0-1",
	"moe-mini-q4_k_m-1", "moe-mini-dense-q4_k_m-1", // MoE decode vs the same active parameters dense
}

func synthPath(b *testing.B, name string) string {
	p := filepath.Join(os.TempDir(), "nanoserve-bench", name+".gguf")
	if _, err := os.Stat(p); err != nil {
		b.Skipf("synthetic model %s not written (nanoserve bench --synthetic)", p)
	}
	return p
}

func reportRate(b *testing.B, tokens int, cpu0 float64) {
	cpu := cpuSeconds() - cpu0
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tok/s")
	if cpu > 0 {
		b.ReportMetric(float64(tokens)/cpu, "tok/cpu-s")
	}
}

// BenchmarkSynth runs, per synthetic model, a 512-token prefill (one
// Forward of 512 tokens into a fresh sequence) and single-token decode
// steps at positions 0..127 (rewound, as llama-bench's tg128).
func BenchmarkSynth(b *testing.B) {
	for _, name := range synthModels {
		b.Run(name, func(b *testing.B) {
			m := mustLoad(b, synthPath(b, name), Options{Threads: 2})
			c, err := m.NewCache(2048)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("pp512", func(b *testing.B) {
				const n = 512
				s := &kvcache.Seq{}
				if err := c.Reserve(s, n); err != nil {
					b.Fatal(err)
				}
				defer c.Release(s)
				bt := Batch{Tokens: make([]int, n), Pos: make([]int, n), Seq: slices.Repeat([]*kvcache.Seq{s}, n)}
				for i := range n {
					bt.Tokens[i], bt.Pos[i] = (7919*i+13)%m.Vocab, i
				}
				if _, err := m.Forward(bt, c); err != nil { // warm-up
					b.Fatal(err)
				}
				cpu0 := cpuSeconds()
				b.ResetTimer()
				for b.Loop() {
					if _, err := m.Forward(bt, c); err != nil {
						b.Fatal(err)
					}
				}
				reportRate(b, n*b.N, cpu0)
			})
			b.Run("tg128", func(b *testing.B) {
				s := &kvcache.Seq{}
				if err := c.Reserve(s, 128); err != nil {
					b.Fatal(err)
				}
				defer c.Release(s)
				step := Batch{Tokens: []int{5}, Pos: []int{0}, Seq: []*kvcache.Seq{s}}
				p := 0
				run := func() {
					step.Pos[0], step.Tokens[0] = p, (7919*p+13)%m.Vocab
					if _, err := m.Forward(step, c); err != nil {
						b.Fatal(err)
					}
					if p++; p == 128 {
						p = 0
					}
				}
				for range 4 {
					run()
				}
				cpu0 := cpuSeconds()
				b.ResetTimer()
				for b.Loop() {
					run()
				}
				reportRate(b, b.N, cpu0)
			})
			// Decode at depth 1024: the cache rows of positions 0..1023
			// are filled with random values instead of a prefill (the
			// cost of attention does not depend on them).
			b.Run("tg32-d1024", func(b *testing.B) {
				const depth = 1024
				s := &kvcache.Seq{}
				if err := c.Reserve(s, depth+32); err != nil {
					b.Fatal(err)
				}
				defer c.Release(s)
				fillRandomKV(c, s, depth)
				s.Len = depth
				step := Batch{Tokens: []int{5}, Pos: []int{0}, Seq: []*kvcache.Seq{s}}
				p := depth
				run := func() {
					step.Pos[0], step.Tokens[0] = p, (7919*p+13)%m.Vocab
					if _, err := m.Forward(step, c); err != nil {
						b.Fatal(err)
					}
					if p++; p == depth+32 {
						p = depth
					}
				}
				for range 2 {
					run()
				}
				cpu0 := cpuSeconds()
				b.ResetTimer()
				for b.Loop() {
					run()
				}
				reportRate(b, b.N, cpu0)
			})
		})
	}
}

// fillRandomKV stores seeded random K/V rows for positions [0, depth) of s
// in every layer.
func fillRandomKV(c *kvcache.Cache, s *kvcache.Seq, depth int) {
	r := uint32(1)
	k, v := make([]float32, c.KVDim), make([]float32, c.KVDim)
	for l := range c.Layers {
		for p := range depth {
			for i := range c.KVDim {
				r = r*1664525 + 1013904223
				k[i] = float32(int32(r)>>8) / (1 << 23)
				v[i] = float32(int32(r)>>9) / (1 << 23)
			}
			c.Store(l, c.Slot(s, p), k, v)
		}
	}
}

// BenchmarkSynthKV decodes 32 tokens at depth 1024 per synthetic model and
// KV cache type (F32, F16, Q8_0; the cache rows filled with random values),
// the attention-heavy case where the cache's bytes matter.
func BenchmarkSynthKV(b *testing.B) {
	for _, name := range synthModels {
		b.Run(name, func(b *testing.B) {
			m := mustLoad(b, synthPath(b, name), Options{Threads: 2})
			for _, kv := range []tensor.DType{tensor.F32, tensor.F16, tensor.Q8_0} {
				b.Run("tg32-d1024-"+kv.String(), func(b *testing.B) {
					const depth = 1024
					c, err := m.NewCacheType(depth+32, kv)
					if err != nil {
						b.Skip(err) // Q8_0 on a head dim not a multiple of 32
					}
					s := &kvcache.Seq{}
					if err := c.Reserve(s, depth+32); err != nil {
						b.Fatal(err)
					}
					fillRandomKV(c, s, depth)
					s.Len = depth
					step := Batch{Tokens: []int{5}, Pos: []int{0}, Seq: []*kvcache.Seq{s}}
					p := depth
					run := func() {
						step.Pos[0], step.Tokens[0] = p, (7919*p+13)%m.Vocab
						if _, err := m.Forward(step, c); err != nil {
							b.Fatal(err)
						}
						if p++; p == depth+32 {
							p = depth
						}
					}
					for range 2 {
						run()
					}
					cpu0 := cpuSeconds()
					b.ResetTimer()
					for b.Loop() {
						run()
					}
					reportRate(b, b.N, cpu0)
				})
			}
		})
	}
}

// BenchmarkSynthStreams decodes B sequences in lockstep — one Forward of
// B tokens (one per sequence) per step, positions 0..127 rewound, as a
// server's decode step with B streams and short prompts — for B = 1, 2,
// 4, 8, 16, 32. tok/s counts all B tokens of a step; compare the ratio to
// B = 1 (the serving target of issue 16: ≥ 4× at B = 8 on TinyLlama Q8_0).
// Run one model at a time, e.g.
//
//	go test ./model -run '^$' -bench 'SynthStreams/tinyllama-1.1b-q8_0' -benchtime 32x
func BenchmarkSynthStreams(b *testing.B) {
	for _, name := range synthModels {
		b.Run(name, func(b *testing.B) {
			benchStreams(b, mustLoad(b, synthPath(b, name), Options{Threads: 2}), []int{1, 2, 4, 8, 16, 32})
		})
	}
}

// benchStreams runs BenchmarkSynthStreams's lockstep decode of B sequences
// on m for each B of bs.
func benchStreams(b *testing.B, m *Model, bs []int) {
	c, err := m.NewCacheType(32*128, tensor.F16)
	if err != nil {
		b.Fatal(err)
	}
	for _, B := range bs {
		b.Run(fmt.Sprintf("B=%d", B), func(b *testing.B) {
			seqs := make([]*kvcache.Seq, B)
			for i := range seqs {
				seqs[i] = &kvcache.Seq{}
				if err := c.Reserve(seqs[i], 128); err != nil {
					b.Fatal(err)
				}
			}
			defer func() {
				for _, s := range seqs {
					c.Release(s)
				}
			}()
			step := Batch{Tokens: make([]int, B), Pos: make([]int, B), Seq: seqs, Output: make([]bool, B)}
			p := 0
			run := func() {
				for i := range B {
					step.Pos[i], step.Tokens[i], step.Output[i] = p, (7919*(p+i)+13)%m.Vocab, true
				}
				if _, err := m.Forward(step, c); err != nil {
					b.Fatal(err)
				}
				if p++; p == 128 {
					p = 0
				}
			}
			for range 2 {
				run()
			}
			cpu0 := cpuSeconds()
			b.ResetTimer()
			for b.Loop() {
				run()
			}
			reportRate(b, B*b.N, cpu0)
		})
	}
}
