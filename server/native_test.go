package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"nanoserve/chat"
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
	if lb, ok := got.GenerationSettings["logit_bias"].([]any); !ok || len(lb) != 0 {
		t.Errorf("generation_settings.logit_bias = %v, want []", got.GenerationSettings["logit_bias"])
	}
	// logit_bias in llama-server's pair form: text is tokenized and every
	// token of it biased; false bans (-100, the policy's floor).
	_, _, bb := ts.post(t, "/completion", `{"prompt":"Once upon a time","n_predict":2,"temperature":0,"logit_bias":[[5,2.5],["a",false]]}`)
	lb, _ := decode[nativeResult](t, bb).GenerationSettings["logit_bias"].([]any)
	if len(lb) < 2 || fmt.Sprint(lb[0]) != "map[bias:2.5 token:5]" {
		t.Errorf("logit_bias pairs: %v in %s", lb, bb)
	}
	for _, e := range lb[1:] {
		if e.(map[string]any)["bias"] != -100.0 {
			t.Errorf("a banned token's bias %v, want -100", e)
		}
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

// TestApplyTemplateNative: /apply-template answers without the BOS the
// template writes, honours add_generation_prompt false and hands the
// template its tools.
func TestApplyTemplateNative(t *testing.T) {
	tmpl, err := chat.Parse(`{{ bos_token }}{% if tools %}[{{ tools | length }} tools]{% endif %}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}`)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(o *Options) { o.Template, o.TemplateOptions = tmpl, chat.Options{BOS: "<s>"} })
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	for _, c := range []struct{ body, want string }{
		{`{` + msgs + `}`, "<|user|>Hi<|assistant|>"},
		{`{` + msgs + `,"add_generation_prompt":false}`, "<|user|>Hi"},
		{`{` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}}]}`, "[1 tools]<|user|>Hi<|assistant|>"},
	} {
		code, _, b := ts.post(t, "/apply-template", c.body)
		if got := decode[struct{ Prompt string }](t, b).Prompt; code != 200 || got != c.want {
			t.Errorf("%s: %d %q, want %q", c.body, code, got, c.want)
		}
	}
}

// TestOpenAIShapeNative: llama-server's additions to the OpenAI answers —
// system_fingerprint on every object, timings on a whole answer and on the
// usage chunk, a role chunk with content null (no empty content piece), a
// prompt past the context as exceed_context_size_error with its numbers,
// and response_format json_object with a schema constraining to it.
func TestOpenAIShapeNative(t *testing.T) {
	ts := newTestServer(t, nil)
	code, _, b := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"temperature":0}`)
	whole := decode[chatResponse](t, b)
	if code != 200 || !strings.HasPrefix(whole.SystemFingerprint, "b") || whole.Timings == nil || whole.Timings.PredictedN != whole.Usage.CompletionTokens {
		t.Errorf("chat: %d %s", code, b)
	}
	code, _, b = ts.post(t, "/v1/completions", `{"prompt":"Once","max_tokens":3,"temperature":0}`)
	if c := decode[completionResponse](t, b); code != 200 || !strings.HasPrefix(c.SystemFingerprint, "b") || c.Timings == nil {
		t.Errorf("completions: %d %s", code, b)
	}
	_, _, b = ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`)
	events := sseEvents(t, b)
	if !strings.Contains(events[0], `"delta":{"role":"assistant","content":null}`) {
		t.Errorf("first chunk %s, want the role with content null", events[0])
	}
	last := decode[chatResponse](t, []byte(events[len(events)-2])) // before [DONE]
	if len(last.Choices) != 0 || last.Usage == nil || last.Timings == nil || !strings.HasPrefix(last.SystemFingerprint, "b") {
		t.Errorf("usage chunk %s", events[len(events)-2])
	}
	long := strings.Repeat("hello world ", 200)
	code, _, b = ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"`+long+`"}]}`)
	var e struct {
		Error struct {
			Type          string `json:"type"`
			NPromptTokens int    `json:"n_prompt_tokens"`
			NCtx          int    `json:"n_ctx"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e); code != 400 || e.Error.Type != "exceed_context_size_error" || e.Error.NPromptTokens <= e.Error.NCtx || e.Error.NCtx != 128 {
		t.Errorf("too long: %d %s", code, b)
	}
	code, _, b = ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"temperature":0,"response_format":{"type":"json_object","schema":{"const":"42"}}}`)
	if c := decode[chatResponse](t, b); code != 200 || *c.Choices[0].Message.Content != `"42"` {
		t.Errorf("json_object with a schema: %d %s", code, b)
	}
	if code, _, b := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object","schema":{"type":"hiccup"}}}`); code != 400 {
		t.Errorf("json_object with a bad schema: %d %s", code, b)
	}
}

