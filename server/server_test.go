package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/internal/testshared"
	"nanoserve/model"
	"nanoserve/sample"
)

// The tests serve aidreams260K (a trained llama2.c model: dim 64, vocab 512,
// 128 positions), loaded once.
var (
	loadOnce sync.Once
	testEng  *engine.Engine
	loadErr  error
)

const testModel = "aidreams260K.bin"

// testTemplate is a small ChatML-like template for the chat tests.
const testTemplate = `{% for m in messages %}<|{{ m.role }}|>{{ m.content }}
{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}`

func sharedEngine(t testing.TB) *engine.Engine {
	t.Helper()
	dir := testshared.Dir(t)
	loadOnce.Do(func() {
		var m *model.Model
		m, loadErr = model.Load(dir+"/models/llama2c/aidreams260K.bin",
			model.Options{Tokenizer: dir + "/models/llama2c/aidreams-tok512.bin", Threads: 1})
		if loadErr != nil {
			return
		}
		testEng, loadErr = engine.New(m, engine.Options{})
	})
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return testEng
}

type testServer struct {
	*Server // the first model's handler (nil until it is loaded)
	front   *Front
	url     string
}

// newTS is the test server of a front served at url.
func newTS(f *Front, url string) *testServer {
	return &testServer{Server: firstModel(f), front: f, url: url}
}

// firstModel is the handler of a front's first model, nil when it is not
// loaded.
func firstModel(f *Front) *Server {
	return f.models.Entries()[0].Value
}

