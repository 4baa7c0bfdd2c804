package model

import (
	"path/filepath"
	"slices"
	"testing"

	"nanoserve/internal/hfwrite"
)

// TestHFArchs writes each architecture fixture as a Hugging Face directory
// (hfwrite: transformers' names, un-permuted Llama/Mixtral Q/K, Gemma
// norms as 1 + w − 1, Phi-3's gate_up, one tensor per expert) and checks
// the loaded model's hyperparameters and logits against the GGUF's.
func TestHFArchs(t *testing.T) {
	for _, name := range []string{"qwen3", "qwen3moe", "mixtral", "gemma2", "gemma3", "phi3"} {
		t.Run(name, func(t *testing.T) {
			g, path := archPath(t, name, "F16")
			dir := filepath.Join(t.TempDir(), name)
			if err := hfwrite.FromGGUF(path, dir); err != nil {
				t.Fatal(err)
			}
			mg := mustLoad(t, path, Options{Threads: 2})
			mh := mustLoad(t, dir, Options{Threads: 2})
			a, b := mg.Config, mh.Config
			if a.Arch != b.Arch || a.HeadDim != b.HeadDim || a.QKNorm != b.QKNorm || a.Experts != b.Experts || a.ExpertsUsed != b.ExpertsUsed ||
				a.ExpertHiddenDim != b.ExpertHiddenDim || a.SlidingWindow != b.SlidingWindow || !slices.Equal(a.SWALayers, b.SWALayers) ||
				a.RopeThetaSWA != b.RopeThetaSWA || a.attnScale() != b.attnScale() || a.AttnSoftcap != b.AttnSoftcap || a.FinalSoftcap != b.FinalSoftcap ||
				a.EmbedScale != b.EmbedScale || a.PostNorms != b.PostNorms || a.GELUGate != b.GELUGate || a.Tied != b.Tied || a.RopeDim != b.RopeDim {
				t.Errorf("configs differ:\n gguf %+v\n   hf %+v", a, b)
			}
			p := g.Prompts[0]
			toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
			lg, lh := runSeq(t, mg, toks, 0), runSeq(t, mh, toks, 0)
			if d, at := maxAbsDiff(lg, lh); d > 1e-4 {
				t.Errorf("Hugging Face logits differ from the GGUF's by %g at %d", d, at)
			}
		})
	}
}
