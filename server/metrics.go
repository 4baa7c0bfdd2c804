package server

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// metrics holds the server's counters, gauges and histograms and writes
// them in the Prometheus text exposition format (version 0.0.4): for each
// family a "# HELP" and "# TYPE" line, then one "name{labels} value" line
// per series; a histogram is its cumulative "_bucket{le=...}" series plus
// "_sum" and "_count".
type metrics struct {
	mu       sync.Mutex
	requests map[[2]string]float64 // (endpoint, status code) → count
	finished map[string]float64    // finish reason → generations
	inFlight float64               // HTTP requests being served
	running  float64               // generation requests admitted (running or queued in the engine)
	rejected float64               // generation requests refused as overloaded
	prompt   float64               // prompt tokens of finished generations
	gen      float64               // generated tokens
	ttft     histogram             // seconds from request arrival to first token
	itl      histogram             // seconds between consecutive tokens of one request
	e2e      histogram             // seconds per generation request, arrival to last byte
}

// Latency buckets in seconds: first tokens and per-token gaps of a small CPU
// model range from a millisecond to tens of seconds.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	itlBuckets  = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
	e2eBuckets  = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
)

func newMetrics() *metrics {
	return &metrics{
		requests: map[[2]string]float64{},
		finished: map[string]float64{},
		ttft:     newHistogram(ttftBuckets),
		itl:      newHistogram(itlBuckets),
		e2e:      newHistogram(e2eBuckets),
	}
}

// histogram counts observations into upper-bounded buckets (non-cumulative
// here; made cumulative when written).
type histogram struct {
	upper  []float64
	counts []uint64 // len(upper)+1: the last is +Inf
	sum    float64
	n      uint64
}

func newHistogram(upper []float64) histogram {
	return histogram{upper: upper, counts: make([]uint64, len(upper)+1)}
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.upper, v) // first bucket with upper >= v
	h.counts[i]++
	h.sum += v
	h.n++
}

func (m *metrics) request(endpoint string, status int) {
	m.mu.Lock()
	m.requests[[2]string{endpoint, strconv.Itoa(status)}]++
	m.mu.Unlock()
}

func (m *metrics) add(p *float64, d float64) {
	m.mu.Lock()
	*p += d
	m.mu.Unlock()
}

func (m *metrics) observe(h *histogram, d time.Duration) {
	m.mu.Lock()
	h.observe(d.Seconds())
	m.mu.Unlock()
}

// generation records a finished generation.
func (m *metrics) generation(reason string, prompt, gen int, total time.Duration) {
	m.mu.Lock()
	m.finished[reason]++
	m.prompt += float64(prompt)
	m.gen += float64(gen)
	m.e2e.observe(total.Seconds())
	m.mu.Unlock()
}

// gauge is one extra series written with the server's own (engine stats):
// a gauge, or a counter when counter is set.
type gauge struct {
	name, help string
	value      float64
	counter    bool
}

// write renders every family, then the extra gauges, then whatever more
// writes (called with m.mu held, so it reads the same snapshot).
func (m *metrics) write(w io.Writer, extra []gauge, more func(b *strings.Builder)) {
	var b strings.Builder
	m.mu.Lock()
	family(&b, "nanoserve_requests_total", "counter", "HTTP requests by endpoint and status code.")
	keys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, k := range keys {
		fmt.Fprintf(&b, "nanoserve_requests_total{endpoint=%q,status=%q} %s\n", k[0], k[1], num(m.requests[k]))
	}
	family(&b, "nanoserve_requests_in_flight", "gauge", "HTTP requests being served.")
	fmt.Fprintf(&b, "nanoserve_requests_in_flight %s\n", num(m.inFlight))
	family(&b, "nanoserve_generations_running", "gauge", "Generation requests admitted and not finished (running or waiting for the engine).")
	fmt.Fprintf(&b, "nanoserve_generations_running %s\n", num(m.running))
	family(&b, "nanoserve_generations_rejected_total", "counter", "Generation requests refused because the server was full (429).")
	fmt.Fprintf(&b, "nanoserve_generations_rejected_total %s\n", num(m.rejected))
	family(&b, "nanoserve_generations_total", "counter", "Finished generations by finish reason (stop, length, cancelled, error).")
	reasons := make([]string, 0, len(m.finished))
	for k := range m.finished {
		reasons = append(reasons, k)
	}
	slices.Sort(reasons)
	for _, k := range reasons {
		fmt.Fprintf(&b, "nanoserve_generations_total{finish_reason=%q} %s\n", k, num(m.finished[k]))
	}
	family(&b, "nanoserve_prompt_tokens_total", "counter", "Prompt tokens of finished generations.")
	fmt.Fprintf(&b, "nanoserve_prompt_tokens_total %s\n", num(m.prompt))
	family(&b, "nanoserve_generation_tokens_total", "counter", "Generated tokens of finished generations.")
	fmt.Fprintf(&b, "nanoserve_generation_tokens_total %s\n", num(m.gen))
	writeHistogram(&b, "nanoserve_time_to_first_token_seconds", "Seconds from request arrival to the first generated token.", &m.ttft)
	writeHistogram(&b, "nanoserve_time_per_output_token_seconds", "Seconds between consecutive generated tokens of one request.", &m.itl)
	writeHistogram(&b, "nanoserve_request_duration_seconds", "Seconds per generation request, arrival to the end of the response.", &m.e2e)
	for _, g := range extra {
		typ := "gauge"
		if g.counter {
			typ = "counter"
		}
		family(&b, g.name, typ, g.help)
		fmt.Fprintf(&b, "%s %s\n", g.name, num(g.value))
	}
	if more != nil {
		more(&b)
	}
	m.mu.Unlock()
	io.WriteString(w, b.String())
}

func family(b *strings.Builder, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func writeHistogram(b *strings.Builder, name, help string, h *histogram) {
	writeHistogramLabels(b, name, help, "", h)
}

// writeHistogramLabels writes a histogram whose series all carry labels
// (`k="v",…`, or "" for none).
func writeHistogramLabels(b *strings.Builder, name, help, labels string, h *histogram) {
	family(b, name, "histogram", help)
	inner, outer := "", ""
	if labels != "" {
		inner, outer = labels+",", "{"+labels+"}"
	}
	var cum uint64
	for i, u := range h.upper {
		cum += h.counts[i]
		fmt.Fprintf(b, "%s_bucket{%sle=%q} %d\n", name, inner, num(u), cum)
	}
	cum += h.counts[len(h.upper)]
	fmt.Fprintf(b, "%s_bucket{%sle=\"+Inf\"} %d\n", name, inner, cum)
	fmt.Fprintf(b, "%s_sum%s %s\n", name, outer, num(h.sum))
	fmt.Fprintf(b, "%s_count%s %d\n", name, outer, h.n)
}

// num formats a sample value as Prometheus expects (shortest float form,
// +Inf/-Inf/NaN spelled out).
func num(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
