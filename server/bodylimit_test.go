package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestRejectedBodyAnswered: a client still sending a body when the server
// has decided to reject it (413 over the limit, 401 without the key, 404
// for no such endpoint) gets that answer, not a connection reset. Unless
// the server reads the rest, net/http closes such a connection with the
// body unread, and the peer's RST fails the client's next write — Go's
// client, the SDKs and curl then report "connection reset by peer" instead
// of the answer (badinput saw it in CI with a 70 KB body to a 64 KB limit).
// The client here sends the body's second half in 10 pieces 100 ms apart,
// longer than net/http's own 0.5 s grace before its close.
func TestRejectedBodyAnswered(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.MaxBodyBytes = 4096; o.APIKey = "k" })
	u, err := url.Parse(ts.url)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"prompt":"` + strings.Repeat("a", 20000) + `"}`
	for _, c := range []struct {
		path, auth string
		status     int
		msg        string
	}{
		{"/v1/chat/completions", "Bearer k", 413, "4096"},
		{"/api/generate", "Bearer k", 413, "4096"},
		{"/v1/completions", "Bearer nope", 401, "API key"},
		{"/v1/complete", "Bearer k", 404, "no such endpoint"},
	} {
		resp, b := pacedPost(t, u.Host, c.path, c.auth, big)
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.msg) {
			t.Errorf("%s: %d %s, want %d naming %q", c.path, resp.StatusCode, b, c.status, c.msg)
		}
		// The server closes the connection after a rejected body, and says so.
		if !resp.Close {
			t.Errorf("%s: the %d answer lacks Connection: close", c.path, resp.StatusCode)
		}
	}
}

// pacedPost sends body's first half at once and the rest in 10 pieces
// 100 ms apart over raw TCP, failing t if a write fails, and returns the
// answer and its body.
func pacedPost(t *testing.T, host, path, auth, body string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		path, host, auth, len(body))
	half := len(body) / 2
	if _, err := io.WriteString(conn, head+body[:half]); err != nil {
		t.Fatal(err)
	}
	rest := body[half:]
	for i := range 10 {
		time.Sleep(100 * time.Millisecond)
		if _, err := io.WriteString(conn, rest[i*len(rest)/10:(i+1)*len(rest)/10]); err != nil {
			t.Fatalf("%s: writing the body's piece %d: %v (the server hung up before answering)", path, i, err)
		}
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: no answer: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestRefusedExpectContinue: a client that sends Expect: 100-continue and
// waits gets the refusal (401) as its first answer — the server does not
// read (and so ask for, with a 100) a body it is refusing.
func TestRefusedExpectContinue(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.APIKey = "k" })
	u, err := url.Parse(ts.url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer nope\r\nContent-Type: application/json\r\nContent-Length: 20000\r\nExpect: 100-continue\r\n\r\n", u.Host)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("first answer %d, want 401 (the server asked for the body it refuses)", resp.StatusCode)
	}
}
