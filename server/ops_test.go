package server

// Operational behaviour: timeouts, drain, health and readiness, request ids,
// CORS, content types, special tokens in completion prompts.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStalledBodyTimesOut: a body that stops arriving (Content-Length 1000,
// 10 bytes, then silence) gets a 408 within the body timeout and its
// connection is closed. Before the fix, net/http's discard of the unread
// body ran with the read deadline cleared and blocked forever.
func TestStalledBodyTimesOut(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.BodyTimeout = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // bounds the test, 50× the body timeout
	if _, err := io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
		"Content-Length: 1000\r\n\r\n{\"prompt\":"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn) // the reply, then EOF when the server closes
	if err != nil {
		t.Fatalf("no reply and no close to a stalled body: %v (got %q)", err, got)
	}
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 408")) || !bytes.Contains(got, []byte("received 10 of the 1000 bytes")) {
		t.Fatalf("want a 408 naming the byte counts, got %q", got)
	}
}

// TestRequestTimeout: a generation that runs past Options.RequestTimeout is
// cancelled; a stream ends with an error event and [DONE], a plain request
// is a 504.
func TestRequestTimeout(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.RequestTimeout = 100 * time.Millisecond })
	ts.gen = paced{ts.gen, func() { time.Sleep(10 * time.Millisecond) }}
	body := `{"prompt":"Once","max_tokens":100,"ignore_eos":true,"temperature":0%s}`
	code, _, b := ts.post(t, "/v1/completions", strings.Replace(body, "%s", `,"stream":true`, 1))
	if code != 200 || !bytes.Contains(b, []byte(`"code":"request_timeout"`)) || !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) {
		t.Fatalf("stream past the deadline: %d ...%s", code, b[max(0, len(b)-300):])
	}
	code, _, b = ts.post(t, "/v1/completions", strings.Replace(body, "%s", "", 1))
	if code != http.StatusGatewayTimeout || !bytes.Contains(b, []byte("per-request deadline")) {
		t.Fatalf("plain request past the deadline: %d %s", code, b)
	}
}

