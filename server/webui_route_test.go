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

// The chat page (Options.WebUI) is mounted at / and /ui/{file} as public
// routes, so a browser loads it without the API key while its API calls
// still need it; without Options.WebUI those paths are 404s. The page's own
// calls are same-origin: opened at a LAN address (a server bound to a
// network interface), its Origin equals the Host it reached, and that
// passes the Origin check; another origin still does not, and on a
// loopback connection a rebound name is still refused by the Host check.
func TestWebUIRoutes(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && r.URL.Path != "/ui/app.js" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "page "+r.URL.Path)
	})
	ts := newTestServer(t, func(o *Options) { o.APIKey = "k"; o.WebUI = page })
	get := func(base, path, key string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for path, want := range map[string]int{"/": 200, "/ui/app.js": 200, "/ui/nope.css": 404} {
		if code, b := get(ts.url, path, ""); code != want || want == 200 && b != "page "+path {
			t.Errorf("GET %s without a key: %d %q, want %d", path, code, b, want)
		}
	}
	if code, _ := get(ts.url, "/v1/models", ""); code != 401 {
		t.Errorf("GET /v1/models without a key: %d, want 401", code)
	}
	resp, err := http.Post(ts.url+"/", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("POST /: %d, want 405", resp.StatusCode)
	}
	public := map[string]bool{}
	for _, r := range Routes(Options{WebUI: page}) {
		public[r.Path] = r.Public
	}
	if !public["/"] || !public[uiPath] {
		t.Errorf("Routes with a web UI: / public %v, %s public %v", public["/"], uiPath, public[uiPath])
	}

	off := newTestServer(t, func(o *Options) { o.APIKey = "k" })
	for _, path := range []string{"/", "/ui/app.js"} {
		if code, _ := get(off.url, path, "k"); code != 404 {
			t.Errorf("no web UI: GET %s: %d, want 404", path, code)
		}
	}

	for _, c := range []struct {
		local, host, origin string
		want                int
	}{
		{"192.168.1.5", "192.168.1.5:8080", "http://192.168.1.5:8080", 200}, // the page opened at the LAN address
		{"192.168.1.5", "nanoserve.lan:8080", "https://NANOSERVE.lan:8080", 200},
		{"192.168.1.5", "192.168.1.5:8080", "http://192.168.1.6:8080", 403},
		{"192.168.1.5", "192.168.1.5:8080", "http://192.168.1.5:9090", 403},
		{"192.168.1.5", "192.168.1.5:8080", "http://user@192.168.1.5:8080", 403},
		{"127.0.0.1", "attacker.example:8080", "http://attacker.example:8080", 403}, // rebound: the Host check
	} {
		req := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
		req.Host = c.host
		req.Header.Set("Origin", c.origin)
		req.Header.Set("Authorization", "Bearer k")
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP(c.local), Port: 8080}))
		rec := httptest.NewRecorder()
		ts.front.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("connection to %s, Host %q, Origin %q: %d %.200s, want %d", c.local, c.host, c.origin, rec.Code, rec.Body, c.want)
		}
	}
}
