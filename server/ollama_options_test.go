package server

import (
	"net/http"
	"strings"
	"testing"
)

// Ollama's options accepted values /v1 refuses (temperature -1, top_p 2,
// top_k -5, seed 1.5): one validation serves both APIs now, so each value
// is a 400 naming the field on /v1/completions, /api/generate and
// /api/chat alike, and each value /v1 accepts, Ollama accepts too.
func TestOllamaOptionsValidatedAsV1(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, c := range []struct {
		field, value string
		ok           bool
	}{
		{"temperature", `-1`, false},
		{"temperature", `1e309`, false},
		{"temperature", `"hot"`, false},
		{"top_p", `2`, false},
		{"top_p", `-0.1`, false},
		{"top_k", `-5`, false},
		{"top_k", `1.5`, false},
		{"min_p", `2`, false},
		{"seed", `1.5`, false},
		{"seed", `"s"`, false},
		{"temperature", `0.5`, true},
		{"top_p", `0.9`, true},
		{"top_k", `-1`, true},
		{"top_k", `40`, true},
		{"seed", `42`, true},
		{"min_p", `0.05`, true},
	} {
		ollamaField := c.field
		v1 := `{"prompt":"x","max_tokens":1,"` + c.field + `":` + c.value + `}`
		gen := `{"prompt":"x","stream":false,"options":{"num_predict":1,"` + ollamaField + `":` + c.value + `}}`
		chat := `{"messages":[{"role":"user","content":"x"}],"stream":false,"options":{"num_predict":1,"` + ollamaField + `":` + c.value + `}}`
		genStream := strings.Replace(gen, `"stream":false,`, "", 1) // Ollama streams by default
		chatStream := strings.Replace(chat, `"stream":false,`, "", 1)
		for _, q := range []struct{ path, body string }{{"/v1/completions", v1}, {"/api/generate", gen}, {"/api/chat", chat},
			{"/api/generate", genStream}, {"/api/chat", chatStream}} {
			code, _, b := ts.post(t, q.path, q.body)
			switch {
			case c.ok && code != http.StatusOK:
				t.Errorf("%s %s=%s: %d %s, want 200", q.path, c.field, c.value, code, b)
			case !c.ok && (code != http.StatusBadRequest || !strings.Contains(string(b), c.field)):
				t.Errorf("%s %s=%s: %d %s, want 400 naming %s", q.path, c.field, c.value, code, b, c.field)
			}
		}
	}
}

// Type errors read as the client wrote the request: `"messages":123` said
// `got a number ()`, `temperature: 1e309` said `must be a number, got a
// number`, and an Ollama option was named "ollamaCommon.options.seed".
func TestTypeErrorMessages(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, c := range []struct{ path, body, param, want string }{
		{"/v1/chat/completions", `{"messages":123}`, "messages", `field "messages" must be an array, got a number`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"temperature":1e309}`, "temperature", `field "temperature" is out of range: 1e309 does not fit a finite number`},
		{"/v1/completions", `{"prompt":"x","temperature":-1e309}`, "temperature", `-1e309 does not fit a finite number`},
		{"/v1/completions", `{"prompt":"x","seed":1e30}`, "seed", `field "seed" must be an integer, got a number (1e30)`},
		{"/v1/completions", `{"prompt":"x","seed":99999999999999999999}`, "seed", `99999999999999999999 does not fit a 64-bit integer`},
		{"/v1/completions", `{"prompt":"x","max_tokens":1.5}`, "max_tokens", `must be an integer, got a number (1.5)`},
		{"/api/generate", `{"prompt":"x","options":{"seed":1.5}}`, "", `field "options.seed" must be an integer, got a number (1.5)`},
		{"/api/generate", `{"prompt":"x","options":{"temperature":1e309}}`, "", `field "options.temperature" is out of range`},
		{"/api/chat", `{"messages":123}`, "", `field "messages" must be an array, got a number`},
	} {
		code, _, b := ts.post(t, c.path, c.body)
		if code != http.StatusBadRequest || !strings.Contains(string(b), strings.ReplaceAll(c.want, `"`, `\"`)) && !strings.Contains(string(b), c.want) ||
			strings.Contains(string(b), "()") || strings.Contains(string(b), "ollamaCommon") ||
			c.param != "" && !strings.Contains(string(b), `"param":"`+c.param+`"`) {
			t.Errorf("%s %s: %d %s, want 400 saying %s", c.path, c.body, code, b, c.want)
		}
	}
}

// Ollama's load request (a generate with no prompt) took any options; they
// are checked as a generation's.
func TestOllamaLoadChecksOptions(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, o := range []string{`{"temperature":-1}`, `{"top_p":2}`, `{"top_k":-5}`} {
		if code, _, b := ts.post(t, "/api/generate", `{"options":`+o+`}`); code != http.StatusBadRequest {
			t.Errorf("load with options %s: %d %s, want 400", o, code, b)
		}
	}
	if code, _, b := ts.post(t, "/api/generate", `{"options":{"temperature":0.7,"top_k":-1}}`); code != http.StatusOK || !strings.Contains(string(b), `"load"`) {
		t.Errorf("load with good options: %d %s", code, b)
	}
}