func newTestServer(t testing.TB, mod func(*Options)) *testServer {
	t.Helper()
	eng := sharedEngine(t)
	tmpl, err := chat.Parse(testTemplate)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{ModelNames: []string{testModel, "alias"}, Template: tmpl,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(eng, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return newTS(s, hs.URL)
}

// newEngineServer is newTestServer on an engine of its own, built with eo
// (speculation, a small queue, grammar limits: what the shared engine
// cannot have), over a fresh copy of the test model; both close with t.
func newEngineServer(t testing.TB, eo engine.Options, mod func(*Options)) *testServer {
	t.Helper()
	dir := testshared.Dir(t)
	m, err := model.Load(dir+"/models/llama2c/aidreams260K.bin",
		model.Options{Tokenizer: dir + "/models/llama2c/aidreams-tok512.bin", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	eng, err := engine.New(m, eo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	tmpl, err := chat.Parse(testTemplate)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{ModelNames: []string{testModel, "alias"}, Template: tmpl,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(eng, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return newTS(s, hs.URL)
}

// post sends a JSON body and returns the status, headers and body.
func (ts *testServer) post(t *testing.T, path, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(ts.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// sseEvents splits an SSE body into its data payloads, checking the framing:
// every event is one "data: " line followed by a blank line.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	expectBlank := false
	for sc.Scan() {
		line := sc.Text()
		if expectBlank {
			if line != "" {
				t.Fatalf("SSE: want a blank line after an event, got %q", line)
			}
			expectBlank = false
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("SSE: want a data: line, got %q", line)
		}
		out = append(out, data)
		expectBlank = true
	}
	if len(out) == 0 || out[len(out)-1] != "[DONE]" {
		t.Fatalf("SSE stream does not end with [DONE]: %q", out)
	}
	return out
}

func TestCompletionNonStream(t *testing.T) {
	ts := newTestServer(t, nil)
	code, _, body := ts.post(t, "/v1/completions", `{"model":"aidreams260K.bin","prompt":"Once upon a time","max_tokens":12,"temperature":0}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	r := decode[completionResponse](t, body)
	want, err := ts.eng.Generate(context.Background(), engine.Request{Prompt: "Once upon a time", Policy: greedy(12)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Object != "text_completion" || r.Model != testModel || !strings.HasPrefix(r.ID, "cmpl-") || len(r.Choices) != 1 {
		t.Fatalf("bad envelope: %s", body)
	}
	c := r.Choices[0]
	if c.Text != want.Text || c.Text == "" {
		t.Errorf("text %q, want %q", c.Text, want.Text)
	}
	if c.FinishReason == nil || *c.FinishReason != "length" {
		t.Errorf("finish_reason %v, want length", c.FinishReason)
	}
	if u := r.Usage; u == nil || u.PromptTokens != len(want.PromptIDs) || u.CompletionTokens != 12 || u.TotalTokens != u.PromptTokens+12 {
		t.Errorf("usage %+v, want prompt %d, completion 12", r.Usage, len(want.PromptIDs))
	}
}

func greedy(n int) sample.Policy {
	p := sample.Greedy()
	p.MaxTokens = n
	return p
}

// streamText reads a completions or chat stream and returns the
// concatenated text, the finish reason and the usage chunk (if any).
func streamText(t *testing.T, events []string, isChat bool) (text, finish string, u *usage) {
	t.Helper()
	for i, ev := range events[:len(events)-1] {
		if isChat {
			c := decode[chatResponse](t, []byte(ev))
			if c.Object != "chat.completion.chunk" {
				t.Fatalf("chunk %d object %q", i, c.Object)
			}
			if c.Usage != nil {
				if len(c.Choices) != 0 || i != len(events)-2 {
					t.Fatalf("usage chunk %d must be last and have no choices: %s", i, ev)
				}
				u = c.Usage
				continue
			}
			ch := c.Choices[0]
			if i == 0 && (ch.Delta == nil || ch.Delta.Role != "assistant") {
				t.Fatalf("first chat chunk must carry the role: %s", ev)
			}
			if ch.Delta != nil && ch.Delta.Content != nil {
				text += *ch.Delta.Content
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		} else {
			c := decode[completionResponse](t, []byte(ev))
			if c.Usage != nil {
				u = c.Usage
				continue
			}
			text += c.Choices[0].Text
			if fr := c.Choices[0].FinishReason; fr != nil {
				finish = *fr
			}
		}
	}
	return text, finish, u
}

func TestStreamEqualsNonStream(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tc := range []struct {
		path, body string
		chat       bool
	}{
		{"/v1/completions", `{"prompt":"The little dog","max_tokens":40,"temperature":0%s}`, false},
		{"/v1/chat/completions", `{"messages":[{"role":"system","content":"Be kind."},{"role":"user","content":"Tell me a story"}],"max_tokens":40,"temperature":0%s}`, true},
	} {
		code, _, body := ts.post(t, tc.path, fmt.Sprintf(tc.body, ""))
		if code != 200 {
			t.Fatalf("%s: status %d: %s", tc.path, code, body)
		}
		var whole, finish string
		var u *usage
		if tc.chat {
			r := decode[chatResponse](t, body)
			if r.Object != "chat.completion" || r.Choices[0].Message.Role != "assistant" {
				t.Fatalf("bad chat response %s", body)
			}
			whole, finish, u = *r.Choices[0].Message.Content, *r.Choices[0].FinishReason, r.Usage
		} else {
			r := decode[completionResponse](t, body)
			whole, finish, u = r.Choices[0].Text, *r.Choices[0].FinishReason, r.Usage
		}
		code, hdr, sbody := ts.post(t, tc.path, fmt.Sprintf(tc.body, `,"stream":true,"stream_options":{"include_usage":true}`))
		if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%s stream: status %d, content type %q: %s", tc.path, code, hdr.Get("Content-Type"), sbody)
		}
		text, sfinish, su := streamText(t, sseEvents(t, sbody), tc.chat)
		if text != whole || whole == "" {
			t.Errorf("%s: streamed %q, whole %q", tc.path, text, whole)
		}
		// (The cached share may differ: the stream finds the whole
		// request's prompt in the prefix cache.)
		if sfinish != finish || su == nil || su.PromptTokens != u.PromptTokens || su.CompletionTokens != u.CompletionTokens || su.TotalTokens != u.TotalTokens {
			t.Errorf("%s: stream finish %q usage %+v; whole %q %+v", tc.path, sfinish, su, finish, u)
		}
		// Without include_usage there is no usage chunk.
		_, _, sbody = ts.post(t, tc.path, fmt.Sprintf(tc.body, `,"stream":true`))
		if _, _, su := streamText(t, sseEvents(t, sbody), tc.chat); su != nil {
			t.Errorf("%s: usage chunk without include_usage", tc.path)
		}
	}
}

func TestChatContentPartsAndAlias(t *testing.T) {
	ts := newTestServer(t, nil)
	_, _, a := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a\nb"}],"max_tokens":10,"temperature":0}`)
	_, _, b := ts.post(t, "/v1/chat/completions", `{"model":"alias","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"max_tokens":10,"temperature":0}`)
	ra, rb := decode[chatResponse](t, a), decode[chatResponse](t, b)
	if *ra.Choices[0].Message.Content != *rb.Choices[0].Message.Content {
		t.Errorf("parts %q != string %q", *rb.Choices[0].Message.Content, *ra.Choices[0].Message.Content)
	}
	if ra.Model != testModel || rb.Model != "alias" {
		t.Errorf("models %q, %q", ra.Model, rb.Model)
	}
	// The chat prompt is the rendered template: usage counts its tokens.
	ids, err := ts.eng.Encode(&engine.Request{Prompt: "<|user|>a\nb\n<|assistant|>", ParseSpecial: true})
	if err != nil {
		t.Fatal(err)
	}
	if ra.Usage.PromptTokens != len(ids) {
		t.Errorf("prompt_tokens %d, want %d", ra.Usage.PromptTokens, len(ids))
	}
}

func TestSeedAndStop(t *testing.T) {
	ts := newTestServer(t, nil)
	body := `{"prompt":"Once upon a time","max_tokens":20,"temperature":1,"top_k":40,"seed":7}`
	_, _, a := ts.post(t, "/v1/completions", body)
	_, _, b := ts.post(t, "/v1/completions", body)
	ta, tb := decode[completionResponse](t, a).Choices[0].Text, decode[completionResponse](t, b).Choices[0].Text
	if ta != tb {
		t.Errorf("same seed, different text: %q vs %q", ta, tb)
	}
	// Stop on a word of the greedy text: the text ends before it.
	_, _, g := ts.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":30,"temperature":0}`)
	full := decode[completionResponse](t, g).Choices[0].Text
	words := strings.Fields(full)
	if len(words) < 3 {
		t.Fatalf("greedy text too short: %q", full)
	}
	stop := words[2]
	_, _, s := ts.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":"Once upon a time","max_tokens":30,"temperature":0,"stop":[%q]}`, stop))
	r := decode[completionResponse](t, s)
	if want := full[:strings.Index(full, stop)]; r.Choices[0].Text != want || *r.Choices[0].FinishReason != "stop" {
		t.Errorf("stop %q: text %q (%s), want %q", stop, r.Choices[0].Text, *r.Choices[0].FinishReason, want)
	}
}

func TestLogprobs(t *testing.T) {
	ts := newTestServer(t, nil)
	_, _, b := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"temperature":0,"logprobs":true,"top_logprobs":3}`)
	r := decode[chatResponse](t, b)
	lp := r.Choices[0].Logprobs
	if lp == nil || len(lp.Content) != r.Usage.CompletionTokens {
		t.Fatalf("chat logprobs %s", b)
	}
	for _, c := range lp.Content {
		if len(c.TopLogprobs) != 3 || c.Logprob > 0 || c.TopLogprobs[0].Logprob < c.Logprob || string(intBytes(c.Bytes)) != c.Token {
			t.Fatalf("bad entry %+v", c)
		}
	}
	_, _, b = ts.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"logprobs":2}`)
	cr := decode[completionResponse](t, b)
	clp := cr.Choices[0].Logprobs
	if clp == nil || len(clp.Tokens) != 8 || len(clp.TopLogprobs) != 8 || strings.Join(clp.Tokens, "") != cr.Choices[0].Text {
		t.Fatalf("completion logprobs %s", b)
	}
	// Streamed logprobs cover the same tokens.
	_, _, sb := ts.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"logprobs":2,"stream":true}`)
	var toks []string
	for _, ev := range sseEvents(t, sb) {
		if ev == "[DONE]" {
			break
		}
		if l := decode[completionResponse](t, []byte(ev)).Choices[0].Logprobs; l != nil {
			toks = append(toks, l.Tokens...)
		}
	}
	if strings.Join(toks, "|") != strings.Join(clp.Tokens, "|") {
		t.Errorf("streamed logprob tokens %q, want %q", toks, clp.Tokens)
	}
}

func intBytes(b []int) []byte {
	out := make([]byte, len(b))
	for i, v := range b {
		out[i] = byte(v)
	}
	return out
}

// TestErrors pins every error path: status, OpenAI error shape, param and a
// message that names the problem.
func TestErrors(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.MaxBodyBytes = 4096 })
	long := strings.Repeat("hello world ", 100)
	cases := []struct {
		name, method, path, body string
		status                   int
		param, code, msg         string
	}{
		{"syntax", "POST", "/v1/completions", `{"prompt": "x",}`, 400, "", "", "invalid JSON at byte offset"},
		{"truncated", "POST", "/v1/completions", `{"prompt": "x"`, 400, "", "", "unexpected end"},
		{"empty body", "POST", "/v1/completions", ``, 400, "", "", "empty"},
		{"not an object", "POST", "/v1/completions", `[1]`, 400, "", "", "must be a JSON object"},
		{"trailing", "POST", "/v1/completions", `{"prompt":"x"} {}`, 400, "", "", "trailing"},
		{"temperature type", "POST", "/v1/completions", `{"prompt":"x","temperature":"hot"}`, 400, "temperature", "", `"temperature" must be a number`},
		{"max_tokens type", "POST", "/v1/completions", `{"prompt":"x","max_tokens":1.5}`, 400, "max_tokens", "", "must be an integer"},
		{"top_p range", "POST", "/v1/completions", `{"prompt":"x","top_p":1.5}`, 400, "top_p", "", "top_p"},
		{"temperature range", "POST", "/v1/completions", `{"prompt":"x","temperature":-1}`, 400, "temperature", "", "temperature"},
		{"presence range", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"presence_penalty":3}`, 400, "presence_penalty", "", "presence_penalty"},
		{"max_tokens zero", "POST", "/v1/completions", `{"prompt":"x","max_tokens":0}`, 400, "max_tokens", "", "at least 1"},
		{"n", "POST", "/v1/completions", `{"prompt":"x","n":17}`, 400, "n", "", "n must be in [1, 16]"},
		{"best_of", "POST", "/v1/completions", `{"prompt":"x","n":2,"best_of":3}`, 400, "best_of", "", "best_of must equal n"},
		{"echo", "POST", "/v1/completions", `{"prompt":"x","echo":true}`, 400, "echo", "", "echo"},
		{"logprobs range", "POST", "/v1/completions", `{"prompt":"x","logprobs":21}`, 400, "logprobs", "", "logprobs"},
		{"top_logprobs alone", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}`, 400, "top_logprobs", "", "requires logprobs"},
		{"stop type", "POST", "/v1/completions", `{"prompt":"x","stop":5}`, 400, "stop", "", "stop must be"},
		{"stream_options alone", "POST", "/v1/completions", `{"prompt":"x","stream_options":{"include_usage":true}}`, 400, "stream_options", "", "stream"},
		{"prompt missing", "POST", "/v1/completions", `{"max_tokens":3}`, 400, "prompt", "", "prompt is required"},
		{"prompt type", "POST", "/v1/completions", `{"prompt":{"a":1}}`, 400, "prompt", "", "prompt must be"},
		{"mixed prompt array", "POST", "/v1/completions", `{"prompt":["a",5]}`, 400, "prompt", "", "an array of strings"},
		{"empty prompt array", "POST", "/v1/completions", `{"prompt":[]}`, 400, "prompt", "", "token array is empty"},
		{"token out of vocab", "POST", "/v1/completions", `{"prompt":[1, 99999]}`, 400, "prompt", "", "prompt[1] = 99999"},
		{"prompt too long", "POST", "/v1/completions", `{"prompt":"` + long + `"}`, 400, "prompt", "context_length_exceeded", "maximum context length is 128 tokens, but the prompt has"},
		{"chat too long", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long + `"}]}`, 400, "messages", "context_length_exceeded", "maximum context length"},
		{"no messages", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "messages", "", "non-empty"},
		{"bad role", "POST", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"x"}]}`, 400, "messages[0].role", "", `"wizard"`},
		{"bad content", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":5}]}`, 400, "messages[0].content", "", "string or an array"},
		{"image part", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content[0].type", "", "image_url"},
		{"messages type", "POST", "/v1/chat/completions", `{"messages":"hi"}`, 400, "messages", "", "must be an array"},
		{"tools", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, 400, "tools[0].function", "", "required"},
		{"unknown model", "POST", "/v1/completions", `{"model":"gpt-4","prompt":"x"}`, 404, "model", "model_not_found", `"gpt-4" does not exist`},
		{"unknown model card", "GET", "/v1/models/gpt-4", ``, 404, "model", "model_not_found", "gpt-4"},
		{"unknown path", "GET", "/v1/audio/speech", ``, 404, "", "not_found", "/v1/audio/speech"},
		{"unclean path", "GET", "//v1/models", ``, 404, "", "not_found", "//v1/models"},
		{"dot-dot path", "GET", "/v1/../health", ``, 404, "", "not_found", "/v1/../health"},
		{"unclean post", "POST", "/v1//completions", `{"prompt":"x"}`, 404, "", "not_found", "/v1//completions"},
		{"method", "GET", "/v1/completions", ``, 405, "", "method_not_allowed", "use POST"},
		{"method chat", "DELETE", "/v1/chat/completions", ``, 405, "", "method_not_allowed", "use POST"},
		{"method models", "POST", "/v1/models", `{}`, 405, "", "method_not_allowed", "use GET"},
		{"too large", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("x", 5000) + `"}`, 413, "", "request_too_large", "4096 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, ts.url+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			checkError(t, resp, b, tc.status, tc.param, tc.code, tc.msg)
			if tc.status == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without Allow header")
			}
		})
	}
}

