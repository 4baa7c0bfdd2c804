// Package webui is nanoserve's chat page: a browser client of the server's
// own API, embedded in the binary (go:embed) so `nanoserve serve` answers
// GET / with a page that works offline, from files written here by hand
// (plain JavaScript, CSS and HTML: no framework, no build step, no CDN).
//
// Paths (Handler):
//
//	GET /                the page (index.html)
//	GET /ui/NAME         its files: app.js (the client), markdown.js (the
//	                     renderer), app.css
//
// The page is a client like any other: it lists models with GET
// /v1/models, learns each one's chat template and FIM tokens from POST
// /api/show (template, capabilities "insert"), talks with POST
// /v1/chat/completions (server-sent events, reasoning_content and
// tool_calls deltas shown apart from the answer), or POST /v1/completions
// for a model without a chat template, and fills in the middle with POST
// /infill. When an API call answers 401 it asks for the key once, keeps it
// in sessionStorage (localStorage if the user asks it to be remembered)
// and sends it as "Authorization: Bearer KEY". Conversations and settings
// live in localStorage. Model text is never parsed as HTML: the Markdown
// renderer builds DOM nodes and sets their text (markdown.js).
//
// The page is public (no key needed to load it; every API call still needs
// one), and each file is sent with a Content-Security-Policy that lets it
// load scripts, styles and connections only from its own origin, so it
// makes no request to any other host even if a reply holds a link or an
// image reference.
package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// AssetPrefix is the path under which the page's files are served.
const AssetPrefix = "/ui/"

// CSP is the Content-Security-Policy every response carries: the page's
// own origin for scripts, styles, fetches and images, nothing else.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file with its content type and ETag.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// handler serves the embedded files.
type handler struct{ files map[string]asset }

// Handler returns the page and its files. It answers GET and HEAD on "/"
// and on AssetPrefix+NAME for the embedded names; any other path is a 404,
// any other method a 405.
func Handler() http.Handler {
	h := &handler{files: map[string]asset{}}
	entries, err := fs.ReadDir(static, "static")
	if err != nil {
		panic("webui: embedded files missing: " + err.Error()) // a build without static/ cannot happen: go:embed fails first
	}
	for _, e := range entries {
		b, err := static.ReadFile("static/" + e.Name())
		if err != nil {
			panic("webui: " + err.Error())
		}
		sum := sha256.Sum256(b)
		h.files[e.Name()] = asset{body: b, ctype: contentType(e.Name()), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return h
}

// contentType is a file's Content-Type by extension.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// Files lists the embedded files' names (AssetPrefix + name is each one's
// path; index.html is also served at "/").
func Files() []string {
	entries, _ := fs.ReadDir(static, "static")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "webui: method "+r.Method+" not allowed (use GET)", http.StatusMethodNotAllowed)
		return
	}
	name := ""
	switch p := r.URL.Path; {
	case p == "/":
		name = "index.html"
	case strings.HasPrefix(p, AssetPrefix):
		name = strings.TrimPrefix(p, AssetPrefix)
	}
	a, ok := h.files[name]
	if !ok || name == "" {
		http.Error(w, "webui: no such file: "+r.URL.Path, http.StatusNotFound)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache") // revalidate: a new binary's page is seen at once, an unchanged one costs a 304
	hd.Set("ETag", a.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
