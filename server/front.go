package server

// The front: the server's one http.Handler. A ServeMux with method
// patterns routes each request by the route table (routes), whose entries
// declare their facts — who may call (the API key unless public), whether
// the route generates (the per-request deadline applies), its metrics label
// and log level — and whether the front answers it over the model table
// (models, health, ready, metrics, Ollama's tags, ps, version and pull:
// front_models.go) or the model the body's "model" field names does. The
// middleware applies the facts in this order: request id and logger,
// in-flight count, panic recovery, request metrics and log line (ServeHTTP);
// Origin/Host check and CORS; then the mux: 404, 405 with Allow, the API
// key, the deadline, and for a model's route the body (read once,
// decoded once into the route's request type) and the model (resolved once, loaded on
// first use, held until the handler returns).

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"nanoserve/host"
)

// Front is the server: the one http.Handler over a table of models (one
// model is a table of one). New makes it over one engine, NewRouter over
// models loaded on demand.
type Front struct {
	models      *host.Table[*Server] // the model table
	pull        func(ctx context.Context, name string) (ModelSpec, error)
	pullRef     func(name string) (string, error)
	apiKey      string
	metricsAuth bool // /metrics needs the key
	maxBody     int64
	log         *slog.Logger
	created     int64
	m           *metrics       // requests by endpoint and status, in flight
	responses   *responseStore // recent Responses API replies of every model, for previous_response_id (responses.go)
	draining    atomic.Bool
	inFlight    atomic.Int64 // requests being served
	mux         *http.ServeMux
	facts       map[string]route // by mux pattern: the route's facts (405 fallbacks included)

	readHeaderTimeout time.Duration
	bodyTimeout       time.Duration
	idleTimeout       time.Duration
	reqTimeout        time.Duration // 0: none
	healthStall       time.Duration
	cors              []string         // allowed origins; nil: CORS off
	allowedHosts      []string         // Options.AllowedHosts
	now               func() time.Time // the clock /health compares the engines' heartbeats with
	webui             http.Handler     // Options.WebUI (nil: no page at /)
	native            nativeOptions    // llama-server's switches (native.go)
}

// route is one entry of the route table.
type route struct {
	method, path string // a ServeMux pattern's parts; the path may end in a {name...} wildcard
	endpoint     string // metrics label
	access       access
	generation   bool // a generation: Options.RequestTimeout applies
	quiet        bool // logged at debug (probes, scrapes)
	// Exactly one handler: front answers over the model table; model is
	// run, with the body decoded into its request type, on the model the
	// request names.
	front func(*Front, http.ResponseWriter, *http.Request)
	model *modelHandler
}

// access is who may call a route. The zero value needs the API key, so a
// route the table does not mark otherwise is behind the key.
type access uint8

const (
	needsKey      access = iota
	public               // probes: /health, /ready
	metricsAccess        // /metrics: public unless Options.MetricsAuth
)

// needsKey reports whether rt asks for the API key (when one is set).
func (f *Front) needsKey(rt route) bool {
	switch rt.access {
	case public:
		return false
	case metricsAccess:
		return f.metricsAuth
	}
	return true
}

// modelPath is the route table's path of one model's card: every path
// under /v1/models/ (the rest of the path is the model's name).
const modelPath = "/v1/models/{id...}"

