package webui

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestHandler: "/" is the page, /ui/NAME each file with its type, the CSP
// and an ETag that a revalidation answers with 304; other paths are 404s
// and other methods 405s.
func TestHandler(t *testing.T) {
	h := Handler()
	get := func(method, path string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for path, ctype := range map[string]string{"/": "text/html", "/ui/index.html": "text/html", "/ui/app.js": "text/javascript",
		"/ui/markdown.js": "text/javascript", "/ui/app.css": "text/css"} {
		w := get(http.MethodGet, path)
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), ctype) || w.Body.Len() == 0 {
			t.Errorf("GET %s: %d %q, %d bytes", path, w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
		if w.Header().Get("Content-Security-Policy") != CSP || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", path, w.Header())
		}
		if etag := w.Header().Get("ETag"); etag == "" {
			t.Errorf("GET %s: no ETag", path)
		} else if w2 := get(http.MethodGet, path, "If-None-Match", etag); w2.Code != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", path, w2.Code)
		}
	}
	if w := get(http.MethodHead, "/"); w.Code != 200 {
		t.Errorf("HEAD /: %d", w.Code)
	}
	for _, p := range []string{"/ui/", "/ui/nope.js", "/ui/../webui.go", "/index.html", "/v1/models"} {
		if w := get(http.MethodGet, p); w.Code != 404 {
			t.Errorf("GET %s: %d, want 404", p, w.Code)
		}
	}
	if w := get(http.MethodPost, "/"); w.Code != 405 || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
}

// TestNoOtherHost: the CSP lets the page reach only its own origin, and
// no file names another host or loads a script, style or font from one
// (the page works offline); the page loads only its own files.
func TestNoOtherHost(t *testing.T) {
	for _, d := range []string{"connect-src 'self'", "script-src 'self'", "style-src 'self'", "default-src 'none'"} {
		if !strings.Contains(CSP, d) {
			t.Errorf("CSP %q lacks %q", CSP, d)
		}
	}
	url := regexp.MustCompile(`(?i:\b(https?|wss?|ftp):/)|(src|href)\s*=\s*["']//|@import|\burl\(`) // CSS url(, not JavaScript's URL(
	for _, name := range Files() {
		b, err := static.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if m := url.Find(b); m != nil {
			t.Errorf("%s names another host or loads a resource: %q", name, m)
		}
	}
	b, _ := static.ReadFile("static/index.html")
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllSubmatch(b, -1) {
		ref := string(m[1])
		if ref == "data:," || strings.HasPrefix(ref, "#") {
			continue
		}
		name, ok := strings.CutPrefix(ref, AssetPrefix)
		if !ok {
			t.Errorf("index.html loads %q, not one of its own files", ref)
			continue
		}
		if _, err := static.ReadFile("static/" + name); err != nil {
			t.Errorf("index.html loads %q, which is not embedded", ref)
		}
	}
}

// TestNoInnerHTML: the page's scripts never parse text as HTML.
func TestNoInnerHTML(t *testing.T) {
	bad := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`)
	for _, name := range []string{"app.js", "markdown.js"} {
		b, err := static.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if m := bad.Find(b); m != nil {
			t.Errorf("%s uses %s", name, m)
		}
	}
}