// TestDrainTimeoutEndsStreams: when the drain timeout cuts a stream, the
// client gets a final error event, [DONE] and a terminated chunked body,
// and Serve reports ErrDrainCancelled.
func TestDrainTimeoutEndsStreams(t *testing.T) {
	eng := sharedEngine(t)
	s, err := New(eng, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m := firstModel(s)
	m.gen = paced{m.gen, func() { time.Sleep(20 * time.Millisecond) }} // 100 tokens: 2 s, far past the drain
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, 50*time.Millisecond) }()

	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once","max_tokens":100,"ignore_eos":true,"temperature":0,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel() // SIGTERM mid-stream; the stream outlives the drain timeout
	rest, err := io.ReadAll(br)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("the cut stream's body did not end cleanly: %v", err)
	}
	if !bytes.Contains(rest, []byte(`"code":"shutting_down"`)) || !bytes.HasSuffix(rest, []byte("data: [DONE]\n\n")) {
		t.Fatalf("cut stream without a final error event and [DONE]: ...%s", rest[max(0, len(rest)-300):])
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrDrainCancelled) {
			t.Fatalf("Serve: %v, want ErrDrainCancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// TestFormBody: a form-encoded body is a 415 naming the Content-Type; a
// JSON body sent as a form (curl -d) still works.
func TestFormBody(t *testing.T) {
	ts := newTestServer(t, nil)
	resp, err := http.Post(ts.url+"/v1/completions", "application/x-www-form-urlencoded", strings.NewReader("prompt=hi&max_tokens=2"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType || !bytes.Contains(b, []byte(`Content-Type is \"application/x-www-form-urlencoded\"`)) {
		t.Fatalf("form body: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Post(ts.url+"/v1/completions", "application/x-www-form-urlencoded", strings.NewReader(`{"prompt":"hi","max_tokens":2}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("JSON sent as a form (curl -d): %d %s", resp.StatusCode, b)
	}
}

// TestCompletionParseSpecial: special-token text in a completions prompt is
// the special token by default; "parse_special": false keeps it text.
func TestCompletionParseSpecial(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, c := range []struct {
		field string
		want  int // prompt tokens: BOS, "Once" (4 pieces), then </s> as one id or as 4 text pieces
	}{{"", 6}, {`,"parse_special":true`, 6}, {`,"parse_special":false`, 9}} {
		code, _, b := ts.post(t, "/v1/completions", `{"prompt":"Once</s>","max_tokens":1`+c.field+`}`)
		if code != 200 {
			t.Fatalf("%s: %d %s", c.field, code, b)
		}
		if u := decode[completionResponse](t, b).Usage; u == nil || u.PromptTokens != c.want {
			t.Errorf("prompt \"Once</s>\"%s: usage %+v, want %d prompt tokens", c.field, u, c.want)
		}
	}
}

// TestHealthAndReady: /health is liveness (200 while draining, 503 when the
// engine loop's heartbeat is stale); /ready is readiness (503 while
// draining).
func TestHealthAndReady(t *testing.T) {
	ts := newTestServer(t, nil)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if code, b := get("/health"); code != 200 {
		t.Fatalf("health: %d %s", code, b)
	}
	if code, b := get("/ready"); code != 200 || !strings.Contains(b, `"status":"ready"`) {
		t.Fatalf("ready: %d %s", code, b)
	}
	ts.front.draining.Store(true)
	if code, b := get("/health"); code != 200 || !strings.Contains(b, "draining") {
		t.Errorf("health while draining: %d %s (want 200: a draining pod must not be killed)", code, b)
	}
	if code, b := get("/ready"); code != 503 || !strings.Contains(b, "draining") {
		t.Errorf("ready while draining: %d %s", code, b)
	}
	ts.front.draining.Store(false)
	ts.front.now = func() time.Time { return time.Now().Add(time.Hour) } // the loop has not beaten for an hour
	if code, b := get("/health"); code != 503 || !strings.Contains(b, "hung") {
		t.Errorf("health with a stale heartbeat: %d %s", code, b)
	}
}

// TestHeartbeatAdvancesWhileIdle: the idle engine loop still beats.
func TestHeartbeatAdvancesWhileIdle(t *testing.T) {
	eng := sharedEngine(t)
	first := eng.Heartbeat()
	if first.IsZero() {
		t.Fatal("no heartbeat from a running engine")
	}
	deadline := time.After(10 * time.Second)
	for eng.Heartbeat().Sub(first) < 500*time.Millisecond { // the loop's first beats are microseconds apart
		select {
		case <-deadline:
			t.Fatal("the idle loop did not beat in 10 s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestRequestID: X-Request-Id is echoed (or generated) and in the log lines.
func TestRequestID(t *testing.T) {
	var logs safeBuffer
	ts := newTestServer(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	req, _ := http.NewRequest("POST", ts.url+"/v1/completions", strings.NewReader(`{"prompt":"Once","max_tokens":1}`))
	req.Header.Set("X-Request-Id", "abc-123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("echoed X-Request-Id %q", got)
	}
	resp, err = http.Get(ts.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	gen := resp.Header.Get("X-Request-Id")
	if !strings.HasPrefix(gen, "req-") {
		t.Errorf("generated X-Request-Id %q", gen)
	}
	for _, id := range []string{"abc-123", gen} {
		if !strings.Contains(logs.String(), "request_id="+id) {
			t.Errorf("no log line with request_id=%s:\n%s", id, logs.String())
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !strings.Contains(line, "request_id=") {
			t.Errorf("log line without a request id: %s", line)
		}
	}
}

// TestCORS: off by default; with an allowed origin, the headers and the
// preflight answer (200, as llama-server).
func TestCORS(t *testing.T) {
	preflight := func(url string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", url+"/v1/chat/completions", nil)
		req.Header.Set("Origin", "https://app.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	off := newTestServer(t, nil)
	if resp := preflight(off.url); resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.StatusCode == 200 {
		t.Errorf("CORS answered with no origin configured: %d %v", resp.StatusCode, resp.Header)
	}
	on := newTestServer(t, func(o *Options) { o.CORSOrigins = []string{"https://app.example"} })
	resp := preflight(on.url)
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	req, _ := http.NewRequest("GET", on.url+"/v1/models", nil)
	req.Header.Set("Origin", "https://evil.example")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS headers for an origin not on the list: %v", r2.Header)
	}
}

// safeBuffer is a bytes.Buffer the server's goroutines may log into.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
