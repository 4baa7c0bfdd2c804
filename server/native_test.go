package server

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
)

// TestNativeAliases: llama-server's paths without /v1 answer as their /v1
// twins (same handler, same shape).
func TestNativeAliases(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, c := range []struct{ path, body, want string }{
		{"/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"temperature":0}`, `"object":"chat.completion"`},
		{"/embeddings", `{"input":"hi"}`, `"object":"embedding"`},
	} {
		code, _, b := ts.post(t, c.path, c.body)
		if code != 200 || !strings.Contains(string(b), c.want) {
			t.Errorf("POST %s: %d %s, want 200 with %s", c.path, code, b, c.want)
		}
	}
	resp, err := http.Get(ts.url + "/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"`+testModel+`"`) {
		t.Errorf("GET /models: %d %s", resp.StatusCode, b)
	}
}

// TestAnyModelName: with AnyModelName a single-model server answers a
// model field naming another model with its own model (as llama-server);
// without it, and always on Ollama's API and for model cards, it is a 404.
func TestAnyModelName(t *testing.T) {
	body := `{"model":"gpt-4","prompt":"x","max_tokens":1}`
	strict := newTestServer(t, nil)
	if code, _, b := strict.post(t, "/v1/completions", body); code != 404 {
		t.Errorf("strict: %d %s, want 404", code, b)
	}
	anyName := newTestServer(t, func(o *Options) { o.AnyModelName = true })
	code, _, b := anyName.post(t, "/v1/completions", body)
	if code != 200 || !strings.Contains(string(b), `"model":"`+testModel+`"`) {
		t.Errorf("any name: %d %s, want 200 answered by %s", code, b, testModel)
	}
	if code, _, b := anyName.post(t, "/api/generate", `{"model":"gpt-4","prompt":"x","stream":false}`); code != 404 {
		t.Errorf("Ollama path with any name: %d %s, want 404", code, b)
	}
	resp, err := http.Get(anyName.url + "/v1/models/gpt-4")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("model card of another model: %d, want 404", resp.StatusCode)
	}
}

