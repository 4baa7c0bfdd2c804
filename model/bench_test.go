package model

import (
	"slices"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/kvcache"
)

func benchModel(b *testing.B) *Model {
	return mustLoad(b, testshared.Path(b, "testdata/gguf/llama_k/llama_k-Q4_K_M.gguf"), Options{Threads: 2})
}

// BenchmarkPrefill runs a 128-token prompt as one batch.
func BenchmarkPrefill(b *testing.B) {
	m := benchModel(b)
	const n = 128
	c, _ := m.NewCache(n)
	s := &kvcache.Seq{}
	if err := c.Reserve(s, n); err != nil {
		b.Fatal(err)
	}
	bt := Batch{Tokens: make([]int, n), Pos: make([]int, n), Seq: slices.Repeat([]*kvcache.Seq{s}, n)}
	for i := range n {
		bt.Tokens[i], bt.Pos[i] = 100+i, i
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Forward(bt, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkDecode runs single-token steps at positions 64..127.
func BenchmarkDecode(b *testing.B) {
	m := benchModel(b)
	c, _ := m.NewCache(128)
	s := &kvcache.Seq{}
	if err := c.Reserve(s, 128); err != nil {
		b.Fatal(err)
	}
	bt := Batch{Tokens: make([]int, 64), Pos: make([]int, 64), Seq: slices.Repeat([]*kvcache.Seq{s}, 64)}
	for i := range 64 {
		bt.Tokens[i], bt.Pos[i] = 100+i, i
	}
	if _, err := m.Forward(bt, c); err != nil {
		b.Fatal(err)
	}
	step := Batch{Tokens: []int{5}, Pos: []int{0}, Seq: []*kvcache.Seq{s}}
	p := 64
	b.ResetTimer()
	for b.Loop() {
		step.Pos[0] = p
		if _, err := m.Forward(step, c); err != nil {
			b.Fatal(err)
		}
		if p++; p == 128 {
			p = 64
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
