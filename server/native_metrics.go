package server

// llama-server's metric names (llamacpp:*), beside nanoserve's and vLLM's,
// so dashboards built for llama-server read a nanoserve server unchanged.
// On a single-model server they carry no labels, as llama-server writes
// them; several models label them model_name like the rest.
//
//	llamacpp:prompt_tokens_total            prompt tokens evaluated (not reused from the cache)
//	llamacpp:prompt_tokens_cached_total     prompt tokens reused from the prefix cache
//	llamacpp:prompt_seconds_total           time evaluating prompts
//	llamacpp:tokens_predicted_total         generated tokens
//	llamacpp:tokens_predicted_seconds_total time generating after the first token
//	llamacpp:n_decode_total                 forward passes: engine steps + embedding passes
//	llamacpp:n_tokens_max                   most positions one request held (prompt + generated)
//	llamacpp:prompt_tokens_seconds          prompt tokens per second, over all requests
//	llamacpp:predicted_tokens_seconds       generated tokens per second, over the decode steps
//	llamacpp:requests_processing            sequences running (= nanoserve_engine_running_sequences)
//	llamacpp:requests_deferred              requests waiting (= nanoserve_engine_waiting_requests)
//	llamacpp:n_busy_slots_per_decode        mean sequences per engine step
//	llamacpp:spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total
//	                                        speculative decoding (metrics_spec.go; zero when off)
//
// The request counters are the finished generations' and embeddings'
// (llamaCounters, fed by the pipeline and the embeddings handler); the
// gauges are the engine's snapshot of the same scrape.

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"nanoserve/engine"
)

// llamaCounters accumulate what llama-server counts per request.
type llamaCounters struct {
	mu                     sync.Mutex
	promptN, cachedN       int64
	promptMs               float64
	predictedN, decodeStep int64 // tokens; decode steps (tokens after each request's first)
	predictedMs            float64
	embedPasses            int64
	nTokensMax             int64
}

// count adds a finished generation.
func (c *llamaCounters) count(res *engine.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.promptN += int64(res.Usage.PromptTokens - res.Usage.CachedTokens)
	c.cachedN += int64(res.Usage.CachedTokens)
	c.promptMs += res.Timings.PrefillMs
	n := int64(len(res.IDs))
	c.predictedN += n
	if n > 1 {
		c.decodeStep += n - 1
	}
	c.predictedMs += res.Timings.DecodeMs
	c.nTokensMax = max(c.nTokensMax, int64(res.Usage.PromptTokens)+n)
}

// embedded adds an embeddings request: its tokens were evaluated in passes
// forward passes.
func (c *llamaCounters) embedded(tokens, passes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.promptN += int64(tokens)
	c.embedPasses += int64(passes)
	c.nTokensMax = max(c.nTokensMax, int64(tokens))
}

// llamaMetrics are the llamacpp:* series of one model server.
func (c *llamaCounters) metrics(st engine.Stats) []prometheus.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	rate := func(n int64, ms float64) float64 {
		if n <= 0 || ms <= 0 {
			return 0
		}
		return 1000 * float64(n) / ms
	}
	perStep := 0.0
	if st.Steps > 0 {
		perStep = float64(st.StepSeqs) / float64(st.Steps)
	}
	gs := []gauge{
		{name: "llamacpp:prompt_tokens_total", help: "Prompt tokens evaluated (not reused from the cache).", value: float64(c.promptN), counter: true},
		{name: "llamacpp:prompt_tokens_cached_total", help: "Prompt tokens reused from the prefix cache.", value: float64(c.cachedN), counter: true},
		{name: "llamacpp:prompt_seconds_total", help: "Seconds spent evaluating prompts.", value: c.promptMs / 1000, counter: true},
		{name: "llamacpp:tokens_predicted_total", help: "Generated tokens.", value: float64(c.predictedN), counter: true},
		{name: "llamacpp:tokens_predicted_seconds_total", help: "Seconds spent generating (after each request's first token).", value: c.predictedMs / 1000, counter: true},
		{name: "llamacpp:n_decode_total", help: "Forward passes (engine steps and embedding passes).", value: float64(st.Steps + c.embedPasses), counter: true},
		{name: "llamacpp:n_tokens_max", help: "Most positions one request held (prompt and generated tokens).", value: float64(c.nTokensMax), counter: true},
		{name: "llamacpp:prompt_tokens_seconds", help: "Prompt tokens evaluated per second.", value: rate(c.promptN, c.promptMs)},
		{name: "llamacpp:predicted_tokens_seconds", help: "Tokens generated per second over the decode steps.", value: rate(c.decodeStep, c.predictedMs)},
		{name: "llamacpp:requests_processing", help: "Sequences running.", value: float64(st.Running)},
		{name: "llamacpp:requests_deferred", help: "Requests waiting for a sequence.", value: float64(st.Waiting)},
		{name: "llamacpp:n_busy_slots_per_decode", help: "Mean sequences per engine step.", value: perStep},
	}
	if st.SpecAcceptedPerPos == nil {
		// Speculation off: llama-server still writes its counters, at 0
		// (metrics_spec.go writes them when it is on).
		for _, n := range []string{"drafts_total", "draft_tokens_total", "accepted_tokens_total"} {
			gs = append(gs, gauge{name: "llamacpp:spec_decode_num_" + n, help: "Speculative decoding (off).", counter: true})
		}
	}
	return gaugeMetrics(gs)
}

// llamaFamilies gathers the llamacpp:* families of one model server.
func (c *llamaCounters) families(st engine.Stats) ([]*dto.MetricFamily, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(constCollector(c.metrics(st)))
	return reg.Gather()
}

// isLlamaMetric reports whether a family is one of llama-server's names.
func isLlamaMetric(f *dto.MetricFamily) bool {
	return len(f.GetName()) > 9 && f.GetName()[:9] == "llamacpp:"
}