// routes is the route table. A route added here with a model handler is
// served for every model, behind the API key unless marked otherwise.
func routes() []route {
	post := func(path, endpoint string, h modelHandler) route {
		return route{method: http.MethodPost, path: path, endpoint: endpoint, model: &h}
	}
	gen := func(path, endpoint string, h modelHandler) route {
		r := post(path, endpoint, h)
		r.generation = true
		return r
	}
	get := func(path, endpoint string, a access, h func(*Front, http.ResponseWriter, *http.Request)) route {
		return route{method: http.MethodGet, path: path, endpoint: endpoint, access: a, front: h}
	}
	probe := func(r route) route { r.quiet = true; return r }
	return []route{
		gen("/v1/completions", "completions", decoded((*Server).handleCompletions)),
		gen("/v1/chat/completions", "chat_completions", decoded((*Server).handleChat)),
		gen("/infill", "infill", decoded((*Server).handleInfill)),
		gen("/api/generate", "ollama_generate", decoded((*Server).handleOllamaGenerate)),
		gen("/api/chat", "ollama_chat", decoded((*Server).handleOllamaChat)),
		gen("/v1/responses", "responses", decoded((*Server).handleResponses)),
		gen("/v1/messages", "anthropic_messages", decoded((*Server).handleAnthropicMessages)),
		post("/v1/chat/completions/input_tokens", "chat_input_tokens", decoded((*Server).handleChatInputTokens)),
		post("/v1/responses/input_tokens", "responses_input_tokens", decoded((*Server).handleResponsesInputTokens)),
		post("/v1/messages/count_tokens", "anthropic_count_tokens", decoded((*Server).handleAnthropicCountTokens)),
		post("/v1/embeddings", "embeddings", decoded((*Server).handleEmbeddings)),
		post("/tokenize", "tokenize", decoded((*Server).handleTokenize)),
		post("/detokenize", "detokenize", decoded((*Server).handleDetokenize)),
		post("/apply-template", "apply_template", decoded((*Server).handleApplyTemplate)),
		post("/api/embed", "ollama_embed", decoded((*Server).handleOllamaEmbed)),
		post("/api/embeddings", "ollama_embeddings", decoded((*Server).handleOllamaEmbeddings)),
		post("/api/show", "ollama_show", decoded((*Server).handleOllamaShow)),
		get("/v1/models", "models", needsKey, (*Front).handleModels),
		get(modelPath, "models", needsKey, (*Front).handleModel),
		probe(get("/health", "health", public, (*Front).handleHealth)),
		probe(get("/ready", "ready", public, (*Front).handleReady)),
		probe(get("/metrics", "metrics", metricsAccess, (*Front).handleMetrics)),
		get("/props", "props", needsKey, (*Front).handleProps),
		get("/slots", "slots", needsKey, (*Front).handleSlots),
		get("/api/tags", "ollama_tags", needsKey, (*Front).handleOllamaTags),
		get("/api/ps", "ollama_ps", needsKey, (*Front).handleOllamaPS),
		get("/api/version", "ollama_version", needsKey, (*Front).handleOllamaVersion),
		{method: http.MethodPost, path: "/api/pull", endpoint: "ollama_pull", front: (*Front).handleOllamaPull},
		// llama-server's paths (native.go)
		gen("/completion", "completion", decoded((*Server).handleNativeCompletion)),
		gen("/completions", "completion", decoded((*Server).handleNativeCompletion)),
		gen("/chat/completions", "chat_completions", decoded((*Server).handleChat)),
		gen("/responses", "responses", decoded((*Server).handleResponses)),
		post("/chat/completions/input_tokens", "chat_input_tokens", decoded((*Server).handleChatInputTokens)),
		post("/responses/input_tokens", "responses_input_tokens", decoded((*Server).handleResponsesInputTokens)),
		post("/embeddings", "embeddings", decoded((*Server).handleEmbeddings)),
		get("/models", "models", needsKey, (*Front).handleModels),
	}
}

// uiPath is the route table's path of the chat page's files: every path
// under /ui/.
const uiPath = "/ui/{file...}"

// webuiRoutes are the chat page's routes (Options.WebUI), in the table
// only when the server has the page: "/" alone ({$}: not every path) and
// its files. They are public, so a browser loads the page without the key;
// every API call the page makes still needs it.
func webuiRoutes() []route {
	serve := func(f *Front, w http.ResponseWriter, r *http.Request) { f.webui.ServeHTTP(w, r) }
	return []route{
		{method: http.MethodGet, path: "/{$}", endpoint: "webui", access: public, front: serve},
		{method: http.MethodGet, path: uiPath, endpoint: "webui", access: public, front: serve},
	}
}

// table is the route table of a server with opts: routes, Vertex AI's
// prediction routes when set (predict.go), and the chat page's when it
// has one.
func table(opts Options) []route {
	rts := append(routes(), predictRoutes(opts)...)
	if opts.WebUI != nil {
		return append(rts, webuiRoutes()...)
	}
	return rts
}

