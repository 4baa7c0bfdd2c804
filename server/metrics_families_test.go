package server

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"nanoserve/engine"
)

var updateFamilies = flag.Bool("update-families", false, "rewrite testdata/metrics_families.golden from the current /metrics")

// scrapeFamilies parses one /metrics scrape with the Prometheus text parser
// and lists its families as "name type label,label" lines (label names
// over all series, le and quantile left out), sorted; go_* and process_*
// (the runtime collectors) are left out.
func scrapeFamilies(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses the scrape: %v", err)
	}
	var out []string
	runtime := map[string]bool{}
	for name, f := range fams {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			runtime[name] = true
			continue
		}
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range labels {
				if !yield(k) {
					return
				}
			}
		})
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", name, strings.ToLower(f.GetType().String()), strings.Join(names, ","))))
	}
	slices.Sort(out)
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_start_time_seconds"} {
		if !runtime[name] {
			t.Errorf("%s: no %s (the Go and process collectors)", url, name)
		}
	}
	return out
}

// TestMetricFamiliesGolden: a scrape of a single-model server, of a
// speculating one and of the multi-model server, each after requests that
// create every labelled series, parsed by the Prometheus text parser, gives
// the families (names, types, label names) recorded in
// testdata/metrics_families.golden — recorded from the hand-written
// exposition before /metrics moved onto client_golang. The go_* and
// process_* families must be there too.
func TestMetricFamiliesGolden(t *testing.T) {
	var got []string
	section := func(name string, url string) {
		got = append(got, "# "+name)
		got = append(got, scrapeFamilies(t, url)...)
	}
	ts := newTestServer(t, nil)
	ts.post(t, "/v1/completions", `{"prompt":"Once","max_tokens":3,"temperature":0}`)
	ts.post(t, "/v1/completions", `{"prompt":"Once","top_p":7}`)
	section("server", ts.url)

	spec := newEngineServer(t, engine.Options{Spec: engine.SpecOptions{Mode: engine.SpecNgram, K: 2, Fixed: true}}, nil)
	spec.post(t, "/v1/completions", `{"prompt":"Once","max_tokens":3,"temperature":0}`)
	section("speculating server", spec.url)

	rt := newTestRouter(t, RouterOptions{Models: []ModelSpec{testSpec(t, "aidreams", nil)}}, nil)
	rt.post(t, "/v1/completions", `{"model":"aidreams","prompt":"Once","max_tokens":3,"temperature":0}`)
	section("multi-model server", rt.url)

	const golden = "testdata/metrics_families.golden"
	text := strings.Join(got, "\n") + "\n"
	if *updateFamilies {
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Errorf("metric families differ from %s:\n got:\n%s\nwant:\n%s", golden, text, want)
	}
}
