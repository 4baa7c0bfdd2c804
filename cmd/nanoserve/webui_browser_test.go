package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"nanoserve/internal/testshared"
	"nanoserve/webui"
)

// chromiumPath finds a Chromium (or Chrome) binary: $NANOSERVE_CHROMIUM, or
// Debian's chromium on PATH. Without one the test skips, and fails in CI
// (.ci/run installs Debian's chromium and sets NANOSERVE_CI).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("NANOSERVE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "no chromium on PATH (apt-get install chromium, or set NANOSERVE_CHROMIUM): the web UI browser test needs it"
	if os.Getenv("NANOSERVE_CI") != "" {
		t.Fatal("CI: " + why)
	}
	t.Skip(why)
	return ""
}

// startServe runs serve with args on a free loopback port and returns its
// base URL; the server stops when the test ends.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, cancel, append(args, "--port", "0", "--threads", "1", "--max-seqs", "2"), func(a net.Addr) { addrc <- a })
	}()
	select {
	case a := <-addrc:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
		return "http://" + a.String()
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	return ""
}

// httpGet returns a GET's status, header and body, with key as the bearer
// token when not empty.
func httpGet(t *testing.T, u, key string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestServeWebUIRoutes: the page and its files are public with --api-key
// (the API behind it is not), carry the page's Content-Security-Policy, and
// --no-webui turns them off (404) while the API still answers.
func TestServeWebUIRoutes(t *testing.T) {
	builtin, err := builtinModelPath()
	if err != nil {
		t.Skip("no built-in model in this build: " + err.Error())
	}
	base := startServe(t, "--model", builtin, "--api-key", "k1")
	for _, p := range []string{"/", "/ui/app.js", "/ui/markdown.js", "/ui/app.css"} {
		code, h, body := httpGet(t, base+p, "")
		if code != 200 || !strings.Contains(h.Get("Content-Security-Policy"), "connect-src 'self'") || body == "" {
			t.Errorf("GET %s without a key: %d, CSP %q, %d bytes", p, code, h.Get("Content-Security-Policy"), len(body))
		}
	}
	if code, _, _ := httpGet(t, base+"/ui/nope.js", ""); code != 404 {
		t.Errorf("GET /ui/nope.js: %d, want 404", code)
	}
	if code, _, _ := httpGet(t, base+"/v1/models", ""); code != 401 {
		t.Errorf("GET /v1/models without a key: %d, want 401", code)
	}
	off := startServe(t, "--model", builtin, "--no-webui")
	for _, p := range []string{"/", "/ui/app.js"} {
		if code, _, _ := httpGet(t, off+p, ""); code != 404 {
			t.Errorf("--no-webui: GET %s: %d, want 404", p, code)
		}
	}
	if code, _, body := httpGet(t, off+"/v1/models", ""); code != 200 {
		t.Errorf("--no-webui: GET /v1/models: %d %s", code, body)
	}
}

// TestWebUIBrowser drives the chat page in headless Chromium (over the
// DevTools protocol) against a live `serve --api-key` of two models: the
// qwen2 test model (a chat template; random weights that never end a reply
// early) and the built-in model (no chat template, FIM tokens). It loads
// /, gives the key when asked, sends a message and sees the reply's text
// arrive while it streams, stops it, regenerates a short reply with its
// time to first token and tokens/s, switches to the built-in model and
// gets a completion, fills in the middle, reloads and finds the
// conversation, checks the Markdown renderer builds no element from text
// (no <img>, no script run), and that the page asked for the key once (one
// 401) and made no request to any other host. A screenshot of the
// conversation is written to $NANOSERVE_WEBUI_SHOTS (or the test's
// artifact directory: go test -artifacts -outputdir DIR).
func TestWebUIBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	builtin, err := builtinModelPath()
	if err != nil {
		t.Skip("no built-in model in this build: " + err.Error())
	}
	chatModel := testshared.Path(t, "testdata/gguf/qwen2/qwen2-F16.gguf")
	const key = "webui-test-key"
	base := startServe(t, "--model", chatModel, "--model", builtin, "--api-key", key)
	baseURL, _ := url.Parse(base)
	builtinName := filepath.Base(builtin)

	b := newBrowser(t, chromium)
	ctx, run, until := b.ctx, b.run, b.until
	const last = `[...document.querySelectorAll('#messages .msg.assistant')].pop()`
	const lastText = `(` + last + `?.querySelector('.content')?.textContent || '')`
	const streaming = `!document.getElementById('stop').disabled`
	selectModel := func(name string) {
		t.Helper()
		if !evalJS[bool](t, ctx, fmt.Sprintf(`(() => { const m = document.getElementById('model'); m.value = %q; m.dispatchEvent(new Event('change')); return m.value === %[1]q })()`, name)) {
			t.Fatalf("model %q is not in the list", name)
		}
	}

	// Load: the page is public; its first API call gets a 401 and the key
	// dialog.
	run("load /", chromedp.Navigate(base+"/"))
	until("the key dialog", `document.getElementById('key-dialog').open`, 60*time.Second)
	run("give the key", chromedp.SendKeys(chromedp.CSS("#api-key"), key), chromedp.Click(chromedp.CSS("#key-ok")))
	until("the model list", `document.querySelectorAll('#model option').length === 2`, 60*time.Second)

	// A chat reply streams (text visible while the Stop button is live,
	// then more of it), and Stop ends it.
	selectModel("qwen2-F16.gguf")
	until("the chat model described", `document.getElementById('model-kind').textContent === 'chat'`, 60*time.Second)
	run("send a message", chromedp.SendKeys(chromedp.CSS("#input"), "Hello **world** <img src=x onerror=\"window.pwned=1\"> `code`"),
		chromedp.SendKeys(chromedp.CSS("#input"), kb.Enter))
	// (Each wait also ends when the reply does, so a page that shows the
	// text only at the end fails at once.)
	type progress struct {
		Len       int
		Streaming bool
	}
	state := func() progress {
		return evalJS[progress](t, ctx, `({Len: `+lastText+`.length, Streaming: `+streaming+`})`)
	}
	until("the first streamed text", lastText+`.length > 0 || !(`+streaming+`)`, 60*time.Second)
	p1 := state()
	if p1.Len == 0 || !p1.Streaming {
		t.Fatalf("no text arrived while the reply streamed (%+v)", p1)
	}
	until("more streamed text", lastText+`.length > `+fmt.Sprint(p1.Len)+` || !(`+streaming+`)`, 60*time.Second)
	// Stop in the same turn of the page's event loop as the check that
	// the reply still streams: on a loaded machine a click sent over the
	// protocol could land after the reply's end.
	if !evalJS[bool](t, ctx, `(() => { if (!(`+streaming+`)) return false; document.getElementById('stop').click(); return true })()`) {
		t.Fatal("the reply ended before more text was seen arriving: it did not stream, or it is too short to stop")
	}
	until("the stopped reply", `!(`+streaming+`) && `+last+`.querySelector('.stats')?.textContent.includes('stopped')`, 30*time.Second)
	n2 := evalJS[int](t, ctx, lastText+`.length`)
	time.Sleep(300 * time.Millisecond)
	n3 := evalJS[int](t, ctx, lastText+`.length`)
	if n3 != n2 {
		t.Errorf("the reply grew after Stop: %d then %d characters", n2, n3)
	}

	// Regenerate a short reply: it replaces the stopped one, and tells its
	// time to first token and speed.
	run("max tokens", chromedp.Click(chromedp.CSS("#settings summary")), chromedp.SendKeys(chromedp.CSS("#max-tokens"), "12"))
	evalJS[bool](t, ctx, `document.getElementById('max-tokens').dispatchEvent(new Event('change'))`)
	run("regenerate", chromedp.Click(chromedp.CSS("#regenerate")))
	until("the regenerated reply", `!(`+streaming+`) && /tokens\/s/.test(`+last+`.querySelector('.stats')?.textContent || '')`, 60*time.Second)
	stats := evalJS[string](t, ctx, last+`.querySelector('.stats').textContent`)
	replies := evalJS[int](t, ctx, `document.querySelectorAll('#messages .msg.assistant').length`)
	if !strings.Contains(stats, "first token") || !strings.Contains(stats, "12 tokens") || strings.Contains(stats, "stopped") || replies != 1 {
		t.Errorf("after regenerate: %d replies, stats %q", replies, stats)
	}

	// Switch to the built-in model: no chat template, so the page completes
	// the conversation's text with /v1/completions.
	selectModel(builtinName)
	until("the built-in model described", `document.getElementById('model-kind').textContent.startsWith('completion')`, 60*time.Second)
	run("send to the built-in model", chromedp.SendKeys(chromedp.CSS("#input"), "func main() {"), chromedp.Click(chromedp.CSS("#send")))
	until("the built-in model's reply", `document.querySelectorAll('#messages .msg.assistant').length === 2 && !(`+streaming+`) && `+
		last+`.querySelector('.stats') && `+lastText+`.length > 0`, 60*time.Second)
	who := evalJS[string](t, ctx, last+`.querySelector('.who').textContent`)
	if !strings.Contains(who, builtinName) {
		t.Errorf("the second reply is from %q, want %s", who, builtinName)
	}

	// Fill in the middle with the built-in model (it has FIM tokens).
	run("FIM tab", chromedp.Click(chromedp.CSS("#tab-fim")))
	run("FIM input", chromedp.SendKeys(chromedp.CSS("#fim-prefix"), "func add(a, b int) int {\n\treturn "),
		chromedp.SendKeys(chromedp.CSS("#fim-suffix"), "\n}\n"), chromedp.Click(chromedp.CSS("#fim-run")))
	until("the filled middle", `document.getElementById('status').textContent.startsWith('Filled') && document.querySelector('#fim-out mark').textContent.length > 0`, 60*time.Second)
	run("chat tab", chromedp.Click(chromedp.CSS("#tab-chat")))

	// Reload: the conversation is still there, and the key is not asked
	// again.
	run("reload", chromedp.Reload())
	until("the conversation after reload", `document.querySelectorAll('#messages .msg').length === 4 && document.querySelector('#messages .msg.user .content').textContent.includes('Hello') && document.querySelectorAll('#model option').length === 2`, 60*time.Second)
	if evalJS[bool](t, ctx, `document.getElementById('key-dialog').open`) {
		t.Error("the key dialog opened again after reload")
	}

	// Markdown is rendered from text: the user's message shows "<img" as
	// text, ran no script, and built <strong> and <code> elements.
	type mdView struct {
		Strong, Code string
		Imgs         int
		Pwned        bool
		HasTag       bool
	}
	md := evalJS[mdView](t, ctx, `(() => { const c = document.querySelector('#messages .msg.user .content'); return {
		Strong: c.querySelector('strong')?.textContent || '', Code: c.querySelector('code')?.textContent || '',
		Imgs: document.querySelectorAll('#messages img').length, Pwned: !!window.pwned, HasTag: c.textContent.includes('<img src=x') } })()`)
	if md.Strong != "world" || md.Code != "code" || md.Imgs != 0 || md.Pwned || !md.HasTag {
		t.Errorf("the user's message rendered as %+v", md)
	}
	// The renderer on its own: blocks, and nothing but safe links.
	for _, c := range []struct{ in, want string }{
		{"```go\nx := 1\n```", `<div class="codeblock"><div class="codebar"><span>go</span><button type="button" class="copy" aria-label="Copy go block">Copy</button></div><pre tabindex="0"><code class="language-go">x := 1</code></pre></div>`},
		{"```\nunclosed", `<div class="codeblock"><div class="codebar"><span>code</span><button type="button" class="copy" aria-label="Copy code block">Copy</button></div><pre tabindex="0"><code>unclosed</code></pre></div>`},
		{"# Title\n- a\n- *b*", `<h3 class="md-h1">Title</h3><ul><li>a</li><li><em>b</em></li></ul>`},
		{"<script>alert(1)</script>", `<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>`},
		{"[x](javascript:alert(1)) [y](https://example.com/a)", `<p>[x](javascript:alert(1)) <a href="https://example.com/a" rel="noopener noreferrer" target="_blank">y</a></p>`},
		{"![cat](https://example.com/c.png)", `<p><a href="https://example.com/c.png" rel="noopener noreferrer" target="_blank">image: cat</a></p>`},
	} {
		got := evalJS[string](t, ctx, fmt.Sprintf(`(() => { const d = document.createElement('div'); d.appendChild(renderMarkdown(%q)); return d.innerHTML })()`, c.in))
		if got != c.want {
			t.Errorf("renderMarkdown(%q) =\n%s\nwant\n%s", c.in, got, c.want)
		}
	}

	// The screenshot of the conversation.
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("NANOSERVE_WEBUI_SHOTS")
	if dir == "" {
		dir = t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "webui-conversation.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the conversation: %s (%d bytes)", shot, len(png))

	// Asked for the key once: one 401 in the whole session, and the page
	// itself loaded without a key. Every request went to this server.
	requests, statuses := b.seen()
	var unauthorized []string
	for path, codes := range statuses {
		for _, c := range codes {
			if c == 401 {
				unauthorized = append(unauthorized, path)
			}
		}
	}
	if len(unauthorized) != 1 {
		t.Errorf("401 answers: %v, want exactly one (the key asked for once)", unauthorized)
	}
	if c := statuses["/"]; len(c) == 0 || c[0] != 200 {
		t.Errorf("GET / answered %v, want 200 without a key", c)
	}
	var chats, completions, infills int
	for _, r := range requests {
		method, raw, _ := strings.Cut(r, " ")
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "data" && u.Host != baseURL.Host {
			t.Errorf("a request to another host: %s", r)
		}
		switch {
		case method == "POST" && u.Path == "/v1/chat/completions":
			chats++
		case method == "POST" && u.Path == "/v1/completions":
			completions++
		case method == "POST" && u.Path == "/infill":
			infills++
		}
	}
	if chats != 2 || completions != 1 || infills != 1 {
		t.Errorf("API calls: %d chat, %d completions, %d infill; want 2, 1, 1 (requests %v)", chats, completions, infills, requests)
	}
}