func checkError(t *testing.T, resp *http.Response, b []byte, status int, param, code, msg string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	var e struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
		t.Fatalf("not an OpenAI error object: %s", b)
	}
	if e.Error.Type == "" || !strings.Contains(e.Error.Message, msg) {
		t.Errorf("error %+v: message should contain %q", *e.Error, msg)
	}
	if (e.Error.Param == nil) != (param == "") || e.Error.Param != nil && *e.Error.Param != param {
		t.Errorf("param %v, want %q (%s)", e.Error.Param, param, b)
	}
	if (e.Error.Code == nil) != (code == "") || e.Error.Code != nil && *e.Error.Code != code {
		t.Errorf("code %v, want %q (%s)", e.Error.Code, code, b)
	}
}

func TestTokenPromptAndTemplateRaise(t *testing.T) {
	ts := newTestServer(t, nil)
	ids, err := ts.eng.Encode(&engine.Request{Prompt: "Once upon a time"})
	if err != nil {
		t.Fatal(err)
	}
	idsJSON, _ := json.Marshal(ids)
	_, _, a := ts.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":10,"temperature":0}`)
	_, _, b := ts.post(t, "/v1/completions", `{"prompt":`+string(idsJSON)+`,"max_tokens":10,"temperature":0}`)
	_, _, c := ts.post(t, "/v1/completions", `{"prompt":[`+string(idsJSON)+`],"max_tokens":10,"temperature":0}`)
	ta := decode[completionResponse](t, a).Choices[0].Text
	if tb, tc := decode[completionResponse](t, b).Choices[0].Text, decode[completionResponse](t, c).Choices[0].Text; tb != ta || tc != ta {
		t.Errorf("token prompt %q / %q, text prompt %q", tb, tc, ta)
	}

	tmpl, err := chat.Parse(`{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}` + testTemplate)
	if err != nil {
		t.Fatal(err)
	}
	ts = newTestServer(t, func(o *Options) { o.Template = tmpl })
	resp, err := http.Post(ts.url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"system","content":"x"},{"role":"user","content":"y"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkError(t, resp, body, 400, "messages", "", "System role not supported")
}

func TestNoChatTemplate(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.Template = nil })
	resp, err := http.Post(ts.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkError(t, resp, b, 400, "messages", "", "no chat template")
}

