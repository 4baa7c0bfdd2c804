package server

// /metrics on prometheus/client_golang. Each Server owns a registry of its
// own (tests and the multi-model server hold many servers in one process,
// so nothing goes into the library's global default registry); the Go and
// process collectors describe the process, not a server, and live in one
// package-level registry that every scrape adds once.
//
// A scrape is one snapshot: the registry's instruments (requests, finished
// generations, token counts, latency histograms), then the series read at
// scrape time from one engine.Stats (metrics_engine.go: nanoserve_engine_*,
// the vLLM gauges, speculative decoding), then vLLM's names for the
// instruments, copied from the same gathered values (metrics_vllm.go), so
// nanoserve_* and vllm:* agree within every scrape by construction.
//
// Label order: model_name first on every series that has it (as before
// the move to the library; dashboards do not care, literal series names
// in tests do).

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"nanoserve/engine"
)

// Latency buckets in seconds: vLLM's bounds (vllm/v1/metrics/loggers.py),
// so histogram_quantile over a fleet of vLLM and nanoserve servers mixes
// like with like. The request-duration set adds 0.1 s below vLLM's lowest
// bound (0.3 s): a small CPU model answers short requests faster than that.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	e2eBuckets  = []float64{0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
)

// runtimeMetrics holds the Go runtime and process collectors (go_*,
// process_*): one per process, added to every scrape.
var runtimeMetrics = func() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}()

// metrics is one server's instruments, registered in its own registry.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec // endpoint, status
	finished *prometheus.CounterVec // finish_reason
	inFlight adder                  // HTTP requests being served (gauge)
	running  adder                  // generation requests admitted, running or queued in the engine (gauge)
	rejected adder                  // generation requests refused as overloaded (counter)
	prompt   prometheus.Counter     // prompt tokens of finished generations
	gen      prometheus.Counter     // generated tokens of finished generations
	ttft     latency                // seconds from request arrival to first token
	itl      latency                // seconds between consecutive tokens of one request
	e2e      latency                // seconds per generation request, arrival to last byte
}

// adder is a gauge or a counter the handlers move by a delta (a counter
// only ever by a positive one).
type adder interface{ Add(float64) }

// latency is a histogram observed in seconds.
type latency struct{ h prometheus.Histogram }

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	f := promauto.With(reg)
	hist := func(name, help string, buckets []float64) latency {
		return latency{f.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})}
	}
	return &metrics{
		reg: reg,
		requests: f.NewCounterVec(prometheus.CounterOpts{Name: "nanoserve_requests_total",
			Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "status"}),
		inFlight: f.NewGauge(prometheus.GaugeOpts{Name: "nanoserve_requests_in_flight", Help: "HTTP requests being served."}),
		running: f.NewGauge(prometheus.GaugeOpts{Name: "nanoserve_generations_running",
			Help: "Generation requests admitted and not finished (running or waiting for the engine)."}),
		rejected: f.NewCounter(prometheus.CounterOpts{Name: "nanoserve_generations_rejected_total",
			Help: "Generation requests refused because the server was full (429)."}),
		finished: f.NewCounterVec(prometheus.CounterOpts{Name: "nanoserve_generations_total",
			Help: "Finished generations by finish reason (stop, length, cancelled, error)."}, []string{"finish_reason"}),
		prompt: f.NewCounter(prometheus.CounterOpts{Name: "nanoserve_prompt_tokens_total", Help: "Prompt tokens of finished generations."}),
		gen:    f.NewCounter(prometheus.CounterOpts{Name: "nanoserve_generation_tokens_total", Help: "Generated tokens of finished generations."}),
		ttft:   hist("nanoserve_time_to_first_token_seconds", "Seconds from request arrival to the first generated token.", ttftBuckets),
		itl:    hist("nanoserve_time_per_output_token_seconds", "Seconds between consecutive generated tokens of one request.", itlBuckets),
		e2e:    hist("nanoserve_request_duration_seconds", "Seconds per generation request, arrival to the end of the response.", e2eBuckets),
	}
}

func (m *metrics) request(endpoint string, status int) {
	m.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
}

func (m *metrics) add(a *adder, d float64) { (*a).Add(d) }

func (m *metrics) observe(l *latency, d time.Duration) { l.h.Observe(d.Seconds()) }

