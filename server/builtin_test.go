package server

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"nanoserve/sample"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

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
func newBuiltinServer(t testing.TB, mod ...func(*Options)) *testServer {
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
	opts := Options{ModelNames: []string{"nanoserve-go"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, m := range mod {
		m(&opts)
	}
	s, err := New(builtinEng, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return newTS(s, hs.URL)
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

// builtinServing is how serve serves the built-in model
// (cmd/nanoserve/serve_models.go): greedy with frequency penalty 0.6,
// token healing and non-empty completions by default.
func builtinServing(o *Options) {
	d := sample.Defaults()
	d.Temperature, d.FrequencyPenalty = 0, 0.6
	o.Defaults, o.TokenHealing, o.NonEmpty = &d, true, true
}

// goDepth is the brace depth of Go source (outside strings, runes and //
// comments, roughly).
func goDepth(src string) int {
	depth, quote, line, prev := 0, rune(0), false, rune(0)
	for _, r := range src {
		switch {
		case line:
			line = r != '\n'
		case quote != 0:
			if r == quote && prev != '\\' || r == '\n' && quote != '`' {
				quote = 0
			}
		case r == '"' || r == '\'' || r == '`':
			quote = r
		case r == '/' && prev == '/':
			line = true
		case r == '{':
			depth++
		case r == '}':
			depth--
		}
		prev = r
	}
	return depth
}

// checkCompletion asserts the proof of one completion of prompt:
// non-empty, no control-token text, valid UTF-8; it returns whether it
// parses as Go in a function body once the braces left open are closed.
func checkCompletion(t *testing.T, what, prompt, out string) bool {
	t.Helper()
	if strings.TrimSpace(out) == "" {
		t.Errorf("%s: empty completion %q", what, out)
	}
	if m := regexp.MustCompile(`<\|[a-z_]+\|>`).FindString(out); m != "" {
		t.Errorf("%s: control token %s in %q", what, m, out)
	}
	if !utf8.ValidString(out) {
		t.Errorf("%s: invalid UTF-8 in %q", what, out)
	}
	src := "package p; func _() {" + prompt + out
	src += "\n" + strings.Repeat("}\n", max(goDepth(src), 0))
	_, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	return err == nil
}

// TestFirstRunServer: the README's prompt through /v1/completions,
// /infill and Ollama's /api/generate on the built-in model as serve
// serves it, with 50 seeds, by default (greedy: must parse) and at T = 1.
func TestFirstRunServer(t *testing.T) {
	ts := newBuiltinServer(t, builtinServing)
	const prompt = "if err != nil {"
	runs := 50
	if testing.Short() {
		runs = 5
	}
	parsed := map[string]int{}
	for seed := range runs {
		for _, temp := range []string{"", `,"temperature":1`} {
			kind := "default"
			if temp != "" {
				kind = "T=1"
			}
			outs := map[string]string{}
			code, _, b := ts.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":48,"seed":%d%s}`, prompt, seed, temp))
			if code != 200 {
				t.Fatalf("completions: %d %s", code, b)
			}
			outs["/v1/completions"] = decode[completionResponse](t, b).Choices[0].Text
			code, _, b = ts.post(t, "/infill", fmt.Sprintf(`{"input_prefix":%q,"input_suffix":"\n}\n","n_predict":48,"seed":%d%s}`, "func f() error {\n\t"+prompt, seed, temp))
			if code != 200 {
				t.Fatalf("infill: %d %s", code, b)
			}
			outs["/infill"] = decode[infillWire](t, b).Content
			ot := strings.Replace(temp, `,"temperature":1`, `"temperature":1,`, 1)
			code, _, b = ts.post(t, "/api/generate", fmt.Sprintf(`{"model":"nanoserve-go","prompt":%q,"stream":false,"options":{%s"seed":%d,"num_predict":48}}`, prompt, ot, seed))
			if code != 200 {
				t.Fatalf("api/generate: %d %s", code, b)
			}
			outs["/api/generate"] = decode[ollamaGenerateResponse](t, b).Response
			for ep, out := range outs {
				if checkCompletion(t, fmt.Sprintf("%s %s seed %d", ep, kind, seed), prompt, out) {
					parsed[ep+" "+kind]++
				} else if kind == "default" && ep != "/infill" {
					t.Errorf("%s %s seed %d: %q does not parse", ep, kind, seed, out)
				}
			}
		}
	}
	t.Logf("parsing completions of %d: %v", runs, parsed)
}