// evalJS evaluates a JavaScript expression in the page of ctx and decodes
// its value, failing the test on an error.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// browser is a headless Chromium tab for a test, with what its page
// requested (method and URL) and the statuses it got by path.
type browser struct {
	t        *testing.T
	ctx      context.Context
	mu       sync.Mutex
	requests []string
	statuses map[string][]int64
}

// newBrowser starts Chromium (a fresh profile) for t; it stops when t ends.
func newBrowser(t *testing.T, chromium string) *browser {
	b := &browser{t: t, statuses: map[string][]int64{}}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-component-update", true))...)
	ctx, cancelCtx := chromedp.NewContext(alloc, chromedp.WithListener(func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, ev.Request.Method+" "+ev.Request.URL)
		case *network.EventResponseReceived:
			if u, err := url.Parse(ev.Response.URL); err == nil {
				b.statuses[u.Path] = append(b.statuses[u.Path], ev.Response.Status)
			}
		}
	}))
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute) // the browser's whole life
	t.Cleanup(func() { cancel(); cancelCtx(); cancelAlloc() })
	b.ctx = ctx
	return b
}

// seen returns the requests the page made and the statuses by path.
func (b *browser) seen() ([]string, map[string][]int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests), maps.Clone(b.statuses)
}

// run runs actions, failing the test on an error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// until polls a JavaScript expression until it is true.
func (b *browser) until(what, expr string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		if err != nil {
			b.t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			status, _ := chromedp.Run(b.ctx, chromedp.TextContent(chromedp.CSS("#status")))
			b.t.Fatalf("%s: not true within %v: %s (status line %q)", what, timeout, expr, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebUIReasoningAndTools drives the chat page in headless Chromium
// against a scripted API (the page's files from package webui, the
// endpoints written here) whose reply streams reasoning_content, a tool
// call in pieces and an answer: the reasoning shows folded apart from the
// answer, the call as a call with its arguments; the system prompt and the
// sampling settings reach the request; the next turn sends the call back in
// the history, and an API error shows as an error. Every form control has a
// label and every button a name.
func TestWebUIReasoningAndTools(t *testing.T) {
	chromium := chromiumPath(t)
	var mu sync.Mutex
	var bodies []map[string]any
	mux := http.NewServeMux()
	page := webui.Handler()
	mux.Handle("GET /{$}", page)
	mux.Handle("GET /ui/", page)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"scripted","object":"model"}]}`)
	})
	mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"template":"{{ messages }}","capabilities":["completion","tools"]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		bodies = append(bodies, body)
		n := len(bodies)
		mu.Unlock()
		if n > 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"scripted failure","type":"invalid_request_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{
			`{"role":"assistant","content":""}`,
			`{"reasoning_content":"Let me think "}`,
			`{"reasoning_content":"about the weather."}`,
			`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`,
			`{"content":"Checking."}`,
		} {
			fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
			w.(http.Flusher).Flush()
			time.Sleep(10 * time.Millisecond)
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n")
		io.WriteString(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":14,\"total_tokens\":23}}\n\ndata: [DONE]\n\n")
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()

	b := newBrowser(t, chromium)
	ctx := b.ctx
	b.run("load /", chromedp.Navigate(ts.URL+"/"))
	b.until("the model list", `document.getElementById('model').value === 'scripted' && document.getElementById('model-kind').textContent === 'chat'`, 60*time.Second)
	if !evalJS[bool](t, ctx, `[...document.querySelectorAll('input, select, textarea')].every(e => e.labels.length > 0)`) {
		t.Error("a form control has no label")
	}
	if !evalJS[bool](t, ctx, `[...document.querySelectorAll('button')].every(e => (e.getAttribute('aria-label') || e.textContent).trim() !== '')`) {
		t.Error("a button has no name")
	}
	b.run("settings", chromedp.Click(chromedp.CSS("#settings summary")),
		chromedp.SendKeys(chromedp.CSS("#system"), "Be brief."), chromedp.SendKeys(chromedp.CSS("#temperature"), "0.3"),
		chromedp.SendKeys(chromedp.CSS("#top-p"), "0.9"), chromedp.SendKeys(chromedp.CSS("#max-tokens"), "20"))
	b.run("send", chromedp.SendKeys(chromedp.CSS("#input"), "Weather in Paris?"), chromedp.Click(chromedp.CSS("#send")))
	const last = `[...document.querySelectorAll('#messages .msg.assistant')].pop()`
	b.until("the reply", `document.getElementById('stop').disabled && `+last+`?.querySelector('.stats')`, 60*time.Second)
	type view struct {
		ReasoningOpen        bool
		Summary, Reasoning   string
		Content, Call, Stats string
	}
	v := evalJS[view](t, ctx, `(() => { const m = `+last+`, d = m.querySelector('details.reasoning'); return {
		ReasoningOpen: d.open, Summary: d.querySelector('summary').textContent, Reasoning: d.querySelector('.reasoning-text').textContent,
		Content: m.querySelector('.content').textContent, Call: m.querySelector('.toolcall code').textContent,
		Stats: m.querySelector('.stats').textContent } })()`)
	if v.ReasoningOpen || v.Summary != "Reasoning" || v.Reasoning != "Let me think about the weather." || v.Content != "Checking." ||
		v.Call != "get_weather({\n  \"city\": \"Paris\"\n})" || !strings.Contains(v.Stats, "14 tokens") || !strings.Contains(v.Stats, "tool_calls") {
		t.Errorf("the reply shows %+v", v)
	}

	// Contrast: every visible text at least 4.5:1 (WCAG AA) on its
	// background, in the light and the dark scheme.
	for _, scheme := range []string{"light", "dark"} {
		b.run("scheme "+scheme, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}))
		if low := evalJS[[]string](t, ctx, contrastJS); len(low) > 0 {
			t.Errorf("%s scheme: text under 4.5:1 contrast: %v", scheme, low)
		}
	}
	// Keyboard: Tab from the message box reaches Send (Enter in it sends:
	// TestWebUIBrowser).
	b.run("tab", chromedp.Focus(chromedp.CSS("#input")), chromedp.KeyEvent(kb.Tab))
	if id := evalJS[string](t, ctx, `document.activeElement.id`); id != "send" {
		t.Errorf("Tab from the message box focuses %q, want send", id)
	}

	b.run("second turn", chromedp.SendKeys(chromedp.CSS("#input"), "And tomorrow?"), chromedp.Click(chromedp.CSS("#send")))
	b.until("the error", `document.getElementById('stop').disabled && `+last+`?.querySelector('.error')`, 60*time.Second)
	if e := evalJS[string](t, ctx, last+`.querySelector('.error').textContent`); e != "Error: scripted failure" {
		t.Errorf("the failed reply shows %q", e)
	}
	// The failed reply is not sent back as a turn.
	b.run("third turn", chromedp.SendKeys(chromedp.CSS("#input"), "Hello?"), chromedp.Click(chromedp.CSS("#send")))
	b.until("the second error", `document.querySelectorAll('#messages .msg.assistant .error').length === 2 && document.getElementById('stop').disabled`, 60*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 3 {
		t.Fatalf("%d chat requests, want 3", len(bodies))
	}
	if third, _ := json.Marshal(bodies[2]["messages"]); strings.Count(string(third), `"role":`) != 5 || strings.Contains(string(third), `{"content":"","role":"assistant"}`) {
		t.Errorf("the third request's history (system, user, assistant, user, user): %s", third)
	}
	first, _ := json.Marshal(bodies[0])
	for _, want := range []string{`"model":"scripted"`, `"stream":true`, `"temperature":0.3`, `"top_p":0.9`, `"max_tokens":20`,
		`"stream_options":{"include_usage":true}`, `{"content":"Be brief.","role":"system"}`, `{"content":"Weather in Paris?","role":"user"}`} {
		if !strings.Contains(string(first), want) {
			t.Errorf("the first request lacks %s: %s", want, first)
		}
	}
	second, _ := json.Marshal(bodies[1]["messages"])
	if !strings.Contains(string(second), `"tool_calls":[{"function":{"arguments":"{\"city\": \"Paris\"}","name":"get_weather"},"id":"call_1","type":"function"}]`) ||
		!strings.Contains(string(second), `{"content":"And tomorrow?","role":"user"}`) {
		t.Errorf("the second request's history: %s", second)
	}
}

// contrastJS lists the visible text elements whose colour has under 4.5:1
// contrast (WCAG 2's relative luminance) with the first opaque background
// behind them; disabled controls are exempt, as WCAG exempts them.
const contrastJS = `(() => {
	const parse = (c) => { const p = c.match(/[\d.]+/g).map(Number); return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 }; };
	const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
	const lum = (c) => 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
	const back = (el) => { for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c.a > 0.5) return c; } return { r: 255, g: 255, b: 255 }; };
	const low = [];
	for (const el of document.querySelectorAll('h1, h2, label, p, summary, span, a, code, li, button, select, textarea, input, .content, .reasoning-text')) {
		if (!el.getClientRects().length || el.disabled || !el.textContent.trim() && !el.matches('input, textarea, select')) continue;
		const f = lum(parse(getComputedStyle(el).color)), g = lum(back(el));
		const ratio = (Math.max(f, g) + 0.05) / (Math.min(f, g) + 0.05);
		if (ratio < 4.5) low.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + el.className : '') + ' ' + ratio.toFixed(2));
	}
	return low;
})()`