// TestLlamaMetricsAndDefaults: a server started with llama-server's
// --n-predict, --temp and --seed gives requests those defaults, and
// /metrics carries the llamacpp:* series, unlabelled, counting what the
// answers reported.
func TestLlamaMetricsAndDefaults(t *testing.T) {
	temp, seed := float32(0), uint64(42)
	ts := newTestServer(t, func(o *Options) { o.NPredict, o.Temperature, o.Seed = 5, &temp, &seed })
	var predicted, prompt int
	for _, body := range []string{`{"prompt":"Once upon a time","ignore_eos":true}`, `{"prompt":"Once upon a time","ignore_eos":true,"n_predict":3}`} {
		code, _, b := ts.post(t, "/completion", body)
		r := decode[nativeResult](t, b)
		if code != 200 || r.GenerationSettings["seed"] != 42.0 || r.GenerationSettings["temperature"] != 0.0 {
			t.Fatalf("%s: %d %s", body, code, b)
		}
		predicted += r.Timings.PredictedN
		prompt += r.Timings.PromptN
	}
	if predicted != 5+3 {
		t.Errorf("predicted %d tokens, want 5 (--n-predict) + 3", predicted)
	}
	props := decode[propsResponse](t, get(t, ts.url+"/props"))
	if pr := props.DefaultGenerationSettings.Params; pr["seed"] != 42.0 || pr["n_predict"] != 5.0 || pr["temperature"] != 0.0 || props.ModelPath != testModel {
		t.Errorf("/props: %+v", props)
	}
	resp, err := http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := parseMetrics(t, string(b))
	if m["llamacpp:tokens_predicted_total"] != float64(predicted) || m["llamacpp:prompt_tokens_total"] != float64(prompt) ||
		m["llamacpp:n_decode_total"] <= 0 || m["llamacpp:requests_processing"] != 0 {
		t.Errorf("llamacpp series: predicted %v prompt %v decode %v processing %v (want %d, %d, > 0, 0)", m["llamacpp:tokens_predicted_total"],
			m["llamacpp:prompt_tokens_total"], m["llamacpp:n_decode_total"], m["llamacpp:requests_processing"], predicted, prompt)
	}
	if !strings.Contains(string(b), "# TYPE llamacpp:n_decode_total counter") || !strings.Contains(string(b), "# TYPE llamacpp:requests_deferred gauge") {
		t.Error("llamacpp series lack their TYPE lines")
	}
}

// TestApplyTemplateReasoning: /apply-template renders the prompt a chat
// request would get, reasoning switches included, as llama-server (whose
// templates read enable_thinking): the server's --reasoning, the request's
// chat_template_kwargs and reasoning_effort; tools only reach the template
// (a template without a tool-call format is no 400 here).
func TestApplyTemplateReasoning(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"What is today?"}]`
	off := "<|im_start|>assistant\n<think>\n\n</think>\n\n"
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	offServer := reasoningServer(t, "Qwen-Qwen3-0.6B", func(o *Options) { f := false; o.Thinking = &f })
	r1 := reasoningServer(t, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", nil)
	r1off := reasoningServer(t, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", func(o *Options) { f := false; o.Thinking = &f })
	for _, c := range []struct {
		ts         *testServer
		body, want string
	}{
		{ts, `{` + msgs + `}`, "<|im_start|>assistant\n"},
		{ts, `{` + msgs + `,"chat_template_kwargs":{"enable_thinking":false}}`, off},
		{ts, `{` + msgs + `,"reasoning_effort":"none"}`, off},
		{offServer, `{` + msgs + `}`, off},
		{offServer, `{` + msgs + `,"tools":[` + weatherTool + `]}`, off},
		{r1, `{` + msgs + `}`, "<｜Assistant｜><think>\n"},
		{r1, `{` + msgs + `,"tools":[` + weatherTool + `]}`, "<｜Assistant｜><think>\n"},
		{r1off, `{` + msgs + `}`, "<｜Assistant｜><think>\n</think>"},
	} {
		code, _, b := c.ts.post(t, "/apply-template", c.body)
		if got := decode[struct{ Prompt string }](t, b).Prompt; code != 200 || !strings.HasSuffix(got, c.want) {
			t.Errorf("%s: %d %q, want it to end %q", c.body, code, b, c.want)
		}
	}
	if code, _, b := ts.post(t, "/apply-template", `{`+msgs+`,"chat_template_kwargs":{"enable_thinking":"no"}}`); code != 400 {
		t.Errorf("a string enable_thinking: %d %s", code, b)
	}
	// A trailing assistant message is continued (llama-server's prefill);
	// two of them are a 400.
	code, _, b := ts.post(t, "/apply-template", `{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hel"}]}`)
	if got := decode[struct{ Prompt string }](t, b).Prompt; code != 200 || !strings.HasSuffix(got, "<|im_start|>assistant\n<think></think>Hel") {
		t.Errorf("prefill: %d %q", code, got)
	}
	if code, _, b := ts.post(t, "/apply-template", `{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"a"},{"role":"assistant","content":"b"}]}`); code != 400 || !strings.Contains(string(b), "2 or more assistant messages") {
		t.Errorf("two trailing assistant messages: %d %s", code, b)
	}
}