// Route is one entry of the route table as a client sees it.
type Route struct {
	Path    string   // ModelPath stands for any path under /v1/models/
	Methods []string // sorted
	Public  bool     // answered without the API key
}

// ModelPath is the route table's path of one model's card.
const ModelPath = "/v1/models/{id}"

// Routes lists, sorted by path, every route a server made with opts
// answers, with its methods and whether it needs the API key: what tests
// and the bad-input check walk.
func Routes(opts Options) []Route {
	f := &Front{metricsAuth: opts.MetricsAuth}
	byPath := map[string]*Route{}
	var out []Route
	for _, rt := range table(opts) {
		p := rt.path
		if p == modelPath {
			p = ModelPath
		}
		p = strings.TrimSuffix(p, "{$}") // "/{$}": the path "/" alone
		if byPath[p] == nil {
			out = append(out, Route{Path: p, Public: !f.needsKey(rt)})
			byPath[p] = &out[len(out)-1]
		}
	}
	for _, rt := range table(opts) {
		p := rt.path
		if p == modelPath {
			p = ModelPath
		}
		p = strings.TrimSuffix(p, "{$}") // "/{$}": the path "/" alone
		for i := range out {
			if out[i].Path == p {
				out[i].Methods = append(out[i].Methods, rt.method)
				slices.Sort(out[i].Methods)
			}
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// newFront makes the front of a server with opts (its model table is set
// by the caller).
func newFront(o Options) *Front {
	f := &Front{
		apiKey:      o.APIKey,
		metricsAuth: o.MetricsAuth,
		maxBody:     o.MaxBodyBytes,
		log:         o.Logger,
		created:     time.Now().Unix(),
		m:           newMetrics(),
		responses:   newResponseStore(responseStoreCount, responseStoreBytes),

		readHeaderTimeout: orDefault(o.ReadHeaderTimeout, 10*time.Second),
		bodyTimeout:       orDefault(o.BodyTimeout, time.Minute),
		idleTimeout:       orDefault(o.IdleTimeout, 2*time.Minute),
		reqTimeout:        max(o.RequestTimeout, 0),
		healthStall:       orDefault(o.HealthStall, 5*time.Minute),
		cors:              o.CORSOrigins,
		allowedHosts:      o.AllowedHosts,
		now:               time.Now,
		webui:             o.WebUI,
		native:            newNativeOptions(o, nil),
	}
	if f.maxBody <= 0 {
		f.maxBody = 4 << 20
	}
	if f.log == nil {
		f.log = slog.Default()
	}
	f.mux = http.NewServeMux()
	f.facts = map[string]route{}
	methods := map[string][]string{}
	var paths []string
	for _, rt := range table(o) {
		pattern := rt.method + " " + rt.path
		f.mux.Handle(pattern, f.handler(rt))
		f.facts[pattern] = rt
		if methods[rt.path] == nil {
			paths = append(paths, rt.path)
			f.facts[rt.path] = route{path: rt.path, endpoint: rt.endpoint}
		}
		methods[rt.path] = append(methods[rt.path], rt.method)
	}
	for _, p := range paths {
		f.mux.Handle(p, f.methodNotAllowed(methods[p]))
	}
	f.mux.HandleFunc("/", f.notFound)
	return f
}

// uncleanPath reports whether ServeMux would redirect a request for p (an
// escaped path) to a cleaned form: "." or ".." elements, doubled slashes.
func uncleanPath(p string) bool {
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c != p
}

// notFound answers a path no route has.
func (f *Front) notFound(w http.ResponseWriter, r *http.Request) {
	f.refuse(w, r, &apiError{status: http.StatusNotFound, Type: "invalid_request_error", Code: strp("not_found"),
		Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
}

// handler is a route's handler with its facts applied: the API key, the
// per-request deadline, and for a model's route the body and the model.
func (f *Front) handler(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.apiKey != "" && f.needsKey(rt) && !f.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="nanoserve"`)
			f.refuse(w, r, &apiError{status: http.StatusUnauthorized, Type: "authentication_error", Code: strp("invalid_api_key"),
				Message: "missing or invalid API key: send the header \"Authorization: Bearer KEY\" or \"X-Api-Key: KEY\""})
			return
		}
		if rt.generation && f.reqTimeout > 0 {
			ctx, cancel := context.WithTimeoutCause(r.Context(), f.reqTimeout, &requestTimeoutError{f.reqTimeout})
			defer cancel()
			r = r.WithContext(ctx)
		}
		if rt.front != nil {
			rt.front(f, w, r)
			return
		}
		f.routed(w, r, rt.model)
	})
}

// methodNotAllowed answers a known path asked with another method.
func (f *Front) methodNotAllowed(allow []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		f.refuse(w, r, &apiError{status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: strp("method_not_allowed"),
			Message: fmt.Sprintf("method %s is not allowed on %s (use %s)", r.Method, r.URL.Path, strings.Join(allow, ", "))})
	})
}

// routed runs a model's handler: it reads the body and decodes it once
// into the route's request type (request.go), finds the model the request
// names (loading it on first use) and runs the handler on that model with
// the request, holding the model until the handler returns.
func (f *Front) routed(w http.ResponseWriter, r *http.Request, h *modelHandler) {
	req := h.newReq()
	if e := f.decodeJSON(w, r, req); e != nil {
		writeError(w, e)
		return
	}
	t0 := time.Now()
	lease, e := f.modelFor(r.Context(), f.anyName(r.URL.Path, req.modelName()))
	if e != nil {
		writeError(w, e)
		return
	}
	defer lease.Release()
	ctx := context.WithValue(r.Context(), loadKey{}, time.Since(t0))
	ctx = context.WithValue(ctx, leaseKey{}, lease)
	r = r.WithContext(ctx)
	r.Body = http.NoBody
	h.run(lease.Value(), w, r, req)
}

// ServeHTTP serves a request, counting it and recovering from panics. Every
// request carries an id (the client's X-Request-Id, or a new one), echoed in
// the X-Request-Id response header and in each log line about it.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	path := r.URL.Path
	h, pattern := f.mux.Handler(r)
	unclean := uncleanPath(r.URL.EscapedPath())
	if unclean {
		pattern = "" // ServeMux's redirect to the clean path: no route
	}
	rt, ok := f.facts[pattern]
	endpoint := "other"
	if ok {
		endpoint = rt.endpoint
	}
	reqID := requestID(r.Header.Get("X-Request-Id"))
	w.Header().Set("X-Request-Id", reqID)
	log := f.log.With("request_id", reqID)
	r = r.WithContext(context.WithValue(r.Context(), loggerKey{}, log))
	sw := &statusWriter{ResponseWriter: w, ollama: strings.HasPrefix(path, "/api/"), anthropic: isAnthropicPath(path)}
	f.m.add(&f.m.inFlight, 1)
	f.inFlight.Add(1)
	defer func() {
		f.inFlight.Add(-1)
		f.m.add(&f.m.inFlight, -1)
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				f.m.request(endpoint, 499)
				panic(v)
			}
			log.Error("server: handler panic", "path", path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !sw.wrote {
				writeError(sw, &apiError{status: http.StatusInternalServerError, Type: "server_error",
					Message: "internal server error (the server logged the details)"})
			}
		}
		f.m.request(endpoint, sw.statusCode())
		level := slog.LevelInfo
		if rt.quiet {
			level = slog.LevelDebug // probes and scrapes every few seconds
		}
		log.Log(r.Context(), level, "request", "method", r.Method, "path", path, "status", sw.statusCode(),
			"ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr)
	}()

	if e := f.checkOrigin(r); e != nil {
		if f.cors != nil && isPreflight(r) {
			sw.WriteHeader(http.StatusOK) // no CORS headers: the browser refuses (as llama-server)
			return
		}
		f.refuse(sw, r, e)
		return
	}
	if f.cors != nil && f.corsHeaders(sw, r) {
		return // a preflight, answered
	}
	if unclean {
		// ServeMux would redirect an unclean path (//v1/models,
		// /v1/../health) to its clean form; no route has such a path.
		f.notFound(sw, r)
		return
	}
	h.ServeHTTP(sw, r)
}

// refuse answers a request before its handler runs (403, 401, 404, 405).
// Its body is read and discarded (linger: bounded, so the client sees the
// answer rather than a reset), and the connection is closed after it:
// net/http would otherwise read the rest of a small body to reuse the
// connection, with no deadline, so a client that stalls its body would
// hold the connection (and a goroutine) for as long as it likes. The read
// deadline in the past makes that read fail at once (as readBody does).
func (f *Front) refuse(w http.ResponseWriter, r *http.Request, e *apiError) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		rc := http.NewResponseController(w)
		f.linger(rc, r, 0)
		rc.SetReadDeadline(time.Now())
	}
	writeError(w, e)
}

// loggerKey is the request context key of the request's logger.
type loggerKey struct{}

// requestID is the client's X-Request-Id when it is 1 to 128 visible ASCII
// characters, else a new random id.
func requestID(h string) string {
	if len(h) >= 1 && len(h) <= 128 && !strings.ContainsFunc(h, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		return h
	}
	return newID("req-")
}

// checkOrigin refuses (403) what a browser sends on behalf of another site,
// as Ollama does, whether or not an API key is set:
//
//   - a request with an Origin header that is neither a loopback origin
//     (http or https, host localhost, *.localhost or a loopback address,
//     any port), nor the request's own (sameOrigin: a page this server
//     served), nor listed in Options.CORSOrigins ("*": any). A page on any
//     site can make the browser POST a text/plain body cross-origin without
//     a preflight; the browser then hides the answer, but the request would
//     run. Requests without an Origin (curl, SDKs, servers) are unaffected.
//   - on a connection to a loopback address, a request whose Host is not a
//     loopback name or address, the address the connection reached, or
//     one of Options.AllowedHosts. This is DNS rebinding: a page on
//     attacker.example whose name is made to resolve to 127.0.0.1 talks to
//     the local server as its own origin (no Origin on a GET), but its Host
//     still says attacker.example. A connection to another address (a
//     server bound to a network interface, reached by names nanoserve
//     cannot know: a Kubernetes service, a LAN name) is not checked, as
//     Ollama checks only when bound to loopback.
func (f *Front) checkOrigin(r *http.Request) *apiError {
	if origin := r.Header.Get("Origin"); origin != "" && !f.corsAllowed(origin) && !loopbackOrigin(origin) && !sameOrigin(origin, r.Host) {
		return &apiError{status: http.StatusForbidden, Type: "invalid_request_error", Code: strp("origin_not_allowed"),
			Message: fmt.Sprintf("origin %q is not allowed: browser requests are accepted from loopback origins and those listed with --cors-origin", origin)}
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	tcp, ok := local.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() || slices.Contains(f.allowedHosts, "*") {
		return nil
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if loopbackHost(host) {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.Equal(tcp.IP) {
		return nil
	}
	for _, a := range f.allowedHosts {
		a = strings.ToLower(a)
		if a == host || strings.EqualFold(a, r.Host) || strings.HasPrefix(a, ".") && (host == a[1:] || strings.HasSuffix(host, a)) {
			return nil
		}
	}
	return &apiError{status: http.StatusForbidden, Type: "invalid_request_error", Code: strp("host_not_allowed"),
		Message: fmt.Sprintf("host %q is not allowed on a loopback connection (a DNS-rebinding guard): use localhost or 127.0.0.1, or list the name with --allowed-hosts", r.Host)}
}

// loopbackHost reports whether a host name (no port, lower case) is
// loopback: localhost, a name under .localhost (RFC 6761 keeps both on the
// machine), or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether an Origin header names the server the request
// reached (http or https, the host and port of its Host header): a page
// this server served, such as the chat page (Options.WebUI) opened at a
// LAN address, calling its own API. A DNS-rebound name is same-origin too,
// so on a loopback connection the Host check after it still refuses one.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Path == "" && u.User == nil && host != "" && strings.EqualFold(u.Host, host)
}

// loopbackOrigin reports whether an Origin header names a page served from
// this machine: http or https on a loopback host, any port.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Path != "" || u.User != nil {
		return false
	}
	return loopbackHost(strings.ToLower(u.Hostname()))
}

// corsHeaders adds the CORS response headers for an allowed Origin and
// answers a preflight (OPTIONS with Access-Control-Request-Method),
// reporting whether it did. A request from an origin not on the list gets
// no CORS headers, so the browser refuses it; its preflight is a 200
// without them, as llama-server answers it.
func (f *Front) corsHeaders(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	preflight := isPreflight(r)
	if !f.corsAllowed(origin) {
		if preflight {
			w.WriteHeader(http.StatusOK) // no CORS headers: the browser refuses (as llama-server)
		}
		return preflight
	}
	if slices.Contains(f.cors, "*") {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
	}
	h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
	if !preflight {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key, X-Request-Id")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusOK) // llama-server's status (204 would do as well for browsers)
	return true
}

// errDrainTimeout is the cancellation cause of requests the shutdown drain
// timeout cut.
var errDrainTimeout = errors.New("server: shutting down, the drain timeout cut this request")

// requestTimeoutError is the cancellation cause of a request that ran past
// Options.RequestTimeout.
type requestTimeoutError struct{ d time.Duration }

func (e *requestTimeoutError) Error() string {
	return fmt.Sprintf("server: the request ran past the %v per-request deadline", e.d)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// authorized reports whether r carries the API key, as "Authorization:
// Bearer KEY" (OpenAI's clients) or "X-Api-Key: KEY" (Anthropic's). The
// keys are compared as SHA-256 digests in constant time, so the time taken
// tells neither the key's bytes nor its length.
func (f *Front) authorized(r *http.Request) bool {
	want := sha256.Sum256([]byte(f.apiKey))
	ok := 0
	if scheme, key, found := strings.Cut(r.Header.Get("Authorization"), " "); found && strings.EqualFold(scheme, "Bearer") {
		got := sha256.Sum256([]byte(strings.TrimSpace(key)))
		ok |= subtle.ConstantTimeCompare(got[:], want[:])
	}
	if key := r.Header.Get("X-Api-Key"); key != "" {
		got := sha256.Sum256([]byte(strings.TrimSpace(key)))
		ok |= subtle.ConstantTimeCompare(got[:], want[:])
	}
	return ok == 1
}

// statusWriter records the status code for metrics; Unwrap lets
// http.ResponseController reach the connection's Flush.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
	ollama bool // an Ollama API path (/api/): errors are {"error": "message"}
	// anthropic: an Anthropic API path (/v1/messages...): errors are
	// {"type": "error", "error": {"type", "message"}} (anthropic.go)
	anthropic bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) statusCode() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.status
}

// ---- Serve ----

// ErrDrainCancelled is what Serve returns (wrapped, with the count) when the
// drain timeout ran out and it cancelled the requests still running. Each
// of them was answered properly: a stream with a final error event and
// [DONE] and a terminated chunked body, a plain request with a 503.
var ErrDrainCancelled = errors.New("server: the drain timeout cancelled requests still running")

// cutGrace is how long requests cut at the drain timeout get to write their
// final event before their connections are closed.
const cutGrace = 5 * time.Second

// Serve answers HTTP on ln until ctx is cancelled, then shuts down
// gracefully: it stops accepting connections, marks /ready as draining
// (/health stays 200), waits up to drain for in-flight requests (streams
// included) to finish, and then cancels the generations still running,
// each with a final error. It returns nil after a clean shutdown and an
// error wrapping ErrDrainCancelled when it had to cancel.
func (f *Front) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	base, cancelBase := context.WithCancelCause(context.Background())
	defer cancelBase(nil)
	hs := &http.Server{
		Handler:           f,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: f.readHeaderTimeout,
		IdleTimeout:       f.idleTimeout,
		ErrorLog:          slog.NewLogLogger(f.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	f.draining.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if hs.Shutdown(sctx) == nil {
		<-errc
		return nil
	}
	// Drain timed out: cancel what is left with errDrainTimeout as the
	// cause, so each request ends with its final error (see cutError); then
	// wait for the connections to go idle, and close what is still open
	// after cutGrace.
	cut := f.inFlight.Load()
	cancelBase(errDrainTimeout)
	gctx, gcancel := context.WithTimeout(context.Background(), cutGrace)
	defer gcancel()
	if err := hs.Shutdown(gctx); errors.Is(err, context.DeadlineExceeded) {
		hs.Close()
	}
	<-errc
	return fmt.Errorf("%w (%d after the %v drain timeout)", ErrDrainCancelled, cut, drain)
}
