package model

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"nanoserve/internal/hfwrite"
)

// TestQwen35MoEHF: a Qwen3.5-MoE Hugging Face directory (both layouts:
// Qwen3_5MoeForCausalLM and the vision-language model's language model)
// written from the qwen35moe fixture (routed experts one tensor each, the
// shared expert and its (1, dim) gate, value heads regrouped) loads with
// the GGUF's configuration and gives its logits bit for bit (ssm_a made
// representable as a float32 A_log first: exactHFSSMA).
func TestQwen35MoEHF(t *testing.T) {
	g, _ := archPath(t, "qwen35", "F16")
	path := exactHFSSMA(t, qwen35MoEFixture(t))
	mg := mustLoad(t, path, Options{Threads: 2})
	p := g.Prompts[0]
	toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
	lg := runSeq(t, mg, toks, 0)
	for _, vl := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("qwen35moe-", vl))
		if err := hfwrite.Qwen35FromGGUF(path, dir, vl); err != nil {
			t.Fatal(err)
		}
		mh := mustLoad(t, dir, Options{Threads: 2})
		a, b := mg.Config, mh.Config
		if a.Arch != b.Arch || a.Experts != b.Experts || a.ExpertsUsed != b.ExpertsUsed || a.ExpertHiddenDim != b.ExpertHiddenDim ||
			a.SharedExpertHiddenDim != b.SharedExpertHiddenDim || a.SSMKHeads != b.SSMKHeads || a.SSMVHeads != b.SSMVHeads ||
			!slices.Equal(a.Recurrent, b.Recurrent) || a.RopeDim != b.RopeDim || a.Tied != b.Tied || !b.AttnGate {
			t.Fatalf("vl %v: configs differ:\n gguf %+v\n   hf %+v", vl, a, b)
		}
		if lh := runSeq(t, mh, toks, 0); !slices.Equal(lg, lh) {
			d, at := maxAbsDiff(lg, lh)
			t.Errorf("vl %v: Hugging Face logits differ from the GGUF's by %g at %d", vl, d, at)
		}
	}
}
