package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/internal/testshared"
	"nanoserve/model"
)

// testSpec is a served model: aidreams260K ("aidreams") or tiny_mha with
// the Llama 2 tokenizer ("mha"), each load a fresh model and engine;
// loads counts them.
func testSpec(t testing.TB, name string, loads *atomic.Int32) ModelSpec {
	dir := testshared.Dir(t)
	path, tok := dir+"/models/llama2c/aidreams260K.bin", dir+"/models/llama2c/aidreams-tok512.bin"
	if name == "mha" {
		path, tok = dir+"/models/llama2c/tiny_mha.bin", dir+"/models/llama2c/llama2-tokenizer.bin"
	}
	tmpl, err := chat.Parse(testTemplate)
	if err != nil {
		t.Fatal(err)
	}
	return ModelSpec{Names: []string{name, name + ".bin"}, Load: func() (*LoadedModel, error) {
		if loads != nil {
			loads.Add(1)
		}
		m, err := model.Load(path, model.Options{Tokenizer: tok, Threads: 1})
		if err != nil {
			return nil, err
		}
		eng, err := engine.New(m, engine.Options{CtxSize: 128})
		if err != nil {
			m.Close()
			return nil, err
		}
		return &LoadedModel{Engine: eng, Options: modelOptions(Options{Template: tmpl, Manifest: &Manifest{Architecture: m.Arch, ContextLength: m.ContextLen}}),
			Bytes: testModelBytes, Close: func() { eng.Close(); m.Close() }}, nil
	}}
}

// testModelBytes is what each test model says it holds, for memory budgets.
const testModelBytes = 1 << 20

func newTestRouter(t testing.TB, opts RouterOptions, hook func(name string, s *Server)) *testServer {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := newRouter(opts, hook)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return newTS(s, hs.URL)
}

// alone is model name's greedy answer to prompt from a server of that
// model alone: /v1/completions text and /api/generate response.
func alone(t *testing.T, name, prompt string) (string, string) {
	ts := newTestRouter(t, RouterOptions{Models: []ModelSpec{testSpec(t, name, nil)}}, nil)
	c := complete(t, ts, name, prompt)
	g := ollamaGenerate(t, ts, name, prompt)
	return c, g
}

