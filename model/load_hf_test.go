package model

import (
	"nanoserve/internal/testshared"
	"path/filepath"
	"slices"
	"testing"
)

// TestHFGoldens runs the Hugging Face copies of the GGUF golden models (F32
// safetensors holding the same values): same greedy tokens and logprobs as
// llama.cpp, and the cached forward matches the reference.
func TestHFGoldens(t *testing.T) {
	dir := hfFixtures(t)
	for _, name := range ggufModels {
		t.Run(name, func(t *testing.T) {
			g := readLcppGolden(t, testshared.Path(t, "testdata/gguf/"+name+"/"+name+"-F16.json"))
			m := mustLoad(t, filepath.Join(dir, name), Options{Threads: 2})
			if m.Format != "hf" || !m.RopeNeox && m.Arch != ArchGPT2 {
				t.Errorf("config %+v", m.Config)
			}
			checkLcppGolden(t, m, g, 0.05, true, true)
			p := g.Prompts[0]
			checkCacheParity(t, m, append(slices.Clone(p.PromptIDs), p.GeneratedIDs[:8]...), 1e-4)
		})
	}
}

// TestHFMatchesGGUF: the HF and GGUF loads of one model give the same logits.
func TestHFMatchesGGUF(t *testing.T) {
	dir := hfFixtures(t)
	for _, name := range ggufModels {
		hf := mustLoad(t, filepath.Join(dir, name), Options{})
		gg := mustLoad(t, testshared.Path(t, "testdata/gguf/"+name+"/"+name+"-F16.gguf"), Options{})
		toks := []int{1, 2, 3, 100, 200, 300, 4000, 5000}
		a, b := runSeq(t, hf, toks, 0), runSeq(t, gg, toks, 0)
		if d, at := maxAbsDiff(a, b); d > 1e-3 {
			t.Errorf("%s: HF and GGUF logits differ by %g at %d", name, d, at)
		}
		if hf.Gen.Sampling == nil || len(hf.Gen.EOG) == 0 {
			t.Errorf("%s: generation defaults %+v", name, hf.Gen)
		}
	}
}
