package model

import (
	"strings"
	"testing"

	"nanoserve/internal/hfwrite"
)

// TestGraniteHF: the synthetic tiny-granite (no RoPE) and tiny-granitemoe
// (RoPE, softmax experts, a shared expert) as transformers checkpoints
// (hfwrite.GraniteFromGGUF: Q/K rows in rotate-halves order, the fused
// input_linear tensors) load with their GGUF's config and give its logits
// bit for bit over 300 tokens; the configs llama.cpp would run otherwise
// are refused.
func TestGraniteHF(t *testing.T) {
	for _, tc := range []struct{ shape, arch, class string }{
		{"tiny-granite", ArchGranite, "GraniteForCausalLM"},
		{"tiny-granitemoe", ArchGraniteMoE, "GraniteMoeSharedForCausalLM"},
	} {
		t.Run(tc.shape, func(t *testing.T) {
			path := mustSynthetic(t, tc.shape, "f16", 1, "")
			write := func(t *testing.T, fields map[string]any) string {
				return writeHFEdited(t, hfwrite.GraniteFromGGUF, path, tc.shape, fields, nil)
			}
			mg := mustLoad(t, path, Options{Threads: 2})
			mh := mustLoad(t, write(t, nil), Options{Threads: 2})
			a, b := mg.Config, mh.Config
			if a.Arch != tc.arch || a.Arch != b.Arch || a.Dim != b.Dim || a.Layers != b.Layers || a.Heads != b.Heads || a.KVHeads != b.KVHeads ||
				a.HeadDim != b.HeadDim || a.HiddenDim != b.HiddenDim || a.Vocab != b.Vocab || a.NormEps != b.NormEps ||
				a.EmbedScale != b.EmbedScale || a.AttnScale != b.AttnScale || a.ResidualScale != b.ResidualScale || a.LogitScale != b.LogitScale ||
				a.RopeDim != b.RopeDim || a.RopeNeox != b.RopeNeox || a.RopeTheta != b.RopeTheta || a.Tied != b.Tied ||
				a.Experts != b.Experts || a.ExpertsUsed != b.ExpertsUsed || a.ExpertHiddenDim != b.ExpertHiddenDim ||
				a.SharedExpertHiddenDim != b.SharedExpertHiddenDim || a.ExpertGating != b.ExpertGating ||
				a.EmbedScale == 0 || a.AttnScale == 0 || a.ResidualScale == 0 || a.LogitScale == 0 ||
				(a.RopeDim == 0) != (tc.arch == ArchGranite) || (a.SharedExpertHiddenDim > 0) != (tc.arch == ArchGraniteMoE) {
				t.Fatalf("configs differ:\n gguf %+v\n   hf %+v", a, b)
			}
			checkSameLogits(t, mg, mh)

			for _, bad := range []struct {
				fields map[string]any
				want   string
			}{
				{map[string]any{"attention_multiplier": nil}, "no attention_multiplier"},
				{map[string]any{"residual_multiplier": 0}, "residual_multiplier 0"},
				{map[string]any{"head_dim": 8}, "head_dim 8"},
				{map[string]any{"position_embedding_type": "alibi"}, `position_embedding_type "alibi"`},
				{map[string]any{"mlp_bias": true}, "mlp_bias true"},
				{map[string]any{"hidden_act": "gelu"}, `hidden_act "gelu"`},
			} {
				_, err := Load(write(t, bad.fields), Options{Threads: 2})
				if err == nil || !strings.Contains(err.Error(), "config.json") || !strings.Contains(err.Error(), bad.want) {
					t.Errorf("config %v: err %v, want one naming %q", bad.fields, err, bad.want)
				}
			}
		})
	}
}
