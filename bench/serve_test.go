package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeOpenAI is an OpenAI-compatible streaming server: every request gets
// the chunks texts (chat: after an empty role chunk), then a usage chunk
// (unless usage < 0), then [DONE]. It keeps the request bodies.
type fakeOpenAI struct {
	texts []string
	usage [2]int // prompt, completion tokens; usage[0] < 0: no usage chunk
	// beforeDone, if set, runs before [DONE] is sent (the client may
	// count the request finished as soon as it reads it).
	beforeDone func()
	mu         sync.Mutex
	bodies     []map[string]any
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	chat := r.URL.Path == "/v1/chat/completions"
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(s string) {
		fmt.Fprintf(w, "data: %s\n\n", s)
		w.(http.Flusher).Flush()
	}
	if r.URL.Path == "/infill" { // llama-server's native stream: content/stop events, no [DONE]
		for _, t := range f.texts {
			b, _ := json.Marshal(t)
			send(`{"index":0,"content":` + string(b) + `,"stop":false}`)
		}
		send(fmt.Sprintf(`{"index":0,"content":"","stop":true,"tokens_predicted":%d,"tokens_evaluated":%d}`, f.usage[1], f.usage[0]))
		return
	}
	if chat {
		send(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	}
	for _, t := range f.texts {
		b, _ := json.Marshal(t)
		if chat {
			send(`{"choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`)
		} else {
			send(`{"choices":[{"index":0,"text":` + string(b) + `,"finish_reason":null}]}`)
		}
	}
	if f.usage[0] >= 0 {
		send(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			f.usage[0], f.usage[1], f.usage[0]+f.usage[1]))
	}
	if f.beforeDone != nil {
		f.beforeDone()
	}
	send("[DONE]")
}