func TestAPIKey(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.APIKey = "sekret" })
	for _, tc := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer wrong", 401}, {"sekret", 401}, {"Bearer sekret", 200}} {
		req, _ := http.NewRequest("GET", ts.url+"/v1/models", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if tc.status == 401 {
			checkError(t, resp, b, 401, "", "invalid_api_key", "API key")
		} else if resp.StatusCode != 200 {
			t.Errorf("auth %q: status %d", tc.auth, resp.StatusCode)
		}
	}
	// /health and /metrics stay open for probes and scrapers.
	for _, p := range []string{"/health", "/metrics"} {
		resp, err := http.Get(ts.url + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", p, resp.StatusCode)
		}
	}
}

func TestOverloaded(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.MaxPending = 1 })
	ts.slots <- struct{}{} // one generation admitted and not finished
	resp, err := http.Post(ts.url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkError(t, resp, b, 429, "", "server_overloaded", "full")
	if resp.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	<-ts.slots
	if code, _, b := ts.post(t, "/v1/completions", `{"prompt":"x","max_tokens":2}`); code != 200 {
		t.Fatalf("after the slot freed: %d %s", code, b)
	}
	// An engine refusal maps to 429 too.
	if e := ts.startError(context.Background(), fmt.Errorf("%w (3 waiting)", engine.ErrOverloaded), &job{}); e.status != 429 || e.retryAfter == 0 {
		t.Errorf("engine overload → %d", e.status)
	}
}

