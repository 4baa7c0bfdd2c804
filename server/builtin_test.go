package server

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"nanoserve/defaultmodel"
	"nanoserve/engine"
	"nanoserve/model"
)

var (
	builtinOnce sync.Once
	builtinEng  *engine.Engine
	builtinErr  error
)

// newBuiltinServer serves the built-in Go model (the test skips in a
// build without it).
func newBuiltinServer(t testing.TB) *testServer {
	t.Helper()
	builtinOnce.Do(func() {
		p, err := defaultmodel.Path()
		if err != nil {
			builtinErr = err
			return
		}
		m, err := model.Load(p, model.Options{Threads: 1})
		if err != nil {
			builtinErr = err
			return
		}
		builtinEng, builtinErr = engine.New(m, engine.Options{})
	})
	if errors.Is(builtinErr, defaultmodel.ErrMissing) {
		t.Skip("no built-in model in this build")
	}
	if builtinErr != nil {
		t.Fatal(builtinErr)
	}
	s, err := New(builtinEng, Options{ModelNames: []string{"nanoserve-go"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return &testServer{Server: s, url: hs.URL}
}

// TestControlTokensNotText: an end-of-text token kept by ignore_eos (its
// logit biased to the top) is no text in /v1/completions, and /infill
// unless the request sets "special".
func TestControlTokensNotText(t *testing.T) {
	ts := newBuiltinServer(t)
	const eot = "<|endoftext|>"
	common := `"temperature":0,"ignore_eos":true,"logit_bias":{"1017":100}`
	for _, special := range []bool{false, true} {
		want := ""
		sp := ""
		if special {
			want = strings.Repeat(eot, 3)
			sp = `,"special":true`
		}
		code, _, b := ts.post(t, "/v1/completions", `{"prompt":"func main() {","max_tokens":3,`+common+sp+`}`)
		if code != 200 {
			t.Fatalf("completions: %d %s", code, b)
		}
		if got := decode[completionResponse](t, b).Choices[0].Text; got != want {
			t.Errorf("completions special=%v: text %q, want %q", special, got, want)
		}
		code, _, b = ts.post(t, "/infill", `{"input_prefix":"func f() {\n\t","input_suffix":"\n}\n","n_predict":3,`+common+sp+`}`)
		if code != 200 {
			t.Fatalf("infill: %d %s", code, b)
		}
		if got := decode[infillWire](t, b).Content; got != want {
			t.Errorf("infill special=%v: content %q, want %q", special, got, want)
		}
	}
}

// TestEmptyPromptCompletion: "prompt": "" starts a document, as the CLI's
// generate "" does.
func TestEmptyPromptCompletion(t *testing.T) {
	ts := newBuiltinServer(t)
	code, _, b := ts.post(t, "/v1/completions", `{"prompt":"","max_tokens":4,"temperature":0}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, b)
	}
	r := decode[completionResponse](t, b)
	if r.Usage == nil || r.Usage.PromptTokens != 1 || r.Choices[0].Text == "" {
		t.Errorf("empty prompt: %s", b)
	}
}