// scripted returns a clock that reads the given times (ms after an
// epoch) in order, and fails the test past the end.
func scripted(t *testing.T, msTimes ...float64) func() time.Time {
	base := time.Unix(1e9, 0)
	var mu sync.Mutex
	i := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(msTimes) {
			t.Errorf("clock read %d times, scripted %d", i+1, len(msTimes))
			return base
		}
		d := time.Duration(msTimes[i] * float64(time.Millisecond))
		i++
		return base.Add(d)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func checkDist(t *testing.T, name string, got, want Dist) {
	t.Helper()
	if got.N != want.N || !near(got.Mean, want.Mean) || !near(got.P50, want.P50) || !near(got.P99, want.P99) {
		t.Errorf("%s = %+v, want %+v", name, got, want)
	}
}

// TestServeMetricsExact runs two requests one at a time against the fake
// server on a scripted clock, so every metric is known exactly. Three
// text chunks carry four tokens (usage says 4): TPOT divides by the
// server's count, ITL has one gap per chunk pair. The chat endpoint's
// empty role chunk must not count as the first token.
func TestServeMetricsExact(t *testing.T) {
	for _, endpoint := range []string{"/v1/completions", "/v1/chat/completions"} {
		t.Run(strings.TrimPrefix(endpoint, "/v1/"), func(t *testing.T) {
			f := &fakeOpenAI{texts: []string{"a", "b c", "d"}, usage: [2]int{7, 4}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			// start; r1: sent, [role], 3 chunks, usage, done; r2 likewise; end.
			times := []float64{0, 10, 110, 140, 200, 205, 210, 300, 350, 450, 460, 470, 500, 1000}
			if endpoint == "/v1/chat/completions" {
				times = []float64{0, 10, 20, 110, 140, 200, 205, 210, 300, 310, 350, 450, 460, 470, 500, 1000}
			}
			res, err := RunServe(context.Background(), ServeOptions{BaseURL: srv.URL + "/v1", Endpoint: endpoint, Model: "m",
				NumPrompts: 2, Concurrency: 1, Warmup: -1, InputLen: 5, OutputLen: 4, IgnoreEOS: true, Seed: 3,
				clock: scripted(t, times...)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Completed != 2 || res.Failed != 0 || res.InputTokens != 14 || res.OutputTokens != 8 || !res.UsageReported {
				t.Fatalf("counts: %+v", res)
			}
			// r1: TTFT 100, E2EL 200, TPOT (200−100)/3, ITL 30, 60;
			// r2: TTFT 50, E2EL 200, TPOT (200−50)/3 = 50, ITL 100, 10.
			checkDist(t, "TTFT", res.TTFT, Dist{N: 2, Mean: 75, P50: 75, P99: 50 + 0.99*50})
			checkDist(t, "E2EL", res.E2EL, Dist{N: 2, Mean: 200, P50: 200, P99: 200})
			checkDist(t, "TPOT", res.TPOT, Dist{N: 2, Mean: (100.0/3 + 50) / 2, P50: (100.0/3 + 50) / 2, P99: 100.0/3 + 0.99*(50-100.0/3)})
			checkDist(t, "ITL", res.ITL, Dist{N: 4, Mean: 50, P50: 45, P99: 60 + 0.97*40})
			if !near(res.DurationS, 1) || !near(res.RequestThroughput, 2) || !near(res.OutputThroughput, 8) || !near(res.TotalThroughput, 22) {
				t.Errorf("duration %g s, throughput %g req/s, %g out tok/s, %g tok/s; want 1, 2, 8, 22",
					res.DurationS, res.RequestThroughput, res.OutputThroughput, res.TotalThroughput)
			}
			// The requests: fixed output length, streamed with usage, greedy.
			for _, b := range f.bodies {
				if b["max_tokens"] != 4.0 || b["ignore_eos"] != true || b["stream"] != true || b["temperature"] != 0.0 || b["model"] != "m" {
					t.Errorf("request body %v", b)
				}
				if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true {
					t.Errorf("stream_options %v", b["stream_options"])
				}
				var prompt string
				if endpoint == "/v1/chat/completions" {
					msgs := b["messages"].([]any)
					prompt = msgs[len(msgs)-1].(map[string]any)["content"].(string)
				} else {
					prompt = b["prompt"].(string)
				}
				if n := len(strings.Fields(prompt)); n != 5 {
					t.Errorf("prompt %q has %d words, want 5", prompt, n)
				}
			}
		})
	}
}

// TestServeInfill: against llama-server's /infill the requests carry
// input_prefix / input_suffix / n_predict, the native stream (content
// events, a last event with stop: true and the token counts, no [DONE])
// is timed like the OpenAI ones, and its counts are the usage.
func TestServeInfill(t *testing.T) {
	f := &fakeOpenAI{texts: []string{"a", "b c", "d"}, usage: [2]int{7, 4}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	// start; r1: sent, 3 chunks, final event; r2 likewise; end.
	times := []float64{0, 10, 110, 140, 200, 210, 300, 350, 450, 460, 500, 1000}
	res, err := RunServe(context.Background(), ServeOptions{BaseURL: srv.URL, Endpoint: "/infill",
		NumPrompts: 2, Concurrency: 1, Warmup: -1, InputLen: 6, OutputLen: 4, IgnoreEOS: true, Seed: 3,
		clock: scripted(t, times...)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 2 || res.Failed != 0 || res.InputTokens != 14 || res.OutputTokens != 8 || !res.UsageReported {
		t.Fatalf("counts: %+v", res)
	}
	checkDist(t, "TTFT", res.TTFT, Dist{N: 2, Mean: 75, P50: 75, P99: 50 + 0.99*50})
	checkDist(t, "E2EL", res.E2EL, Dist{N: 2, Mean: 200, P50: 200, P99: 200})
	for _, b := range f.bodies {
		pre, _ := b["input_prefix"].(string)
		suf, _ := b["input_suffix"].(string)
		if b["n_predict"] != 4.0 || b["ignore_eos"] != true || b["stream"] != true || b["temperature"] != 0.0 ||
			len(strings.Fields(pre)) != 3 || len(strings.Fields(suf)) != 3 || b["prompt"] != nil || b["max_tokens"] != nil {
			t.Errorf("request body %v", b)
		}
	}
	// File prompts: prompt is the prefix, suffix the suffix.
	f.bodies = nil
	if _, err := RunServe(context.Background(), ServeOptions{BaseURL: srv.URL, Endpoint: "/infill", Warmup: -1,
		Prompts: []ServePrompt{{Prompt: "func f() {\n\t", Suffix: "\n}\n", MaxTokens: 2}}}); err != nil {
		t.Fatal(err)
	}
	if len(f.bodies) != 1 || f.bodies[0]["input_prefix"] != "func f() {\n\t" || f.bodies[0]["input_suffix"] != "\n}\n" || f.bodies[0]["n_predict"] != 2.0 {
		t.Errorf("file prompt sent as %v", f.bodies)
	}
}

// TestServeNoUsage: a server that sends no usage chunk: output tokens are
// the text chunks, input tokens unknown, and the report says so.
func TestServeNoUsage(t *testing.T) {
	f := &fakeOpenAI{texts: []string{"a", "b", "c"}, usage: [2]int{-1, 0}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	// start; sent, 3 chunks, done; end.
	res, err := RunServe(context.Background(), ServeOptions{BaseURL: srv.URL, NumPrompts: 1, Warmup: -1,
		clock: scripted(t, 0, 0, 40, 60, 100, 120, 120)})
	if err != nil {
		t.Fatal(err)
	}
	if res.OutputTokens != 3 || res.InputTokens != 0 || res.UsageReported {
		t.Errorf("output %d, input %d, usage %v; want 3, 0, false", res.OutputTokens, res.InputTokens, res.UsageReported)
	}
	checkDist(t, "TPOT", res.TPOT, Dist{N: 1, Mean: 40, P50: 40, P99: 40}) // (120 − 40) / 2
	var b strings.Builder
	if err := WriteServeMarkdown(&b, res); err != nil || !strings.Contains(b.String(), "the server sent no usage") {
		t.Errorf("report does not say usage was missing: %v\n%s", err, b.String())
	}
}

// TestServeSharedPrefix: every request's system prompt is the same
// SharedPrefixLen words; the user parts differ; the same seed gives the
// same workload and another seed another.
func TestServeSharedPrefix(t *testing.T) {
	o := ServeOptions{BaseURL: "http://x", NumPrompts: 4, InputLen: 6, SharedPrefixLen: 50, Seed: 9}
	if err := o.resolve(); err != nil {
		t.Fatal(err)
	}
	a := o.requests()
	for i, r := range a {
		if len(strings.Fields(r.system)) != 50 || len(strings.Fields(r.prompt)) != 6 || r.system != a[0].system {
			t.Errorf("request %d: system %q, prompt %q", i, r.system, r.prompt)
		}
		if i > 0 && r.prompt == a[i-1].prompt {
			t.Errorf("requests %d and %d have the same prompt %q", i-1, i, r.prompt)
		}
	}
	if got := string(o.body(a[0])); !strings.Contains(got, `"prompt":"`+a[0].system+`\n\n`+a[0].prompt+`"`) {
		t.Errorf("completions body %s: want the system prompt, a blank line, the prompt", got)
	}
	b := o.requests()
	o.Seed++
	c := o.requests()
	if a[1] != b[1] || a[1] == c[1] || a[0].system == c[0].system {
		t.Errorf("seeding: same seed %v / %v, other seed %v", a[1], b[1], c[1])
	}
}

// TestServeMalformedSSE: a server that breaks the SSE protocol fails the
// request with an error naming what is wrong; a run where every request
// failed is ErrNoServer carrying those errors.
func TestServeMalformedSSE(t *testing.T) {
	for _, c := range []struct {
		name, ctype, body, want string
	}{
		{"not JSON", "text/event-stream", "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {oops\n\ndata: [DONE]\n\n", "event 2: data is not a JSON chunk"},
		{"no DONE", "text/event-stream", "data: {\"choices\":[{\"text\":\"a\"}]}\n\n", "ended after 1 events without \"data: [DONE]\""},
		{"not a chunk", "text/event-stream", "data: {\"id\":1}\n\ndata: [DONE]\n\n", "without \"choices\", \"usage\" or \"stop\""},
		{"not a field line", "text/event-stream", "hello\n\n", "is not a \"field: value\" line"},
		{"not SSE", "application/json", `{"choices":[{"text":"a"}]}`, "not text/event-stream"},
		{"error event", "text/event-stream", "data: {\"error\":{\"message\":\"boom\"}}\n\ndata: [DONE]\n\n", "error event: boom"},
		{"no text", "text/event-stream", "data: {\"choices\":[]}\n\ndata: [DONE]\n\n", "carried no text"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.ctype)
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			res, err := RunServe(context.Background(), ServeOptions{BaseURL: srv.URL, NumPrompts: 2, Warmup: -1})
			if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrNoServer containing %q", err, c.want)
			}
			if res.Failed != 2 || res.Completed != 0 || len(res.Errors) != 2 {
				t.Errorf("failed %d, completed %d, errors %q", res.Failed, res.Completed, res.Errors)
			}
		})
	}
	// A failing warm-up stops the run before it starts.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"no such model"}}`, 404)
	}))
	defer srv.Close()
	_, err := RunServe(context.Background(), ServeOptions{BaseURL: srv.URL, NumPrompts: 2, Warmup: 1})
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "warm-up") || !strings.Contains(err.Error(), "HTTP 404: {\"error\":{\"message\":\"no such model\"}}") {
		t.Errorf("warm-up against a 404: %v", err)
	}
}

// TestSSEReader: the SSE framing rules the reader follows — CRLF lines,
// comments, event/id fields, a data field split over two lines, a final
// event without its blank line.
func TestSSEReader(t *testing.T) {
	in := ": keep-alive\r\n\r\nevent: message\r\nid: 1\r\ndata: {\"choices\":[{\"text\":\r\ndata: \"x\"}]}\r\n\r\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"y\"},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]"
	r := newSSEReader(strings.NewReader(in))
	c, done, err := r.next()
	if err != nil || done || c.text != "x" {
		t.Fatalf("event 1: %+v %v %v", c, done, err)
	}
	c, done, err = r.next()
	if err != nil || done || c.text != "y" || c.finishReason != "length" || c.usage == nil || c.usage.CompletionTokens != 2 {
		t.Fatalf("event 2: %+v %v %v", c, done, err)
	}
	if _, done, err = r.next(); err != nil || !done {
		t.Fatalf("event 3: done %v, err %v", done, err)
	}
}

// TestServeConcurrencyLimit: with Concurrency 3 no more than 3 requests
// are ever in flight, and 3 are: the fake holds every request until three
// have been in flight at once, then 50 ms more — time for a client that
// ignored the limit to send the other nine (a correct client passes
// whatever the timing).
func TestServeConcurrencyLimit(t *testing.T) {
	var mu sync.Mutex
	in, most := 0, 0
	three := make(chan struct{})
	var once sync.Once
	f := &fakeOpenAI{texts: []string{"a"}, usage: [2]int{1, 1}, beforeDone: func() {
		mu.Lock()
		in--
		mu.Unlock()
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		in++
		most = max(most, in)
		if in == 3 {
			once.Do(func() { close(three) })
		}
		mu.Unlock()
		select {
		case <-three:
			time.Sleep(50 * time.Millisecond)
		case <-time.After(2 * time.Second):
		}
		f.ServeHTTP(w, r)
	}))
	defer srv.Close()
	res, err := RunServe(context.Background(), ServeOptions{BaseURL: srv.URL, NumPrompts: 12, Concurrency: 3, Warmup: -1})
	if err != nil || res.Completed != 12 {
		t.Fatalf("%v, %+v", err, res)
	}
	if most != 3 {
		t.Errorf("at most %d requests in flight, want 3", most)
	}
}

