package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"testing"

	"nanoserve/bench"
)

// prefixHits reads nanoserve_engine_prefix_hit_tokens_total off /metrics.
func prefixHits(t *testing.T, base string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^nanoserve_engine_prefix_hit_tokens_total(?:\{[^}]*\})? (\d+)`).FindStringSubmatch(getBody(t, base+"/metrics"))
	if m == nil {
		t.Fatal("/metrics has no nanoserve_engine_prefix_hit_tokens_total")
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestBenchServeEndToEnd runs `bench serve --json` against our own server
// on the built-in model: a shared-prefix workload, two streams at a time,
// every request exactly --output-len tokens (ignore_eos), token counts
// from the server's usage. With the prefix cache the shared system prompt
// is found in it; with --no-prefix-cache it never is.
func TestBenchServeEndToEnd(t *testing.T) {
	for _, c := range []struct {
		name     string
		args     []string
		wantHits bool
	}{
		{"prefix cache", nil, true},
		{"no prefix cache", []string{"--no-prefix-cache"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			runServer(t, append([]string{"--max-seqs", "4"}, c.args...), func(base string) {
				out, err := captureStdout(t, func() error {
					return runBench([]string{"serve", "--base-url", base, "--num-prompts", "4", "--concurrency", "2",
						"--input-len", "6", "--shared-prefix-len", "40", "--output-len", "8", "--warmup", "1", "--json"})
				})
				if err != nil {
					t.Fatal(err)
				}
				var res bench.ServeResult
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				if res.Completed != 4 || res.Failed != 0 || res.OutputTokens != 32 || !res.UsageReported ||
					res.InputTokens < 4*40 || res.Dataset != "shared-prefix" || res.Concurrency != 2 {
					t.Fatalf("result %+v", res)
				}
				if res.TTFT.N != 4 || res.TPOT.N != 4 || res.E2EL.N != 4 || res.ITL.N < 4 || res.TTFT.Mean <= 0 ||
					res.E2EL.Mean < res.TTFT.Mean || res.OutputThroughput <= 0 {
					t.Errorf("metrics %+v %+v %+v %+v, %g tok/s", res.TTFT, res.TPOT, res.ITL, res.E2EL, res.OutputThroughput)
				}
				if hits := prefixHits(t, base); (hits > 0) != c.wantHits {
					t.Errorf("prefix cache hit %d tokens; want hits: %v", hits, c.wantHits)
				}
			})
		})
	}
}
