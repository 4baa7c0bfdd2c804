package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// ndjson splits an NDJSON body into its lines, each a JSON object.
func ndjson(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("NDJSON line %q: %v", sc.Text(), err)
		}
		out = append(out, v)
	}
	return out
}

// TestOllamaAPI: generate and chat stream NDJSON by default and the pieces
// add up to the stream:false answer; options map onto our sampling (a
// seeded chat equals /v1/chat/completions with the same fields); bad input
// is a 4xx in Ollama's {"error"} shape naming what is wrong.
func TestOllamaAPI(t *testing.T) {
	ts := newTestServer(t, nil)

	code, h, b := ts.post(t, "/api/generate", `{"model":"aidreams260K.bin","prompt":"Once upon a time","raw":true,"options":{"num_predict":10,"temperature":0}}`)
	lines := ndjson(t, b)
	if code != 200 || h.Get("Content-Type") != "application/x-ndjson" || len(lines) < 3 {
		t.Fatalf("default generate: %d %s %s", code, h.Get("Content-Type"), b)
	}
	streamed := ""
	for i, l := range lines {
		streamed += l["response"].(string)
		if l["done"] != (i == len(lines)-1) {
			t.Errorf("line %d done=%v", i, l["done"])
		}
	}
	last := lines[len(lines)-1]
	if last["done_reason"] != "length" || last["eval_count"] != 10.0 || last["prompt_eval_count"].(float64) < 1 {
		t.Errorf("last line %v", last)
	}
	code, _, b = ts.post(t, "/api/generate", `{"model":"aidreams260K.bin:latest","prompt":"Once upon a time","raw":true,"stream":false,"options":{"num_predict":10,"temperature":0}}`)
	if r := decode[ollamaGenerateResponse](t, b); code != 200 || r.Response != streamed || !r.Done {
		t.Errorf("stream:false %q, streamed %q", r.Response, streamed)
	}

	code, _, b = ts.post(t, "/api/chat", `{"model":"alias","stream":false,"messages":[{"role":"user","content":"Tell me a story"}],
		"options":{"temperature":1.1,"seed":5,"top_k":20,"top_p":0.9,"repeat_penalty":1.2,"num_predict":16,"stop":["."],"num_ctx":4096,"num_thread":8}}`)
	oc := decode[ollamaChatResponse](t, b)
	code2, _, b2 := ts.post(t, "/v1/chat/completions", `{"model":"alias","messages":[{"role":"user","content":"Tell me a story"}],
		"temperature":1.1,"seed":5,"top_k":20,"top_p":0.9,"repetition_penalty":1.2,"max_tokens":16,"stop":["."]}`)
	cc := decode[chatResponse](t, b2)
	if code != 200 || code2 != 200 || oc.Message.Content != *cc.Choices[0].Message.Content || oc.Model != "alias" {
		t.Errorf("ollama chat %d %q, openai %d %q", code, oc.Message.Content, code2, *cc.Choices[0].Message.Content)
	}

	code, _, b = ts.post(t, "/api/embeddings", `{"model":"alias","prompt":"Once upon a time"}`)
	if e := decode[struct{ Embedding []float32 }](t, b); code != 200 || len(e.Embedding) != 64 {
		t.Errorf("legacy embeddings: %d %s", code, b)
	}

	for _, c := range []struct {
		path, body string
		status     int
		msg        string
	}{
		{"/api/generate", `{"prompt":`, 400, "invalid JSON"},
		{"/api/chat", `{"messages":[{"role":"user","content":"x"}],"options":{"temperature":"hot"}}`, 400, "temperature"},
		{"/api/chat", `{"messages":[{"role":"user","content":"x"}],"options":{"temperature":-1}}`, 400, "temperature"},
		{"/api/chat", `{"messages":[{"role":"user","content":"x","images":["aGk="]}]}`, 400, "images"},
		{"/api/chat", `{"messages":[{"role":"wizard","content":"x"}]}`, 400, "role"},
		{"/api/chat", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, `"nope"`},
		{"/api/generate", `{"prompt":"x","context":[1,2,3]}`, 400, "context"},
		{"/api/generate", `{"prompt":"x","suffix":"y"}`, 400, "suffix"},
		{"/api/generate", `{"prompt":"x","images":["aGk="]}`, 400, "images"},
		{"/api/generate", `{"prompt":"x","keep_alive":"soon"}`, 400, "keep_alive"},
		{"/api/generate", `{"prompt":"x","format":5}`, 400, "format"},
		{"/api/generate", `{"prompt":"x","format":{"type":"object","patternProperties":{"a":{}}}}`, 400, "patternProperties"},
		{"/api/embed", `{"input":""}`, 400, "input"},
		{"/api/show", `{"model":"nope"}`, 404, `"nope"`},
		{"/api/pull", `{"model":"llama3.2:1b"}`, 400, "Ollama registry"},
		{"/api/pull", `{"model":"hf.co/org/repo:Q8_0"}`, 400, "nanoserve pull org/repo:Q8_0"},
	} {
		code, _, b := ts.post(t, c.path, c.body)
		var e ollamaError
		if json.Unmarshal(b, &e); code != c.status || !strings.Contains(e.Error, c.msg) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.path, c.body, code, b, c.status, c.msg)
		}
	}
	resp, err := http.Get(ts.url + "/api/chat")
	if err != nil {
		t.Fatal(err)
	}
	var e ollamaError
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 405 || !strings.Contains(e.Error, "POST") {
		t.Errorf("GET /api/chat: %d %+v", resp.StatusCode, e)
	}
}

// FuzzOllamaRequest feeds arbitrary bodies to the Ollama endpoints that
// take one. It must never panic (a recovered panic is a 500); a refusal
// must be a 4xx carrying Ollama's {"error": "..."} with a message.
//
//	go test ./server -run '^$' -fuzz FuzzOllamaRequest -fuzztime 5m -parallel 1
func FuzzOllamaRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"alias","prompt":"Once","options":{"num_predict":3}}`,
		`{"prompt":"x","raw":true,"stream":false,"format":"json","options":{"num_predict":4,"seed":1,"temperature":0.5,"stop":["a"]}}`,
		`{"prompt":"x","system":"s","keep_alive":"5m","format":{"type":"object"},"options":{"num_predict":-1,"top_k":-3}}`,
		`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},{"role":"tool","content":"1","tool_name":"f"}],"options":{"num_predict":2}}`,
		`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"stream":false,"options":{"num_predict":2}}`,
		`{"messages":[],"keep_alive":0}`, `{"input":["a","b"],"dimensions":8}`, `{"prompt":"a"}`, `{"model":"alias"}`,
		`{"options":{"temperature":1e400}}`, `{"options":[]}`, `{"keep_alive":"-1"}`, `{"context":[]}`, `[1]`, `null`, ``, `{"model":5}`,
	} {
		for k := range uint8(5) {
			f.Add(k, []byte(seed))
		}
	}
	ts := newTestServer(f, nil)
	paths := []string{"/api/generate", "/api/chat", "/api/embed", "/api/embeddings", "/api/show"}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		path := paths[int(kind)%len(paths)]
		w := httptest.NewRecorder()
		ts.front.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if w.Code >= 500 {
			t.Fatalf("%s %q: %d %s", path, body, w.Code, w.Body)
		}
		if w.Code != 200 {
			var e ollamaError
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" || w.Code < 400 {
				t.Fatalf("%s %q: %d %s: want a 4xx with {\"error\"}", path, body, w.Code, w.Body)
			}
		}
	})
}