// TestArrivals: Poisson arrivals are seeded (same seed, same times), rise,
// and their mean gap is 1/rate (within 3% over 20000 draws: the standard
// error of the mean of exponentials is 1/(rate·√n) = 0.7%); rate 0 sends
// everything at once.
func TestArrivals(t *testing.T) {
	const n, rate = 20000, 4.0
	a, b, c := arrivals(1, rate, n), arrivals(1, rate, n), arrivals(2, rate, n)
	if a[n-1] != b[n-1] || a[n-1] == c[n-1] {
		t.Errorf("seeding: %v %v %v", a[n-1], b[n-1], c[n-1])
	}
	for i := 1; i < n; i++ {
		if a[i] < a[i-1] {
			t.Fatalf("arrival %d before %d", i, i-1)
		}
	}
	if mean := a[n-1].Seconds() / n; math.Abs(mean*rate-1) > 0.03 {
		t.Errorf("mean gap %.4f s, want %.4f", mean, 1/rate)
	}
	for _, d := range arrivals(1, 0, 5) {
		if d != 0 {
			t.Errorf("rate 0: arrival at %v", d)
		}
	}
}

func TestLoadPrompts(t *testing.T) {
	ps, err := LoadPrompts(strings.NewReader(`{"prompt":"hi"}` + "\n\n" + `{"prompt":"yo","system":"be brief","max_tokens":3}` + "\n"))
	if err != nil || len(ps) != 2 || ps[1] != (ServePrompt{System: "be brief", Prompt: "yo", MaxTokens: 3}) {
		t.Fatalf("%+v, %v", ps, err)
	}
	o := ServeOptions{BaseURL: "http://x", Prompts: ps, NumPrompts: 3, OutputLen: 7}
	if err := o.resolve(); err != nil {
		t.Fatal(err)
	}
	if r := o.requests(); r[0].maxTokens != 7 || r[1].maxTokens != 3 || r[2].prompt != "hi" {
		t.Errorf("requests %+v: want max_tokens from the file or --output-len, prompts cycled", r)
	}
	for _, c := range []struct{ in, want string }{
		{`{"prompt":"a"}` + "\n" + `{"prompt":1}`, "line 2"},
		{`{"text":"a"}`, "line 1: json: unknown field \"text\""},
		{`{"system":"a"}`, "line 1: no \"prompt\""},
		{`{"prompt":"a","max_tokens":-1}`, "max_tokens -1"},
		{"\n\n", "no prompts"},
	} {
		if _, err := LoadPrompts(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadPrompts(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}
