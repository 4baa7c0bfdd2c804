package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"nanoserve/engine"
)

// parseMetrics checks the Prometheus text format line by line and returns
// every sample by its series name (with labels).
func parseMetrics(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	typed := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || !(f[1] == "counter" || f[1] == "gauge" || f[1] == "histogram" || f[1] == "summary") {
				t.Fatalf("bad TYPE line %q", line)
			}
			typed[f[0]] = f[1]
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("bad sample line %q", line)
		}
		series, val := line[:i], line[i+1:]
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("bad value in %q", line)
		}
		name, labels, hasLabels := strings.Cut(series, "{")
		if hasLabels && !strings.HasSuffix(labels, "}") {
			t.Fatalf("bad labels in %q", line)
		}
		base := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && (typed[b] == "histogram" || typed[b] == "summary") {
				base = b
			}
		}
		if typed[base] == "" {
			t.Fatalf("sample %q has no TYPE line", line)
		}
		out[series] = v
		// A model's series carry its model_name (a server is a table of
		// models): tests of one model also read them without it.
		if i := strings.Index(labels, `model_name="`); hasLabels && i >= 0 {
			j := strings.IndexByte(labels[i+len(`model_name="`):], '"') + i + len(`model_name="`) + 1
			rest := strings.TrimPrefix(labels[:i]+labels[j:], ",")
			rest = strings.Replace(rest, ",}", "}", 1)
			plain := name
			if rest != "}" {
				plain += "{" + rest
			}
			if _, dup := out[plain]; !dup {
				out[plain] = v
			}
		}
	}
	return out
}

func metricValue(t *testing.T, ts *testServer, series string) float64 {
	t.Helper()
	resp, err := http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return parseMetrics(t, string(b))[series]
}

func TestMetrics(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.post(t, "/v1/completions", `{"prompt":"Once","max_tokens":5,"temperature":0}`)
	ts.post(t, "/v1/completions", `{"prompt":"Once","max_tokens":5,"temperature":0,"stream":true}`)
	ts.post(t, "/v1/completions", `{"prompt":"Once","top_p":7}`)
	resp, err := http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	m := parseMetrics(t, string(b))
	for series, want := range map[string]float64{
		`nanoserve_requests_total{endpoint="completions",status="200"}`: 2,
		`nanoserve_requests_total{endpoint="completions",status="400"}`: 1,
		`nanoserve_generations_total{finish_reason="length"}`:           2,
		`nanoserve_generation_tokens_total`:                             10,
		`nanoserve_time_to_first_token_seconds_count`:                   2,
		`nanoserve_time_to_first_token_seconds_bucket{le="+Inf"}`:       2,
		`nanoserve_time_per_output_token_seconds_count`:                 8,
		`nanoserve_request_duration_seconds_count`:                      2,
		`nanoserve_requests_in_flight`:                                  1, // this scrape
		`nanoserve_generations_running`:                                 0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	ids, _ := ts.eng.Encode(&engine.Request{Prompt: "Once"})
	if got := m["nanoserve_prompt_tokens_total"]; got != float64(2*len(ids)) {
		t.Errorf("prompt tokens %v, want %d", got, 2*len(ids))
	}
	if m["nanoserve_kv_cache_bytes"] <= 0 || m["nanoserve_engine_kv_blocks_total"] <= 0 || m["nanoserve_engine_requests_total"] < 2 {
		t.Error("engine gauges missing")
	}
}

func TestModelsAndHealth(t *testing.T) {
	ts := newTestServer(t, nil)
	resp, err := http.Get(ts.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list struct {
		Object string      `json:"object"`
		Data   []modelCard `json:"data"`
	}
	// One card a model, its other names as aliases (a server of one
	// model lists it as a server of several does).
	if err := json.Unmarshal(b, &list); err != nil || list.Object != "list" || len(list.Data) != 1 ||
		list.Data[0].ID != testModel || !slices.Equal(list.Data[0].Aliases, []string{"alias"}) || list.Data[0].MaxModelLen != 128 || list.Data[0].Object != "model" {
		t.Fatalf("models: %s", b)
	}
	resp, err = http.Get(ts.url + "/v1/models/alias")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if c := decode[modelCard](t, b); resp.StatusCode != 200 || c.ID != testModel {
		t.Fatalf("model card: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Get(ts.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health %d", resp.StatusCode)
	}
}

// TestGracefulShutdown: cancelling Serve's context lets a running stream
// finish, refuses new connections, and returns nil.
func TestGracefulShutdown(t *testing.T) {
	eng := sharedEngine(t)
	s, err := New(eng, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m := firstModel(s)
	m.gen = paced{m.gen, func() { time.Sleep(3 * time.Millisecond) }}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, 10*time.Second) }()

	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once","max_tokens":60,"ignore_eos":true,"temperature":0,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel() // SIGTERM arrives mid-stream
	rest, err := io.ReadAll(br)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("stream cut: %v", err)
	}
	if !bytes.HasSuffix(rest, []byte("data: [DONE]\n\n")) || !bytes.Contains(rest, []byte(`"finish_reason":"length"`)) {
		t.Fatalf("stream did not finish: ...%s", rest[max(0, len(rest)-200):])
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("the server still accepts connections after shutdown")
	}
}
