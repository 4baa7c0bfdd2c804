package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A browser page on any site could POST to the API (CORS off only hides
// the answer from the page; a text/plain body needs no preflight), and any
// Host was accepted, so a DNS-rebinding page reached the loopback server.
// As Ollama: an Origin neither loopback nor listed is a 403, and on a
// loopback connection so is a Host that is not this machine's; requests
// without an Origin are unaffected.
func TestOriginAndHost(t *testing.T) {
	ts := newTestServer(t, func(o *Options) {
		o.CORSOrigins = []string{"https://app.example.org"}
		o.AllowedHosts = []string{"my.host", ".corp.example"}
	})
	port := ts.url[strings.LastIndex(ts.url, ":"):]
	send := func(method, path, host, origin, ctype, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.url+path, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const body = `{"prompt":"x","max_tokens":1}`
	for _, c := range []struct {
		origin string
		want   int
	}{
		{"", 200},
		{"http://evil.example", 403},
		{"https://evil.example:8443", 403},
		{"null", 403},
		{"http://localhost.evil.example", 403},
		{"http://evillocalhost", 403}, // not a name under .localhost
		{"http://127.0.0.1.nip.io", 403},
		{"file://", 403},
		{"http://localhost:3000", 200},
		{"https://localhost", 200},
		{"http://127.0.0.1:5173", 200},
		{"http://127.8.9.10", 200},
		{"http://[::1]:8000", 200},
		{"http://app.localhost:8080", 200},
		{"https://app.example.org", 200}, // --cors-origin
		{"https://app.example.org.evil.example", 403},
	} {
		for _, ctype := range []string{"application/json", "text/plain"} {
			code, b := send("POST", "/v1/completions", "", c.origin, ctype, body)
			if c.want == 403 && (code != 403 || !strings.Contains(b, "origin_not_allowed")) ||
				c.want == 200 && code == 403 {
				t.Errorf("Origin %q, %s: %d %.200s, want %d", c.origin, ctype, code, b, c.want)
			}
		}
	}
	if code, _ := send("GET", "/v1/models", "", "http://evil.example", "", ""); code != 403 {
		t.Errorf("GET /v1/models from another site: %d, want 403", code)
	}

	for _, c := range []struct {
		host string
		want int
	}{
		{"", 200}, // 127.0.0.1:port, what the client sends
		{"localhost" + port, 200},
		{"LOCALHOST", 200},
		{"localhost.", 200},
		{"api.localhost" + port, 200},
		{"127.0.0.1", 200},
		{"[::1]" + port, 200},
		{"my.host" + port, 200},   // --allowed-hosts
		{"corp.example", 200},     // .corp.example
		{"a.b.corp.example", 200}, // .corp.example
		{"attacker.example" + port, 403},
		{"attacker.example", 403},
		{"localhost.attacker.example", 403},
		{"attackerlocalhost", 403}, // not a name under .localhost
		{"xcorp.example", 403},
		{"my.host.attacker.example", 403},
		{"10.1.2.3" + port, 403},
	} {
		for _, path := range []string{"/v1/models", "/health"} {
			code, b := send("GET", path, c.host, "", "", "")
			if code != c.want || c.want == 403 && !strings.Contains(b, "host_not_allowed") {
				t.Errorf("GET %s Host %q: %d %.200s, want %d", path, c.host, code, b, c.want)
			}
		}
	}

	// Not on a loopback connection (bound to a network address, reached
	// by a service name): the Host is not checked; the Origin still is.
	for _, c := range []struct {
		local  string
		host   string
		origin string
		want   int
	}{
		{"10.0.0.7", "nanoserve.default.svc", "", 200},
		{"10.0.0.7", "attacker.example", "", 200},
		{"10.0.0.7", "nanoserve", "http://evil.example", 403},
		{"127.0.0.1", "nanoserve", "", 403},
		{"::1", "attacker.example", "", 403},
	} {
		req := httptest.NewRequest("GET", "/v1/models", nil)
		req.Host = c.host
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP(c.local), Port: 8080}))
		rec := httptest.NewRecorder()
		ts.front.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("connection to %s, Host %q, Origin %q: %d %s, want %d", c.local, c.host, c.origin, rec.Code, rec.Body, c.want)
		}
	}

	// "*" turns the Host check off; an Origin list of "*" the Origin check.
	open := newTestServer(t, func(o *Options) { o.CORSOrigins = []string{"*"}; o.AllowedHosts = []string{"*"} })
	req, _ := http.NewRequest("GET", open.url+"/v1/models", nil)
	req.Host = "attacker.example"
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with --allowed-hosts '*' and --cors-origin '*': %d", resp.StatusCode)
	}
}
