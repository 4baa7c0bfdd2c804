package model

import (
	"slices"
	"testing"

	"nanoserve/kvcache"
)

// deltaStepScalar is the delta-net state update as the model ran it
// before tensor.DeltaStep (scalar Go, decay applied in the read pass),
// kept to measure old against new in one run.
func deltaStepScalar(out, S, q, k, v []float32, decay, beta float32) {
	d := len(k)
	for j := range out {
		row := S[j*d : (j+1)*d]
		var sk float32
		for i := range row {
			row[i] *= decay
			sk += row[i] * k[i]
		}
		e := beta * (v[j] - sk)
		var o float32
		for i := range row {
			row[i] += e * k[i]
			o += row[i] * q[i]
		}
		out[j] = o
	}
}

// BenchmarkHybridSynth: the synthetic Qwen3.5-0.8B (nanoserve bench
// --synthetic qwen35-0.8b --type q8_0 writes it), a 64-token and a
// 256-token prefill and 16-token decodes, with the delta rule as it was
// ("old": the scalar loop; "rowmajor": tensor.DeltaStep token by token on
// row-major states), now ("blocked": tensor.DeltaStepsBlocked where the
// CPU runs it, else as rowmajor) and chunked ("chunk32", "chunk64":
// tensor.DeltaChunked over each prefill, which the forward pass does not
// use), alternating within one run:
//
//	go test ./model -run '^$' -bench HybridSynth -benchtime 1x
func BenchmarkHybridSynth(b *testing.B) {
	m := mustLoad(b, synthPath(b, "qwen35-0.8b-q8_0-1"), Options{Threads: 2})
	c, err := m.NewCache(512)
	if err != nil {
		b.Fatal(err)
	}
	variants := []struct {
		name   string
		step   func(out, S, q, k, v []float32, decay, beta float32)
		rowMaj bool
		chunk  int
	}{{"old", deltaStepScalar, true, 0}, {"rowmajor", deltaStepFn, true, 0}, {"blocked", deltaStepFn, false, 0},
		{"chunk32", deltaStepFn, false, 32}, {"chunk64", deltaStepFn, false, 64}}
	for r := range 3 * len(variants) { // old, new, chunked, old, ...: the same load for all
		v := variants[r%len(variants)]
		run := func(b *testing.B, n int, chunk int) {
			saved, savedChunk, savedSw := deltaStepFn, deltaChunk, deltaStepSwapped
			deltaStepFn, deltaChunk, deltaStepSwapped = v.step, v.chunk, v.rowMaj
			defer func() { deltaStepFn, deltaChunk, deltaStepSwapped = saved, savedChunk, savedSw }()
			s := &kvcache.Seq{}
			if err := c.Reserve(s, n); err != nil {
				b.Fatal(err)
			}
			defer c.Release(s)
			cpu0 := cpuSeconds()
			for b.Loop() {
				for p := 0; p < n; p += chunk {
					k := min(chunk, n-p)
					bt := Batch{Tokens: make([]int, k), Pos: make([]int, k), Seq: slices.Repeat([]*kvcache.Seq{s}, k)}
					for i := range k {
						bt.Tokens[i], bt.Pos[i] = (7919*(p+i)+13)%m.Vocab, p+i
					}
					if _, err := m.Forward(bt, c); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportRate(b, n*b.N, cpu0)
		}
		b.Run("pp64-"+v.name, func(b *testing.B) { run(b, 64, 64) })
		b.Run("pp256-"+v.name, func(b *testing.B) { run(b, 256, 256) })
		if v.chunk == 0 {
			b.Run("tg16-"+v.name, func(b *testing.B) { run(b, 16, 1) })
		}
	}
}