// TestVerboseNative: llama-server's debug object — a chat or completion
// answer carries __verbose (the native /completion object: the prompt as
// the model saw it, the raw text, the token counts) when the request sets
// verbose or the server runs with Options.Verbose (serve --verbose);
// usage has prompt_tokens_details.cached_tokens.
func TestVerboseNative(t *testing.T) {
	ts := newTestServer(t, nil)
	type answer struct {
		Choices []struct{ Message struct{ Content string } }
		Usage   struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails *struct {
				CachedTokens *int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		}
		Verbose *struct {
			Prompt          string
			Content         string
			TokensEvaluated int    `json:"tokens_evaluated"`
			StopType        string `json:"stop_type"`
		} `json:"__verbose"`
	}
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"temperature":0`
	code, _, b := ts.post(t, "/v1/chat/completions", body+`,"verbose":true}`)
	a := decode[answer](t, b)
	if code != 200 || a.Verbose == nil || !strings.HasSuffix(a.Verbose.Prompt, "<|user|>hi\n<|assistant|>") || a.Verbose.Content != a.Choices[0].Message.Content ||
		a.Verbose.TokensEvaluated != a.Usage.PromptTokens || a.Verbose.StopType != "limit" {
		t.Errorf("verbose: %d %s", code, b)
	}
	if a.Usage.PromptTokensDetails == nil || a.Usage.PromptTokensDetails.CachedTokens == nil {
		t.Errorf("no prompt_tokens_details.cached_tokens: %s", b)
	}
	if _, _, b := ts.post(t, "/v1/chat/completions", body+`}`); decode[answer](t, b).Verbose != nil {
		t.Errorf("__verbose without verbose: %s", b)
	}
	vs := newTestServer(t, func(o *Options) { o.Verbose = true })
	if _, _, b := vs.post(t, "/v1/completions", `{"prompt":"hi","max_tokens":2}`); !strings.Contains(string(b), `"__verbose":{`) {
		t.Errorf("serve --verbose: %s", b)
	}
}

// TestModelsLlamaServerFields: /models lists each model as llama-server
// does beside OpenAI's fields — aliases (only the names the operator gave,
// not the file's) and tags, always arrays; status loaded or unloaded; a
// loaded model's meta (vocabulary, contexts, width, parameters).
func TestModelsLlamaServerFields(t *testing.T) {
	a := testSpec(t, "aidreams", nil)
	a.Names = append(a.Names, "code", "fim")
	a.Aliases, a.Tags, a.Preload = []string{"code", "fim"}, []string{"chat", "small"}, true
	ts := newTestRouter(t, RouterOptions{Models: []ModelSpec{a, testSpec(t, "mha", nil)}}, nil)
	if err := ts.front.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/models", "/v1/models"} {
		resp, err := http.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		list := decode[struct{ Data []modelCard }](t, b)
		if len(list.Data) != 2 {
			t.Fatalf("%s: %s", path, b)
		}
		m, n := list.Data[0], list.Data[1]
		if m.ID != "aidreams" || !slices.Equal(m.Aliases, []string{"code", "fim"}) || !slices.Equal(m.Tags, []string{"chat", "small"}) ||
			m.Status == nil || m.Status.Value != "loaded" || m.Meta == nil || m.Meta.NVocab != 512 || m.Meta.NCtx != 128 ||
			m.Meta.NEmbd == 0 || m.Meta.NParams == 0 || m.Meta.NCtxTrain == 0 {
			t.Errorf("%s, the loaded model: %s", path, b)
		}
		if n.Status == nil || n.Status.Value != "unloaded" || n.Meta != nil || !strings.Contains(string(b), `"aliases":[],"tags":[]`) {
			t.Errorf("%s, the model not loaded: %s", path, b)
		}
	}
}
