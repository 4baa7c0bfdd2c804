package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/expfmt"

	"nanoserve/engine"
)

func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Error(err)
		return nil
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return parseMetrics(t, string(b))
}

// checkVLLM checks every vllm:* series of one scrape against the nanoserve_*
// series it mirrors (the mapping documented in metrics_vllm.go).
func checkVLLM(t *testing.T, m map[string]float64, model string) {
	t.Helper()
	ml := `{model_name="` + model + `"}`
	eq := func(vllm, ours string) {
		t.Helper()
		v, ok1 := m[vllm]
		o, ok2 := m[ours]
		if !ok1 || !ok2 || v != o {
			t.Errorf("%s = %v (present %v), %s = %v (present %v)", vllm, v, ok1, ours, o, ok2)
		}
	}
	eq("vllm:num_requests_running"+ml, "nanoserve_engine_running_sequences")
	eq("vllm:num_requests_waiting"+ml, "nanoserve_engine_waiting_requests")
	eq("vllm:prefix_cache_queries_total"+ml, "nanoserve_engine_prefix_query_tokens_total")
	eq("vllm:prefix_cache_hits_total"+ml, "nanoserve_engine_prefix_hit_tokens_total")
	eq("vllm:num_preemptions_total"+ml, "nanoserve_engine_preemptions_total")
	eq("vllm:prompt_tokens_total"+ml, "nanoserve_prompt_tokens_total")
	eq("vllm:generation_tokens_total"+ml, "nanoserve_generation_tokens_total")
	for _, h := range [][2]string{
		{"vllm:time_to_first_token_seconds", "nanoserve_time_to_first_token_seconds"},
		{"vllm:e2e_request_latency_seconds", "nanoserve_request_duration_seconds"},
		{"vllm:inter_token_latency_seconds", "nanoserve_time_per_output_token_seconds"},
	} {
		eq(h[0]+"_count"+ml, h[1]+"_count")
		eq(h[0]+"_sum"+ml, h[1]+"_sum")
		eq(h[0]+`_bucket{model_name="`+model+`",le="+Inf"}`, h[1]+`_bucket{le="+Inf"}`)
		eq(h[0]+`_bucket{model_name="`+model+`",le="0.1"}`, h[1]+`_bucket{le="0.1"}`)
	}
	for _, r := range []string{"stop", "length"} { // both absent before the first request finishes
		v, ok1 := m[`vllm:request_success_total{model_name="`+model+`",finished_reason="`+r+`"}`]
		o, ok2 := m[`nanoserve_generations_total{finish_reason="`+r+`"}`]
		if ok1 != ok2 || v != o {
			t.Errorf("request_success %s: vllm %v (%v), nanoserve %v (%v)", r, v, ok1, o, ok2)
		}
	}
	usage, ok := m["vllm:kv_cache_usage_perc"+ml]
	want := m["nanoserve_engine_kv_blocks_used"] / m["nanoserve_engine_kv_blocks_total"]
	if !ok || usage != want || usage < 0 || usage > 1 {
		t.Errorf("vllm:kv_cache_usage_perc = %v (present %v), want %v in [0, 1]", usage, ok, want)
	}
	info := fmt.Sprintf(`vllm:cache_config_info{model_name=%q,block_size="%d",num_gpu_blocks="%d"}`,
		model, int(m["nanoserve_engine_kv_block_size"]), int(m["nanoserve_engine_kv_blocks_total"]))
	if m[info] != 1 {
		t.Errorf("%s missing or not 1 (series: %v)", info, seriesWith(m, "cache_config"))
	}
}

func seriesWith(m map[string]float64, sub string) []string {
	var out []string
	for k := range m {
		if strings.Contains(k, sub) {
			out = append(out, k)
		}
	}
	return out
}

// TestVLLMMetricsUnderLoad scrapes /metrics while 12 requests run and
// checks every scrape's vllm:* series against the nanoserve_* ones, then
// the totals.
func TestVLLMMetricsUnderLoad(t *testing.T) {
	ts := newTestServer(t, nil)
	const n, maxTokens = 12, 16
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := i%2 == 0
			body := fmt.Sprintf(`{"prompt":"Once upon a time %d","max_tokens":%d,"temperature":0,"ignore_eos":true,"stream":%v}`, i, maxTokens, stream)
			resp, err := http.Post(ts.url+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	go func() { wg.Wait(); close(done) }()
	scrapes := 0
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		default:
		}
		checkVLLM(t, scrape(t, ts.url), testModel)
		scrapes++
	}
	m := scrape(t, ts.url)
	checkVLLM(t, m, testModel)
	ml := `{model_name="` + testModel + `"}`
	if got := m[`vllm:request_success_total{model_name="`+testModel+`",finished_reason="length"}`]; got != n {
		t.Errorf("vllm:request_success_total{length} = %v, want %d", got, n)
	}
	if got := m["vllm:generation_tokens_total"+ml]; got != n*maxTokens {
		t.Errorf("vllm:generation_tokens_total = %v, want %d", got, n*maxTokens)
	}
	if got := m["vllm:e2e_request_latency_seconds_count"+ml]; got != n {
		t.Errorf("e2e count %v, want %d", got, n)
	}
	t.Logf("%d scrapes during the load", scrapes)
}

// TestVLLMReasonsAndUsage: cancelled requests count as vLLM's "abort", and
// the KV usage is the used fraction of all blocks.
func TestVLLMReasonsAndUsage(t *testing.T) {
	m := newMetrics()
	m.finished.WithLabelValues(engine.FinishCancelled).Add(2)
	m.finished.WithLabelValues(engine.FinishStop).Add(3)
	fams, err := m.gather("x", engine.Stats{KVBlocksUsed: 3, KVBlocksTotal: 12, KVBlockSize: 16}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	got := parseMetrics(t, b.String())
	for series, want := range map[string]float64{
		`vllm:request_success_total{model_name="x",finished_reason="abort"}`:         2,
		`vllm:request_success_total{model_name="x",finished_reason="stop"}`:          3,
		`vllm:kv_cache_usage_perc{model_name="x"}`:                                   0.25,
		`vllm:cache_config_info{model_name="x",block_size="16",num_gpu_blocks="12"}`: 1,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
}
