package server

// vLLM's metric names, written beside the nanoserve_* set so routers and
// dashboards built for vLLM read a nanoserve server unchanged — above all
// the Gateway API Inference Extension's endpoint picker, which scrapes
// vllm:num_requests_waiting, vllm:num_requests_running,
// vllm:kv_cache_usage_perc and vllm:cache_config_info to route by queue
// depth and KV load. Every series carries model_name, the first served name.
//
// Mapping (same scrape, same snapshot; the vllm:* copies of the
// instruments are made from the values the registry just gathered):
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
	"maps"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"nanoserve/engine"
)

// vllmReason maps an engine finish reason to vLLM's finished_reason label.
func vllmReason(r string) string {
	if r == engine.FinishCancelled {
		return "abort"
	}
	return r
}

// vllmGauges are the vllm:* series read from the engine at scrape time.
func vllmGauges(model string, st engine.Stats) []prometheus.Metric {
	one := func(name, help string, typ prometheus.ValueType, v float64) prometheus.Metric {
		return prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, []string{"model_name"}, nil), typ, v, model)
	}
	usage := 0.0
	if st.KVBlocksTotal > 0 {
		usage = float64(st.KVBlocksUsed) / float64(st.KVBlocksTotal)
	}
	return []prometheus.Metric{
		one("vllm:num_requests_running", "Requests in the running batch.", prometheus.GaugeValue, float64(st.Running)),
		one("vllm:num_requests_waiting", "Requests waiting to be scheduled (new or preempted).", prometheus.GaugeValue, float64(st.Waiting)),
		one("vllm:kv_cache_usage_perc", "Fraction of KV cache blocks in use (1 = full).", prometheus.GaugeValue, usage),
		prometheus.MustNewConstMetric(prometheus.NewDesc("vllm:cache_config_info",
			"KV cache configuration (value 1; the configuration is in the labels).",
			[]string{"model_name", "block_size", "num_gpu_blocks"}, nil), prometheus.GaugeValue, 1,
			model, strconv.Itoa(st.KVBlockSize), strconv.Itoa(st.KVBlocksTotal)),
		one("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", prometheus.CounterValue, float64(st.PrefixQueryTokens)),
		one("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", prometheus.CounterValue, float64(st.PrefixHitTokens)),
		one("vllm:num_preemptions_total", "Sequences preempted for lack of KV blocks.", prometheus.CounterValue, float64(st.Preemptions)),
	}
}

// vllmMirrors gives vLLM's names to the instruments in fams (gathered from
// a server's registry): the same values, labelled model_name.
func vllmMirrors(fams []*dto.MetricFamily, model string) []*dto.MetricFamily {
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	label := func() []*dto.LabelPair {
		name := "model_name"
		return []*dto.LabelPair{{Name: &name, Value: &model}}
	}
	var out []*dto.MetricFamily
	copyAs := func(from, to, help string) {
		f := byName[from]
		if f == nil {
			return
		}
		g := &dto.MetricFamily{Name: &to, Help: &help, Type: f.Type}
		for _, s := range f.Metric {
			g.Metric = append(g.Metric, &dto.Metric{Label: append(label(), s.Label...), Counter: s.Counter, Gauge: s.Gauge, Histogram: s.Histogram})
		}
		out = append(out, g)
	}
	copyAs("nanoserve_prompt_tokens_total", "vllm:prompt_tokens_total", "Prompt tokens of finished requests.")
	copyAs("nanoserve_generation_tokens_total", "vllm:generation_tokens_total", "Generated tokens of finished requests.")
	if f := byName["nanoserve_generations_total"]; f != nil {
		byReason := map[string]float64{}
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if l.GetName() == "finish_reason" {
					byReason[vllmReason(l.GetValue())] += s.GetCounter().GetValue()
				}
			}
		}
		name, help, typ := "vllm:request_success_total", "Finished requests by finish reason (stop, length, abort, error).", dto.MetricType_COUNTER
		g := &dto.MetricFamily{Name: &name, Help: &help, Type: &typ}
		for _, r := range slices.Sorted(maps.Keys(byReason)) {
			ln, v := "finished_reason", byReason[r]
			g.Metric = append(g.Metric, &dto.Metric{Label: append(label(), &dto.LabelPair{Name: &ln, Value: &r}),
				Counter: &dto.Counter{Value: &v}})
		}
		if len(g.Metric) > 0 {
			out = append(out, g)
		}
	}
	copyAs("nanoserve_time_to_first_token_seconds", "vllm:time_to_first_token_seconds", "Seconds from request arrival to the first token.")
	copyAs("nanoserve_request_duration_seconds", "vllm:e2e_request_latency_seconds", "Seconds from request arrival to the end of the response.")
	copyAs("nanoserve_time_per_output_token_seconds", "vllm:inter_token_latency_seconds", "Seconds between consecutive tokens of one request.")
	return out
}
