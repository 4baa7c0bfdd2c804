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
	"fmt"
	"strconv"
	"strings"

	"nanoserve/engine"
)

// writeSpec writes the speculative-decoding families (nothing when the
// engine does not speculate); model labels the vllm:* series.
func writeSpec(b *strings.Builder, model string, st engine.Stats) {
	if st.SpecAcceptedPerPos == nil {
		return
	}
	ml := "model_name=" + strconv.Quote(model)
	for _, set := range []struct{ prefix, labels string }{
		{"nanoserve_spec_", ""},
		{"vllm:spec_decode_num_", ml},
		{"llamacpp:spec_decode_num_", ""},
	} {
		one := func(name, help string, v int64) {
			n := set.prefix + name
			if set.prefix == "nanoserve_spec_" {
				n = set.prefix + strings.TrimPrefix(name, "num_")
			}
			family(b, n, "counter", help)
			if set.labels != "" {
				fmt.Fprintf(b, "%s{%s} %d\n", n, set.labels, v)
			} else {
				fmt.Fprintf(b, "%s %d\n", n, v)
			}
		}
		one("drafts_total", "Speculative verification steps (one sequence, one step, at least one proposed token).", st.SpecDrafts)
		one("draft_tokens_total", "Proposed (draft) tokens verified.", st.SpecDraftTokens)
		one("accepted_tokens_total", "Proposed tokens accepted by the target model.", st.SpecAcceptedTokens)
		n := set.prefix + "accepted_tokens_per_pos_total"
		family(b, n, "counter", "Accepted proposed tokens by position in the proposal (0: first).")
		inner := ""
		if set.labels != "" {
			inner = set.labels + ","
		}
		for i, v := range st.SpecAcceptedPerPos {
			fmt.Fprintf(b, "%s{%sposition=\"%d\"} %d\n", n, inner, i, v)
		}
	}
}
