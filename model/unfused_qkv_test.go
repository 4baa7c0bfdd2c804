package model

import (
	"slices"
	"testing"

	"nanoserve/internal/testshared"
)

// The unfused Q/K/V path (three projections, each with its own bias) against
// ForwardRef. Every Qwen2 fixture loads with Q/K/V fused into one matrix, so
// without this test the unfused path's biases went unchecked (dropping the V
// bias passed every test). Here the Qwen2 model (Q/K/V biases) is un-fused
// after loading, then cached decode and chunked prefill must equal the
// reference.
func TestUnfusedQKVBiasParity(t *testing.T) {
	g := readLcppGolden(t, testshared.Path(t, "testdata/gguf/qwen2/qwen2-F16.json"))
	m := mustLoad(t, testshared.Path(t, "testdata/gguf/qwen2/"+g.GGUFFile), Options{Threads: 2})
	biased := 0
	for l := range m.w.layers {
		lw := &m.w.layers[l]
		if lw.bv != nil {
			biased++
		}
		lw.wqkv, lw.bqkv = nil, nil
	}
	if biased == 0 {
		t.Fatal("fixture: the Qwen2 model has no V bias")
	}
	p := g.Prompts[0]
	checkCacheParity(t, m, append(slices.Clone(p.PromptIDs), p.GeneratedIDs...), 1e-4)
}
