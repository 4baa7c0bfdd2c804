package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"nanoserve/engine"
)

// benchServer serves aidreams260K over a real loopback HTTP server.
func benchServer(b *testing.B) string {
	s, err := New(sharedEngine(b), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s)
	b.Cleanup(hs.Close)
	return hs.URL
}

func benchPost(b *testing.B, url, body string) {
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkEngineDirect is the baseline: the same 32-token greedy
// completion without HTTP.
func BenchmarkEngineDirect(b *testing.B) {
	eng := sharedEngine(b)
	req := engine.Request{Prompt: "Once upon a time", Policy: greedy(32)}
	req.Policy.IgnoreEOS = true
	for b.Loop() {
		if _, err := eng.Generate(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompletion and BenchmarkCompletionStream add the HTTP, JSON and
// SSE work of one request (32 tokens) to the engine's.
func BenchmarkCompletion(b *testing.B) {
	url := benchServer(b)
	for b.Loop() {
		benchPost(b, url, `{"prompt":"Once upon a time","max_tokens":32,"temperature":0,"ignore_eos":true}`)
	}
}

func BenchmarkCompletionStream(b *testing.B) {
	url := benchServer(b)
	for b.Loop() {
		benchPost(b, url, `{"prompt":"Once upon a time","max_tokens":32,"temperature":0,"ignore_eos":true,"stream":true}`)
	}
}

// BenchmarkCompletionParallel runs concurrent clients (GOMAXPROCS of them;
// -cpu sets the count): the engine batches their sequences.
func BenchmarkCompletionParallel(b *testing.B) {
	url := benchServer(b)
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchPost(b, url, `{"prompt":"Once upon a time","max_tokens":32,"temperature":0,"ignore_eos":true,"stream":true}`)
		}
	})
}
