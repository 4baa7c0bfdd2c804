package server

// Speculative decoding's counters (engine.Stats.Spec*) under three names:
// nanoserve's own, vLLM's and llama-server's, so dashboards built for
// either read a nanoserve server unchanged. Written only when the engine
// speculates (its per-position slice is then non-nil).
//
//	nanoserve_spec_drafts_total                         = vllm:spec_decode_num_drafts_total
//	                                                    = llamacpp:spec_decode_num_drafts_total
//	    verification steps: one sequence, one step, at least one proposal
//	nanoserve_spec_draft_tokens_total                   = vllm:spec_decode_num_draft_tokens_total
//	                                                    = llamacpp:spec_decode_num_draft_tokens_total
//	nanoserve_spec_accepted_tokens_total                = vllm:spec_decode_num_accepted_tokens_total
//	                                                    = llamacpp:spec_decode_num_accepted_tokens_total
//	nanoserve_spec_accepted_tokens_per_pos_total{position} = vllm:…_per_pos_total{position}
//	                                                    = llamacpp:…_per_pos_total{position}
//	    accepted proposals by their index in the proposal (0 = first)
//
// Acceptance rate = accepted_tokens / draft_tokens; mean accepted length
// per verification = accepted_tokens / drafts.

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"nanoserve/engine"
)

// specMetrics are the speculative-decoding series (none when the engine
// does not speculate); model labels the vllm:* ones.
func specMetrics(model string, st engine.Stats) []prometheus.Metric {
	if st.SpecAcceptedPerPos == nil {
		return nil
	}
	var out []prometheus.Metric
	for _, set := range []struct {
		prefix string
		vllm   bool
	}{
		{"nanoserve_spec_", false},
		{"vllm:spec_decode_num_", true},
		{"llamacpp:spec_decode_num_", false},
	} {
		var labels, values []string
		if set.vllm {
			labels, values = []string{"model_name"}, []string{model}
		}
		name := func(n string) string {
			if set.prefix == "nanoserve_spec_" {
				return set.prefix + strings.TrimPrefix(n, "num_")
			}
			return set.prefix + n
		}
		one := func(n, help string, v int64) {
			out = append(out, prometheus.MustNewConstMetric(prometheus.NewDesc(name(n), help, labels, nil),
				prometheus.CounterValue, float64(v), values...))
		}
		one("drafts_total", "Speculative verification steps (one sequence, one step, at least one proposed token).", st.SpecDrafts)
		one("draft_tokens_total", "Proposed (draft) tokens verified.", st.SpecDraftTokens)
		one("accepted_tokens_total", "Proposed tokens accepted by the target model.", st.SpecAcceptedTokens)
		perPos := prometheus.NewDesc(name("accepted_tokens_per_pos_total"),
			"Accepted proposed tokens by position in the proposal (0: first).", append(labels, "position"), nil)
		for i, v := range st.SpecAcceptedPerPos {
			out = append(out, prometheus.MustNewConstMetric(perPos, prometheus.CounterValue, float64(v), append(values, strconv.Itoa(i))...))
		}
	}
	return out
}