// TestMetricsSwitch: NoMetrics answers /metrics with llama-server's 501;
// on, every scrape carries Process-Start-Time-Unix.
func TestMetricsSwitch(t *testing.T) {
	off := newTestServer(t, func(o *Options) { o.NoMetrics = true })
	resp, err := http.Get(off.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 501 || !strings.Contains(string(b), "not_supported_error") {
		t.Errorf("metrics off: %d %s, want 501", resp.StatusCode, b)
	}
	on := newTestServer(t, nil)
	resp, err = http.Get(on.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Process-Start-Time-Unix") == "" {
		t.Errorf("metrics on: %d, Process-Start-Time-Unix %q", resp.StatusCode, resp.Header.Get("Process-Start-Time-Unix"))
	}
}

// TestCORSLocalhost: --cors-origin localhost allows every loopback origin
// (any port, reflected); a preflight from another origin gets 200 without
// CORS headers (the browser refuses), as llama-server answers it.
func TestCORSLocalhost(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.CORSOrigins = []string{"localhost"} })
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, ts.url+"/completions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "Authorization")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, o := range []string{"http://localhost", "http://localhost:8080", "http://127.0.0.1:3000", "http://[::1]:3000"} {
		resp := preflight(o)
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != o {
			t.Errorf("%s: %d, Allow-Origin %q; want 200 reflecting it", o, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	for _, o := range []string{"http://evil.com", "http://notlocalhost", "http://localhost.evil.com"} {
		resp := preflight(o)
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: %d, Allow-Origin %q; want 200 without it", o, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	// A request (not a preflight) from another site is still refused.
	req, _ := http.NewRequest(http.MethodPost, ts.url+"/v1/completions", strings.NewReader(`{"prompt":"x","max_tokens":1}`))
	req.Header.Set("Origin", "http://evil.com")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("POST from another site: %d, want 403", resp.StatusCode)
	}
}

// nativeResult is the part of /completion's answer the tests read.
type nativeResult struct {
	Content            string         `json:"content"`
	Tokens             []int          `json:"tokens"`
	Stop               bool           `json:"stop"`
	StopType           string         `json:"stop_type"`
	StoppingWord       string         `json:"stopping_word"`
	TokensPredicted    int            `json:"tokens_predicted"`
	GenerationSettings map[string]any `json:"generation_settings"`
	Timings            nativeTimings  `json:"timings"`
	Probs              []tokenProb    `json:"completion_probabilities"`
}

// TestNativeCompletion: /completion answers in llama-server's shape with
// the text /v1/completions gives for the same greedy request; n_probs
// gives each token's top alternatives; the generation rate is over the
// decode steps (n − 1); streamed pieces (each with its token ids) add up
// to the whole content, the last event carrying stop, timings and settings.
func TestNativeCompletion(t *testing.T) {
	ts := newTestServer(t, nil)
	const req = `{"prompt":"Once upon a time","n_predict":6,"temperature":0,"ignore_eos":true,"return_tokens":true,"n_probs":3}`
	code, _, b := ts.post(t, "/completion", req)
	if code != 200 {
		t.Fatalf("/completion: %d %s", code, b)
	}
	got := decode[nativeResult](t, b)
	_, _, ob := ts.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":6,"temperature":0,"ignore_eos":true}`)
	oai := decode[completionResponse](t, ob)
	if got.Content != oai.Choices[0].Text || got.Content == "" {
		t.Errorf("content %q, /v1/completions %q", got.Content, oai.Choices[0].Text)
	}
	if !got.Stop || got.StopType != "limit" || len(got.Tokens) != 6 || got.TokensPredicted != 6 || got.Timings.PredictedN != 6 || got.Timings.PromptN <= 0 {
		t.Errorf("shape: %s", b)
	}
	if n := got.GenerationSettings["n_predict"]; n != 6.0 {
		t.Errorf("generation_settings.n_predict = %v", n)
	}
	if tm := got.Timings; tm.PredictedMs > 0 && math.Abs(tm.PredictedPerSecond-5000/tm.PredictedMs) > 1e-6 {
		t.Errorf("predicted_per_second %v, want 5 steps / %v ms", tm.PredictedPerSecond, tm.PredictedMs)
	}
	if len(got.Probs) != 6 {
		t.Fatalf("completion_probabilities: %d entries, want 6", len(got.Probs))
	}
	for i, p := range got.Probs {
		if p.ID != got.Tokens[i] || p.Logprob == nil || *p.Logprob > 0 || len(p.TopLogprobs) != 3 {
			t.Errorf("probs[%d] = %+v", i, p)
		}
	}

	code, _, b = ts.post(t, "/completion", strings.Replace(req, `"n_probs":3`, `"stream":true`, 1))
	if code != 200 {
		t.Fatalf("stream: %d %s", code, b)
	}
	var content string
	events := nativeEvents(b)
	for k, ev := range events {
		r := decode[nativeResult](t, []byte(ev))
		content += r.Content
		if last := k == len(events)-1; r.Stop != last || !last && len(r.Tokens) == 0 || last && (r.Timings.PredictedN != 6 || r.GenerationSettings == nil) {
			t.Errorf("event %d: %s", k, ev)
		}
	}
	if content != got.Content {
		t.Errorf("streamed %q, whole %q", content, got.Content)
	}
}

// TestNativePrompts: llama-server's prompt forms — ids and text mixed in
// one prompt, several prompts (an array of answers), {prompt_string} —
// and the embeddings input forms "" and mixed.
func TestNativePrompts(t *testing.T) {
	ts := newTestServer(t, nil)
	_, _, b := ts.post(t, "/tokenize", `{"content":"Once upon a time","add_special":true}`)
	ids := decode[struct{ Tokens []int }](t, b).Tokens
	idsJSON := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ids)), ","), "[]")
	body := func(prompt string) string {
		return `{"prompt":` + prompt + `,"n_predict":4,"temperature":0,"ignore_eos":true}`
	}
	code, _, b := ts.post(t, "/completion", body(`"Once upon a time"`))
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	want := decode[nativeResult](t, b).Content
	for _, p := range []string{`{"prompt_string":"Once upon a time"}`, `[` + idsJSON + `]`} {
		code, _, b := ts.post(t, "/completion", body(p))
		if code != 200 || decode[nativeResult](t, b).Content != want {
			t.Errorf("prompt %s: %d %s, want content %q", p, code, b, want)
		}
	}
	code, _, b = ts.post(t, "/completion", body(`[[`+idsJSON+`], "Once upon a time"]`))
	if code != 200 {
		t.Fatalf("batch: %d %s", code, b)
	}
	batch := decode[[]nativeResult](t, b)
	if len(batch) != 2 || batch[0].Content != want || batch[1].Content != want {
		t.Errorf("batch: %s", b)
	}
	// A mixed prompt: the text is tokenized in place (BOS only before a
	// leading text), so ids + text = the ids of the whole.
	mixed := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ids[:2])), ","), "[]") + `," upon a time"`
	if code, _, b := ts.post(t, "/completion", body(`[`+mixed+`]`)); code != 200 {
		t.Errorf("mixed prompt: %d %s", code, b)
	}
	if code, _, b := ts.post(t, "/completion", body(`{"prompt_string":"x","multimodal_data":["aGk="]}`)); code != 400 {
		t.Errorf("multimodal_data: %d %s, want 400", code, b)
	}
	for _, in := range []string{`""`, `[12, 34, "string", 56]`, `[[12, 34], [12, "string", 34]]`} {
		code, _, b := ts.post(t, "/v1/embeddings", `{"input":`+in+`}`)
		if code != 200 || !strings.Contains(string(b), `"embedding":[`) {
			t.Errorf("embeddings input %s: %d %s", in, code, b)
		}
	}
}

// nativeEvents are the data of a stream that, as llama-server's native
// ones, ends without [DONE].
func nativeEvents(b []byte) []string {
	var out []string
	for ev := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n\n") {
		out = append(out, strings.TrimPrefix(ev, "data: "))
	}
	return out
}