// TestEngineClosed: a request to an engine that has shut down is a 503.
func TestEngineClosed(t *testing.T) {
	eng, err := engine.New(sharedEngine(t).Model(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng.Close()
	s, err := New(eng, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkError(t, resp, b, 503, "", "shutting_down", "shut down")
}

func TestPanicRecovered(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.gen = &panicOnce{generator: ts.gen} // the first generation's handler panics
	req, _ := http.NewRequest("POST", ts.url+"/v1/completions", strings.NewReader(`{"prompt":"x"}`))
	req.Header.Set("X-Test-Panic", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkError(t, resp, b, 500, "", "", "internal server error")
	if code, _, b := ts.post(t, "/v1/completions", `{"prompt":"x","max_tokens":2}`); code != 200 {
		t.Fatalf("server broken after a panic: %d %s", code, b)
	}
	if v := metricValue(t, ts, `nanoserve_requests_total{endpoint="completions",status="500"}`); v != 1 {
		t.Errorf("500s counted %v", v)
	}
}

// TestDisconnectCancels: a client that goes away mid-stream cancels its
// generation (the engine ends it as cancelled, long before max_tokens).
func TestDisconnectCancels(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.gen = paced{ts.gen, func() { time.Sleep(5 * time.Millisecond) }} // a slow client: 120 tokens ≥ 0.6 s
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/completions",
		strings.NewReader(`{"prompt":"Once","max_tokens":120,"ignore_eos":true,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	// The generation ends (its results counted) soon after the client left.
	for deadline := time.Now().Add(10 * time.Second); metricValue(t, ts, `nanoserve_generations_total{finish_reason="cancelled"}`) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the generation was not cancelled")
		}
	}
	if g := metricValue(t, ts, "nanoserve_generation_tokens_total"); g >= 120 {
		t.Errorf("generated %v tokens after the client left", g)
	}
}

func TestConcurrent(t *testing.T) {
	ts := newTestServer(t, nil)
	_, _, b := ts.post(t, "/v1/completions", `{"prompt":"The cat","max_tokens":16,"temperature":0}`)
	want := decode[completionResponse](t, b).Choices[0].Text
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := i%2 == 1
			resp, err := http.Post(ts.url+"/v1/completions", "application/json",
				strings.NewReader(fmt.Sprintf(`{"prompt":"The cat","max_tokens":16,"temperature":0,"stream":%v}`, stream)))
			if err != nil {
				errs <- err
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("request %d: status %d %s", i, resp.StatusCode, body)
				return
			}
			var got string
			if stream {
				got, _, _ = streamText(t, sseEvents(t, body), false)
			} else {
				got = decode[completionResponse](t, body).Choices[0].Text
			}
			if got != want {
				errs <- fmt.Errorf("request %d: %q, want %q", i, got, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
