package server

// vLLM's metric names, written beside the nanoserve_* set so routers and
// dashboards built for vLLM read a nanoserve server unchanged — above all
// the Gateway API Inference Extension's endpoint picker, which scrapes
// vllm:num_requests_waiting, vllm:num_requests_running,
// vllm:kv_cache_usage_perc and vllm:cache_config_info to route by queue
// depth and KV load. Every series carries model_name, the first served name.
//
// Mapping (same scrape, same snapshot):
//
//	vllm:num_requests_running            = nanoserve_engine_running_sequences
//	vllm:num_requests_waiting            = nanoserve_engine_waiting_requests
//	vllm:kv_cache_usage_perc             = nanoserve_engine_kv_blocks_used / nanoserve_engine_kv_blocks_total (0–1)
//	vllm:cache_config_info               = 1, labels block_size = nanoserve_engine_kv_block_size,
//	                                           num_gpu_blocks = nanoserve_engine_kv_blocks_total (CPU blocks here)
//	vllm:prefix_cache_queries_total      = nanoserve_engine_prefix_query_tokens_total (tokens, as vLLM counts)
//	vllm:prefix_cache_hits_total         = nanoserve_engine_prefix_hit_tokens_total
//	vllm:num_preemptions_total           = nanoserve_engine_preemptions_total
//	vllm:prompt_tokens_total             = nanoserve_prompt_tokens_total (finished generations)
//	vllm:generation_tokens_total         = nanoserve_generation_tokens_total
//	vllm:request_success_total{finished_reason} = nanoserve_generations_total{finish_reason},
//	                                           with "cancelled" spelled "abort" as vLLM does
//	vllm:time_to_first_token_seconds     = nanoserve_time_to_first_token_seconds (same buckets)
//	vllm:e2e_request_latency_seconds     = nanoserve_request_duration_seconds
//	vllm:inter_token_latency_seconds     = nanoserve_time_per_output_token_seconds

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"nanoserve/engine"
)

// vllmReason maps an engine finish reason to vLLM's finished_reason label.
func vllmReason(r string) string {
	if r == engine.FinishCancelled {
		return "abort"
	}
	return r
}

// writeVLLM writes the vllm:* families; m.mu is held by the caller.
func (m *metrics) writeVLLM(b *strings.Builder, model string, st engine.Stats) {
	ml := "model_name=" + strconv.Quote(model)
	one := func(name, typ, help string, v float64) {
		family(b, name, typ, help)
		fmt.Fprintf(b, "%s{%s} %s\n", name, ml, num(v))
	}
	one("vllm:num_requests_running", "gauge", "Requests in the running batch.", float64(st.Running))
	one("vllm:num_requests_waiting", "gauge", "Requests waiting to be scheduled (new or preempted).", float64(st.Waiting))
	usage := 0.0
	if st.KVBlocksTotal > 0 {
		usage = float64(st.KVBlocksUsed) / float64(st.KVBlocksTotal)
	}
	one("vllm:kv_cache_usage_perc", "gauge", "Fraction of KV cache blocks in use (1 = full).", usage)
	family(b, "vllm:cache_config_info", "gauge", "KV cache configuration (value 1; the configuration is in the labels).")
	fmt.Fprintf(b, "vllm:cache_config_info{%s,block_size=%q,num_gpu_blocks=%q} 1\n",
		ml, strconv.Itoa(st.KVBlockSize), strconv.Itoa(st.KVBlocksTotal))
	one("vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.", float64(st.PrefixQueryTokens))
	one("vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.", float64(st.PrefixHitTokens))
	one("vllm:num_preemptions_total", "counter", "Sequences preempted for lack of KV blocks.", float64(st.Preemptions))
	one("vllm:prompt_tokens_total", "counter", "Prompt tokens of finished requests.", m.prompt)
	one("vllm:generation_tokens_total", "counter", "Generated tokens of finished requests.", m.gen)
	family(b, "vllm:request_success_total", "counter", "Finished requests by finish reason (stop, length, abort, error).")
	byReason := map[string]float64{}
	for r, n := range m.finished {
		byReason[vllmReason(r)] += n
	}
	for _, r := range slices.Sorted(maps.Keys(byReason)) {
		fmt.Fprintf(b, "vllm:request_success_total{%s,finished_reason=%q} %s\n", ml, r, num(byReason[r]))
	}
	writeHistogramLabels(b, "vllm:time_to_first_token_seconds", "Seconds from request arrival to the first token.", ml, &m.ttft)
	writeHistogramLabels(b, "vllm:e2e_request_latency_seconds", "Seconds from request arrival to the end of the response.", ml, &m.e2e)
	writeHistogramLabels(b, "vllm:inter_token_latency_seconds", "Seconds between consecutive tokens of one request.", ml, &m.itl)
}
