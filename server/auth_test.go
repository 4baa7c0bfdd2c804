package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// authBodies are request bodies that each endpoint accepts (or refuses
// with a 4xx) once the key is right. A route the table gains without a
// body here is still walked, with "{}".
var authBodies = map[string]string{
	"/v1/completions":      `{"prompt":"x","max_tokens":1}`,
	"/v1/chat/completions": `{"messages":[{"role":"user","content":"x"}],"max_tokens":1}`,
	"/v1/embeddings":       `{"input":"x"}`,
	"/infill":              `{"input_prefix":"func f() {","input_suffix":"}","n_predict":2,"stream":true}`,
	"/tokenize":            `{"content":"x"}`,
	"/detokenize":          `{"tokens":[1]}`,
	"/apply-template":      `{"messages":[{"role":"user","content":"x"}]}`,
	"/api/generate":        `{"prompt":"x","stream":false,"options":{"num_predict":1}}`,
	"/api/chat":            `{"messages":[{"role":"user","content":"x"}],"stream":false,"options":{"num_predict":1}}`,
	"/api/embed":           `{"input":"x"}`,
	"/api/embeddings":      `{"prompt":"x"}`,
	"/api/show":            `{}`,
	"/api/pull":            `{}`,
}

// walkAuth sends every method of every route in s's route table with no
// key, a wrong key, the right key as a Bearer token and as X-Api-Key, and
// checks the answers: 401 without the right key on every route but the
// public ones, and never a 401 or 5xx with it. model names a served model
// (for /v1/models/{id}). It returns the answers with the right key.
func walkAuth(t *testing.T, ts *testServer, key, model string, wantPublic []string) map[string]int {
	t.Helper()
	var public []string
	answers := map[string]int{}
	for _, rt := range routes() {
		path := rt.path
		if !ts.front.needsKey(rt) {
			public = append(public, path)
		}
		url := ts.url + path
		if path == modelPath {
			url = ts.url + "/v1/models/" + model
		}
		for _, method := range []string{rt.method} {
			send := func(header, value string) (int, string) {
				var body io.Reader
				if method == http.MethodPost {
					b, ok := authBodies[path]
					if !ok {
						b = `{}`
					}
					body = strings.NewReader(b)
				}
				req, _ := http.NewRequest(method, url, body)
				req.Header.Set("Content-Type", "application/json")
				if header != "" {
					req.Header.Set(header, value)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", method, path, err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			name := method + " " + path
			right, rightBody := send("Authorization", "Bearer "+key)
			answers[path] = right
			if right == http.StatusUnauthorized || right >= 500 {
				t.Errorf("%s with the right key: %d %.200s", name, right, rightBody)
			}
			if code, b := send("X-Api-Key", key); code != right {
				t.Errorf("%s with X-Api-Key: %d %.200s, want %d as with Bearer", name, code, b, right)
			}
			for _, h := range [][2]string{{"", ""}, {"Authorization", "Bearer wrong-" + key}, {"X-Api-Key", key + "x"},
				{"Authorization", key}, {"Authorization", "Basic " + key}} {
				code, b := send(h[0], h[1])
				switch {
				case ts.front.needsKey(rt) && (code != http.StatusUnauthorized || !strings.Contains(b, "API key")):
					t.Errorf("%s with %s %q: %d %.200s, want 401 naming the API key", name, h[0], h[1], code, b)
				case !ts.front.needsKey(rt) && code != right:
					t.Errorf("%s (public) with %s %q: %d, want %d as with the key", name, h[0], h[1], code, right)
				}
			}
		}
	}
	slices.Sort(public)
	slices.Sort(wantPublic)
	if !slices.Equal(public, wantPublic) {
		t.Errorf("public routes %v, want exactly %v", public, wantPublic)
	}
	return answers
}

// /infill used to answer 200 without the key, streaming too: the key was
// checked on a list of path prefixes that did not name it. Every route
// needs the key now except the allow-list the route table declares, and
// the walk covers every route in the table, so a route added later is
// walked too.
func TestAuthEveryRoute(t *testing.T) {
	ts := newFIMServer(t, func(o *Options) { o.APIKey = "sekret" })
	answers := walkAuth(t, ts, "sekret", "fim", []string{"/health", "/metrics", "/ready"})
	if answers["/infill"] != http.StatusOK || answers["/v1/completions"] != http.StatusOK {
		t.Errorf("with the key: /infill %d, /v1/completions %d; want 200", answers["/infill"], answers["/v1/completions"])
	}
	if len(answers) != len(Routes(Options{})) {
		t.Errorf("walked %d routes, Routes lists %d", len(answers), len(Routes(Options{})))
	}

	// --metrics-auth puts /metrics behind the key.
	ts = newFIMServer(t, func(o *Options) { o.APIKey = "sekret"; o.MetricsAuth = true })
	walkAuth(t, ts, "sekret", "fim", []string{"/health", "/ready"})
}

// A multi-model server checks the key before it routes a request to a
// model (the models' own servers are reached only through it).
func TestAuthEveryRouteRouter(t *testing.T) {
	ts := newTestRouter(t, RouterOptions{Options: Options{APIKey: "k2"}, Models: []ModelSpec{testSpec(t, "aidreams", nil)}}, nil)
	if err := ts.front.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	walkAuth(t, ts, "k2", "aidreams", []string{"/health", "/metrics", "/ready"})
}

// Routes lists the table with its access rules: what internal/badinput
// walks against a live server.
func TestRoutes(t *testing.T) {
	rs := Routes(Options{})
	i := slices.IndexFunc(rs, func(r Route) bool { return r.Path == "/infill" })
	if i < 0 || rs[i].Public || !slices.Equal(rs[i].Methods, []string{"POST"}) {
		t.Errorf("Routes: /infill is %+v", rs)
	}
	for _, r := range Routes(Options{MetricsAuth: true}) {
		if r.Public != (r.Path == "/health" || r.Path == "/ready") {
			t.Errorf("with MetricsAuth: %+v", r)
		}
	}
}

// A request refused before its handler (no key, a foreign Origin, an
// unknown path) whose body stalls used to hold its connection: net/http
// read the rest of the body with no deadline to reuse the connection. The
// refusal now closes the connection at once.
func TestRefusedStalledBodyCloses(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.APIKey = "k" })
	for _, c := range []struct{ path, extra, want string }{
		{"/v1/completions", "", "HTTP/1.1 401"},
		{"/v1/completions", "Origin: http://evil.example\r\n", "HTTP/1.1 403"},
		{"/v1/nothing", "", "HTTP/1.1 404"},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(3 * time.Second))
		io.WriteString(conn, "POST "+c.path+" HTTP/1.1\r\nHost: localhost\r\n"+c.extra+"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"prompt\":")
		got, err := io.ReadAll(conn) // the answer, then EOF when the server closes
		conn.Close()
		if err != nil || !strings.HasPrefix(string(got), c.want) {
			t.Errorf("POST %s %q with a stalled body: %v, got %.100q; want %s and the connection closed", c.path, c.extra, err, got, c.want)
		}
	}
}