// generation records a finished generation.
func (m *metrics) generation(reason string, prompt, gen int, total time.Duration) {
	m.finished.WithLabelValues(reason).Inc()
	m.prompt.Add(float64(prompt))
	m.gen.Add(float64(gen))
	m.e2e.h.Observe(total.Seconds())
}

// gauge is one series read at scrape time (engine stats): a gauge, or a
// counter when counter is set.
type gauge struct {
	name, help string
	value      float64
	counter    bool
}

// gather is one model server's families: the registry's instruments, the
// scrape-time series from st and extra, and vLLM's names for both (model
// labels the vllm:* series). Without the runtime collectors.
func (m *metrics) gather(model string, st engine.Stats, extra []gauge) ([]*dto.MetricFamily, error) {
	fams, err := m.reg.Gather()
	if err != nil {
		return nil, err
	}
	fams = append(fams, vllmMirrors(fams, model)...)
	now := prometheus.NewRegistry()
	now.MustRegister(constCollector(append(gaugeMetrics(append(extra, engineStats(st)...)),
		append(vllmGauges(model, st), specMetrics(model, st)...)...)))
	more, err := now.Gather()
	if err != nil {
		return nil, err
	}
	fams = append(fams, more...)
	for _, f := range fams {
		for _, s := range f.Metric {
			modelNameFirst(s)
		}
	}
	return fams, nil
}

// constCollector collects fixed metrics made for one scrape (an unchecked
// collector: it describes nothing up front).
type constCollector []prometheus.Metric

func (constCollector) Describe(chan<- *prometheus.Desc) {}
func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c {
		ch <- m
	}
}

func gaugeMetrics(gs []gauge) []prometheus.Metric {
	out := make([]prometheus.Metric, 0, len(gs))
	for _, g := range gs {
		typ := prometheus.GaugeValue
		if g.counter {
			typ = prometheus.CounterValue
		}
		out = append(out, prometheus.MustNewConstMetric(prometheus.NewDesc(g.name, g.help, nil, nil), typ, g.value))
	}
	return out
}

// modelNameFirst moves a model_name label to the front of a series'
// labels.
func modelNameFirst(s *dto.Metric) {
	i := slices.IndexFunc(s.Label, func(l *dto.LabelPair) bool { return l.GetName() == "model_name" })
	if i > 0 {
		l := s.Label[i]
		copy(s.Label[1:i+1], s.Label[:i])
		s.Label[0] = l
	}
}

// withModelName adds model_name=model (first) to a series without one.
func withModelName(s *dto.Metric, model string) {
	if slices.ContainsFunc(s.Label, func(l *dto.LabelPair) bool { return l.GetName() == "model_name" }) {
		return
	}
	name := "model_name"
	s.Label = append([]*dto.LabelPair{{Name: &name, Value: &model}}, s.Label...)
}

// serveFamilies writes families (plus the runtime collectors') in the
// format the scraper accepts (the text format by default).
func serveFamilies(w http.ResponseWriter, r *http.Request, gather func() ([]*dto.MetricFamily, error)) {
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		fams, err := gather()
		rt, err2 := runtimeMetrics.Gather()
		fams = append(fams, rt...)
		if err == nil {
			err = err2
		}
		return fams, err
	})
	promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// mergeFamilies joins families of the same name (series appended in
// order), keeping the first family's order.
func mergeFamilies(fams []*dto.MetricFamily) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	index := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		if g := index[f.GetName()]; g != nil {
			g.Metric = append(g.Metric, f.Metric...)
			continue
		}
		index[f.GetName()] = f
		out = append(out, f)
	}
	return out
}

func isPerServer(name string) bool {
	return strings.HasPrefix(name, "nanoserve_requests_")
}

// gatherModel is this model server's families (without the runtime ones).
func (s *Server) gatherModel() ([]*dto.MetricFamily, error) {
	extra := []gauge{
		{name: "nanoserve_kv_cache_bytes", help: "Bytes held by the engine's KV cache.", value: float64(s.eng.CacheBytes())},
		{name: "nanoserve_context_tokens", help: "Context length per sequence.", value: float64(s.eng.CtxSize())},
	}
	st := s.eng.Stats() // one snapshot for the nanoserve_engine_*, vllm:* and llamacpp:* series
	fams, err := s.m.gather(s.names[0], st, extra)
	if err != nil {
		return nil, err
	}
	more, err := s.lc.families(st)
	return append(fams, more...), err
}