func complete(t *testing.T, ts *testServer, model, prompt string) string {
	t.Helper()
	code, _, b := ts.post(t, "/v1/completions", fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":12,"temperature":0}`, model, prompt))
	if code != 200 {
		t.Fatalf("%s: %d %s", model, code, b)
	}
	return decode[completionResponse](t, b).Choices[0].Text
}

func ollamaGenerate(t *testing.T, ts *testServer, model, prompt string) string {
	t.Helper()
	code, _, b := ts.post(t, "/api/generate", fmt.Sprintf(`{"model":%q,"prompt":%q,"raw":true,"stream":false,"options":{"num_predict":12,"temperature":0}}`, model, prompt))
	if code != 200 {
		t.Fatalf("%s: %d %s", model, code, b)
	}
	r := decode[ollamaGenerateResponse](t, b)
	if !r.Done || r.EvalCount != 12 || r.DoneReason != "length" || r.PromptEvalCount == 0 {
		t.Errorf("%s: generate %s", model, b)
	}
	return r.Response
}

// TestRouterTwoModels serves two models at once, requests interleaved from
// several goroutines under every name form: each answer equals that model
// served alone (greedy), on the OpenAI and the Ollama API. Unknown names
// are a 404 naming the model, in each API's error shape; /v1/models lists
// both with their manifests; /metrics labels each model's series.
func TestRouterTwoModels(t *testing.T) {
	prompts := []string{"Once upon a time", "The little dog"}
	want := map[string][2]string{}
	for _, m := range []string{"aidreams", "mha"} {
		for _, p := range prompts {
			c, g := alone(t, m, p)
			want[m+"|"+p] = [2]string{c, g}
		}
	}
	if want["aidreams|"+prompts[0]] == want["mha|"+prompts[0]] {
		t.Fatal("the two models answer alike: the test could not tell them apart")
	}
	var loads atomic.Int32
	ts := newTestRouter(t, RouterOptions{Models: []ModelSpec{testSpec(t, "aidreams", &loads), testSpec(t, "mha", &loads)}}, nil)
	names := map[string]string{"aidreams": "aidreams", "aidreams.bin": "aidreams", "aidreams:latest": "aidreams",
		"mha": "mha", "mha.bin": "mha", "mha:latest": "mha", "": "aidreams"}
	var wg sync.WaitGroup
	for name, m := range names {
		for _, p := range prompts {
			wg.Go(func() {
				w := want[m+"|"+p]
				if got := complete(t, ts, name, p); got != w[0] {
					t.Errorf("model %q prompt %q: /v1/completions %q, alone %q", name, p, got, w[0])
				}
				if got := ollamaGenerate(t, ts, name, p); got != w[1] {
					t.Errorf("model %q prompt %q: /api/generate %q, alone %q", name, p, got, w[1])
				}
			})
		}
	}
	wg.Wait()
	if n := loads.Load(); n != 2 {
		t.Errorf("%d loads, want 2 (each model once)", n)
	}

	code, _, b := ts.post(t, "/v1/chat/completions", `{"model":"llama3.2:1b","messages":[{"role":"user","content":"hi"}]}`)
	var oe struct{ Error apiError }
	if json.Unmarshal(b, &oe); code != 404 || oe.Error.Code == nil || *oe.Error.Code != "model_not_found" ||
		!strings.Contains(oe.Error.Message, `"llama3.2:1b"`) || !strings.Contains(oe.Error.Message, `"mha"`) {
		t.Errorf("unknown model (OpenAI): %d %s", code, b)
	}
	code, _, b = ts.post(t, "/api/chat", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`)
	if e := decode[ollamaError](t, b); code != 404 || !strings.Contains(e.Error, `"nope"`) {
		t.Errorf("unknown model (Ollama): %d %s", code, b)
	}

	resp, err := http.Get(ts.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	list := decode[struct{ Data []modelCard }](t, b)
	if len(list.Data) != 2 || list.Data[1].ID != "mha" || list.Data[1].Manifest == nil || list.Data[1].Manifest.Architecture != "llama" ||
		list.Data[0].Loaded == nil || !*list.Data[0].Loaded || len(list.Data[0].Aliases) != 0 {
		t.Errorf("/v1/models: %s", b)
	}

	resp, err = http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	vals := parseMetrics(t, text)
	for _, m := range []string{"aidreams", "mha"} {
		if v := vals[`nanoserve_generation_tokens_total{model_name="`+m+`"}`]; v < 12 {
			t.Errorf("generation tokens of %s: %v\n%s", m, v, text)
		}
		if _, ok := vals[`vllm:num_requests_waiting{model_name="`+m+`"}`]; !ok {
			t.Errorf("no vllm:num_requests_waiting for %s", m)
		}
	}
	if n := strings.Count(text, "# TYPE vllm:num_requests_waiting "); n != 1 {
		t.Errorf("%d TYPE lines for one family", n)
	}
}

// TestRouterUnloadInFlight: with models-max 1, or a memory budget that
// holds one model, a request for the second model unloads the first while a
// stream on it is in flight; the stream completes with the answer the model
// gives alone, and the first model's engine closes only after it.
// keep_alive 0 unloads a model once idle.
func TestRouterUnloadInFlight(t *testing.T) {
	wantA, _ := alone(t, "aidreams", "Once upon a time")
	for _, c := range []struct {
		name string
		opts RouterOptions
	}{
		{"models-max", RouterOptions{MaxLoaded: 1}},
		{"memory-budget", RouterOptions{MemoryBudget: testModelBytes * 3 / 2}},
	} {
		t.Run(c.name, func(t *testing.T) { testUnloadInFlight(t, c.opts, wantA) })
	}
}

func testUnloadInFlight(t *testing.T, opts RouterOptions, wantA string) {
	opts.Models = []ModelSpec{testSpec(t, "aidreams", nil), testSpec(t, "mha", nil)}
	gate := make(chan struct{})
	started := make(chan struct{})
	var aSrv atomic.Pointer[Server]
	ts := newTestRouter(t, opts,
		func(name string, s *Server) {
			if name != "aidreams" || aSrv.Load() != nil {
				return
			}
			aSrv.Store(s)
			var once sync.Once
			s.gen = paced{s.gen, func() { once.Do(func() { close(started); <-gate }) }}
		})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	t.Cleanup(open) // before the server's cleanup, which waits for the stream
	done := make(chan string)
	go func() {
		code, _, b := ts.post(t, "/v1/completions", `{"model":"aidreams","prompt":"Once upon a time","max_tokens":12,"temperature":0,"stream":true}`)
		if code != 200 {
			t.Errorf("stream: %d %s", code, b)
		}
		text, finish, _ := streamText(t, sseEvents(t, b), false)
		done <- text + "|" + finish
	}()
	<-started
	complete(t, ts, "mha", "Hello") // loads mha, unloads aidreams (busy)
	ps := decode[struct{ Models []ollamaModel }](t, get(t, ts.url+"/api/ps"))
	if len(ps.Models) != 1 || ps.Models[0].Name != "mha" {
		t.Errorf("/api/ps: %+v, want mha alone", ps.Models)
	}
	if aSrv.Load().eng.Heartbeat().IsZero() {
		t.Fatal("the unloaded model's engine closed under its in-flight stream")
	}
	open()
	if got := <-done; got != wantA+"|length" {
		t.Errorf("in-flight stream: %q, alone %q", got, wantA+"|length")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !aSrv.Load().eng.Heartbeat().IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("the unloaded model's engine did not close after its last request")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := complete(t, ts, "aidreams", "Once upon a time"); got != wantA {
		t.Errorf("reloaded: %q, want %q", got, wantA)
	}

	code, _, b := ts.post(t, "/api/generate", `{"model":"aidreams","keep_alive":0}`)
	if r := decode[ollamaGenerateResponse](t, b); code != 200 || r.DoneReason != "unload" {
		t.Errorf("keep_alive 0: %d %s", code, b)
	}
	ps = decode[struct{ Models []ollamaModel }](t, get(t, ts.url+"/api/ps"))
	if len(ps.Models) != 0 {
		t.Errorf("/api/ps after keep_alive 0: %+v", ps.Models)
	}
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}
