// Package server is nanoserve's OpenAI-compatible HTTP API: the endpoints
// that vLLM, Ollama and llama.cpp's server offer, so any OpenAI client
// library (or curl) can drive an engine.
//
// Endpoints:
//
//	POST /v1/completions       complete prompts (string, [string...], token ids or [[ids]...]);
//	                           several prompts are a batch: choice j of prompt i has index i·n + j
//	POST /v1/chat/completions  reply to messages rendered with the model's chat template
//	POST /v1/embeddings        L2-normalised pooled final hidden states of inputs (the same four
//	                           forms as prompt), float or base64, with dimensions: embeddings.go.
//	                           Pooling: the GGUF's {arch}.pooling_type (mean, cls, last); without
//	                           it, the last token (a causal model's only state that saw the input)
//	GET  /v1/models            the served model (its names) and context length
//	GET  /v1/models/{id}       one model card, 404 for an unknown name
//	POST /tokenize, /detokenize, /apply-template
//	                           llama-server's token utilities over the served tokenizer and
//	                           chat template (tokenize.go)
//	GET  /health               liveness: 200 {"status":"ok"} (or "draining") while the process
//	                           answers and the engine's scheduler loop beats; 503 when the loop
//	                           stopped or hung (no heartbeat for Options.HealthStall)
//	GET  /ready                readiness: 200 when the model is loaded, the engine's queue has
//	                           room and the server is not draining; 503 saying which is not
//	GET  /metrics              Prometheus text format: requests by endpoint and status,
//	                           prompt/generated token counters, time-to-first-token and
//	                           per-output-token histograms, in-flight gauges, engine stats;
//	                           and vLLM's names (vllm:num_requests_waiting, vllm:kv_cache_usage_perc,
//	                           …, each labelled model_name) for vLLM-aware routers: metrics_vllm.go
//
// Request fields follow the OpenAI API plus vLLM's sampling extras: model,
// prompt / messages, max_tokens (max_completion_tokens), temperature, top_p,
// top_k, min_p, presence_penalty, frequency_penalty, repetition_penalty,
// seed, stop (string or list), stop_token_ids, ignore_eos, logit_bias,
// logprobs (completions: an int, the number of alternatives; chat: a bool
// with top_logprobs), n (1 to engine.MaxN choices, each with its index;
// choice i is seeded seed + i), best_of (only equal to n), stream and
// stream_options; chat also takes tools, tool_choice, parallel_tool_calls
// and the legacy functions / function_call (see tools.go: calls come back
// as message.tool_calls with finish_reason "tool_calls", streamed as OpenAI
// streams them).
// Absent fields take the model's generation_config defaults; max_tokens
// defaults to 16 for completions (as OpenAI and vLLM) and to the rest of the
// context for chat. Unknown fields are ignored (clients send many).
//
// Completions also take "token_healing": true (a nanoserve extension,
// default false): the engine backs up over the prompt's last token and
// lets the first generated token be any token whose text extends it, so a
// prompt cut inside a token ("if err != nil {" where the model knows
// " {\n" as one token) continues as the model would have written it. The
// returned text never repeats the prompt's end (prompt + text is what the
// model wrote); usage.prompt_tokens counts the prompt as tokenized,
// removed token included, and the healed token is a completion token. See
// the engine package's "Token healing".
//
// Both endpoints take "speculative": false (a nanoserve extension,
// default true) to turn the server's speculative decoding (serve --spec)
// off for one request: its output is the same either way (see the engine
// package's "Speculative decoding"); only how it is computed changes.
//
// Special-token text in a completions string prompt ("<|im_end|>", "</s>")
// is parsed as that special token by default, as vLLM and llama-server do;
// "parse_special": false (a nanoserve extension) keeps it plain text. Chat
// message content is always plain text: only the template's own markup is
// special, so a user cannot forge a turn.
//
// With Options.APIKey set, every path needs the key ("Authorization: Bearer
// KEY" or "X-Api-Key: KEY") except the ones the route table marks public:
// /health and /ready (probes), and /metrics unless Options.MetricsAuth.
//
// Every response carries X-Request-Id: the client's (1-128 visible ASCII
// characters) or a new one; each log line about the request has it as
// request_id. CORS is off unless Options.CORSOrigins lists origins. A
// browser request from another site (an Origin neither loopback nor listed)
// or, on a loopback connection, a Host that is not this machine's (DNS
// rebinding) is a 403 (checkOrigin).
//
// Streaming (stream: true) uses server-sent events: each event is one line
// "data: " + a JSON chunk, followed by a blank line, flushed as soon as the
// engine yields text; the stream ends with "data: [DONE]". Completion chunks
// carry choices[0].text; chat chunks carry choices[0].delta, whose first
// chunk is {"role":"assistant","content":""} and later ones {"content":...};
// the last choice chunk has an empty delta and the finish_reason ("stop" or
// "length"). With n > 1 every chunk names its choice's index (chat sends a
// role chunk per choice first); usage counts each prompt once and sums the
// choices' completion tokens. With stream_options.include_usage a final chunk with no
// choices carries usage. The concatenated streamed text equals the
// non-streamed text of the same request at temperature 0 (or a fixed seed).
// Response headers are written only when the first token arrives, so a
// request the engine refuses still gets a plain JSON error and status.
//
// Errors use OpenAI's shape {"error":{"message","type","param","code"}}:
// 400 for invalid JSON, a field of the wrong type or value (param names it)
// and a prompt longer than the context (code context_length_exceeded, with
// both token counts); 401 for a missing or wrong API key; 403 for a
// browser request from another site or a DNS-rebound Host (checkOrigin);
// 404 for an unknown model or path; 405 (with Allow) for a wrong method;
// 408 for a body that did not arrive within the body timeout (the
// connection is then closed); 413 for a body over the size limit; 415 for
// a body that is not JSON sent with another Content-Type (a form); 429
// with Retry-After when the engine's queue (engine.ErrOverloaded) has no
// room for all of a request's prompts (nothing of it is queued) or the
// server's own MaxPending cap is full; 503 when the engine is closed or the shutdown drain timeout
// cut the request; 504 past the per-request deadline; 500 when a handler
// panics (the panic is logged and the server keeps serving). A stream the
// server cuts (drain timeout, deadline) ends with an error event and
// [DONE]. A max_tokens beyond the context is not an
// error: generation ends at the context with finish_reason "length".
//
// A client that disconnects cancels its generation (the request context
// reaches the engine; a failed write also breaks the token loop). Serve
// shuts down gracefully: it stops accepting connections, lets in-flight
// requests (streams included) finish within a drain timeout, then cancels
// the rest, each with its final error.
package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/llamacpp"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// Options configure a Server.
type Options struct {
	// ModelNames are the names clients may send as "model"; the first is
	// the one responses report. Empty: "nanoserve". A request without a
	// model field gets the first.
	ModelNames []string
	// Template renders chat messages; nil: /v1/chat/completions answers
	// 400 (the model has no chat template). TemplateOptions carries the
	// BOS/EOS texts and extra variables it is rendered with.
	Template        *chat.Template
	TemplateOptions chat.Options
	// ToolFormat is how the model writes tool calls; "": detected from the
	// template (chat.Template.ToolFormat).
	ToolFormat chat.ToolFormat
	// Defaults is the sampling policy requests start from; nil: the
	// model's generation_config.json over sample.Defaults.
	Defaults *sample.Policy
	// TokenHealing is the token_healing default of /v1/completions,
	// /infill and Ollama's /api/generate for a request that does not say
	// (serve turns it on for the built-in completion model, as generate).
	TokenHealing bool
	// NonEmpty: a completion (/v1/completions, Ollama's /api/generate)
	// cannot end before it has visible text (engine.Request.NonEmpty;
	// serve sets it for the built-in completion model, as generate).
	NonEmpty bool
	// APIKey, if set, is required on every path but /health, /ready and
	// /metrics (the routes the route table marks public), as
	// "Authorization: Bearer KEY" or "X-Api-Key: KEY".
	APIKey string
	// MetricsAuth puts /metrics behind APIKey too.
	MetricsAuth bool
	// MaxBodyBytes limits a request body (≤ 0: 4 MiB).
	MaxBodyBytes int64
	// MaxPending, if > 0, caps the generation requests the server lets
	// through at once (running or waiting in the engine); more get 429
	// before reaching the engine. ≤ 0: no cap of its own (the engine's
	// queue limit answers 429 through engine.ErrOverloaded).
	MaxPending int
	// Logger receives request errors, recovered panics and one line per
	// request, each with its request_id (nil: slog.Default()).
	Logger *slog.Logger

	// Timeouts (Serve). ReadHeaderTimeout bounds reading a request's
	// headers (≤ 0: 10 s); BodyTimeout reading its body (≤ 0: 1 minute; a
	// body not complete by then is a 408 and the connection is closed);
	// IdleTimeout how long a keep-alive connection waits for its next
	// request (≤ 0: 2 minutes). RequestTimeout, if > 0, is the most a
	// generation request may take from arrival to its last token: past it
	// the generation is cancelled, a stream ends with an error event and
	// [DONE], a plain response is a 504.
	ReadHeaderTimeout time.Duration
	BodyTimeout       time.Duration
	IdleTimeout       time.Duration
	RequestTimeout    time.Duration
	// HealthStall: /health answers 503 when the engine's scheduler loop
	// has not beaten (stepping or idle) for this long (≤ 0: 5 minutes,
	// longer than one 512-token step of a 7B model on two cores).
	HealthStall time.Duration
	// Manifest describes the model for /v1/models, /api/show and /api/tags
	// (nil: what the engine tells).
	Manifest *Manifest
	// CORSOrigins are the browser origins allowed to call the API ("*":
	// any). Empty: no CORS headers (browsers refuse cross-origin calls).
	// A request whose Origin is neither loopback nor listed here is
	// refused (403) whatever its method: see checkOrigin.
	CORSOrigins []string
	// AllowedHosts are the Host names (or host:port) accepted on a
	// connection to a loopback address besides the loopback names and
	// addresses ("*": any; ".example.com": it and its subdomains): see
	// checkOrigin.
	AllowedHosts []string
	// SPMInfill lays FIM prompts out suffix first (llama-server's
	// --spm-infill); false: prefix first (PSM), unless the model was
	// trained suffix first (tokenizer.FIMTokens.SuffixFirst: nanoserve's
	// built-in model), which then reads them that way.
	SPMInfill bool
	// InfillBatch is llama-server's n_batch in the /infill budget (how
	// the prefix and suffix share the prompt; ≤ 0: 2048), always within
	// the context less the room for the middle.
	InfillBatch int
}

// Server serves one engine over HTTP. It is an http.Handler.
type Server struct {
	eng         *engine.Engine
	tok         *tokenizer.Tokenizer
	names       []string
	chat        *chat.Prompter // nil: no chat template
	defaults    sample.Policy
	apiKey      string
	metricsAuth bool // /metrics needs the key
	maxBody     int64
	slots       chan struct{} // admission: one token per admitted generation (nil: no cap)
	log         *slog.Logger
	created     int64
	m           *metrics
	responses   *responseStore // recent Responses API replies, for previous_response_id (responses.go)
	draining    atomic.Bool
	inFlight    atomic.Int64 // requests being served
	mux         map[string]route

	readHeaderTimeout time.Duration
	bodyTimeout       time.Duration
	idleTimeout       time.Duration
	reqTimeout        time.Duration // 0: none
	healthStall       time.Duration
	cors              []string         // allowed origins; nil: CORS off
	allowedHosts      []string         // Options.AllowedHosts
	now               func() time.Time // the clock /health compares the engine's heartbeat with

	// router: the models of a multi-model server (NewRouter), nil for a
	// server of one engine. manifest describes this server's model (nil:
	// unknown); keepAlive, set by the router on each model's server, tells
	// it how long the model should stay loaded after a request (Ollama's
	// keep_alive; 0: unload when idle).
	router    *router
	manifest  *Manifest
	keepAlive func(d time.Duration)

	// toolFormat: how replies are read for tool calls (ToolFormatNone:
	// requests with tools other than tool_choice "none" are a 400).
	toolFormat chat.ToolFormat
	spmInfill  bool // FIM prompts suffix first (infill.go)
	heal       bool // token healing unless a request says (Options.TokenHealing)
	nonEmpty   bool // completions never empty (Options.NonEmpty)
	infillB    int  // llama-server's n_batch for /infill (infill.go)

	// Test hooks: hook runs at the start of every routed handler, onToken
	// after each token a generation yields; gen, when set, stands in for
	// the engine with a scripted reply to a one-choice request (to test how
	// replies are read, e.g. tool calls, without a model that writes them).
	hook    func(r *http.Request)
	onToken func()
	onDone  func() // after a generation's results are counted
	gen     func(ctx context.Context, req engine.Request) (iter.Seq[engine.Token], func() *engine.Result)
}

// route is one path's handlers by method.
type route struct {
	endpoint string // metrics label
	access   access
	methods  map[string]http.HandlerFunc
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
func (s *Server) needsKey(rt route) bool {
	switch rt.access {
	case public:
		return false
	case metricsAccess:
		return s.metricsAuth
	}
	return true
}

// modelPath is the route table's entry for /v1/models/{id}: every path
// under /v1/models/ (the rest of the path is the model's name).
const modelPath = "/v1/models/{id}"

// New makes a server for eng.
func New(eng *engine.Engine, opts Options) (*Server, error) {
	s := &Server{
		eng:         eng,
		tok:         eng.Tokenizer(),
		names:       opts.ModelNames,
		apiKey:      opts.APIKey,
		metricsAuth: opts.MetricsAuth,
		maxBody:     opts.MaxBodyBytes,
		log:         opts.Logger,
		created:     time.Now().Unix(),
		m:           newMetrics(),
		responses:   newResponseStore(responseStoreCount, responseStoreBytes),

		readHeaderTimeout: orDefault(opts.ReadHeaderTimeout, 10*time.Second),
		bodyTimeout:       orDefault(opts.BodyTimeout, time.Minute),
		idleTimeout:       orDefault(opts.IdleTimeout, 2*time.Minute),
		reqTimeout:        max(opts.RequestTimeout, 0),
		healthStall:       orDefault(opts.HealthStall, 5*time.Minute),
		cors:              opts.CORSOrigins,
		allowedHosts:      opts.AllowedHosts,
		now:               time.Now,
		manifest:          opts.Manifest,
	}
	if len(s.names) == 0 {
		s.names = []string{"nanoserve"}
	}
	for i, n := range s.names {
		if n == "" || slices.Contains(s.names[:i], n) {
			return nil, fmt.Errorf("server: model name %q is empty or repeated", n)
		}
	}
	if s.maxBody <= 0 {
		s.maxBody = 4 << 20
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if opts.MaxPending > 0 {
		s.slots = make(chan struct{}, opts.MaxPending)
	}
	if opts.Template != nil {
		s.chat = &chat.Prompter{Template: opts.Template, Options: opts.TemplateOptions}
	}
	s.toolFormat = opts.ToolFormat
	s.spmInfill = llamacpp.SuffixFirst(s.tok, opts.SPMInfill)
	s.heal, s.nonEmpty = opts.TokenHealing, opts.NonEmpty
	s.infillB = opts.InfillBatch
	if s.infillB <= 0 {
		s.infillB = 2048
	}
	if s.toolFormat == "" {
		s.toolFormat = chat.ToolFormatNone
		if opts.Template != nil {
			s.toolFormat = opts.Template.ToolFormat()
		}
	}
	s.defaults = eng.Defaults()
	if opts.Defaults != nil {
		s.defaults = *opts.Defaults
	}
	if err := s.defaults.Validate(); err != nil {
		return nil, fmt.Errorf("server: default policy: %w", err)
	}
	s.mux = s.routes()
	return s, nil
}

// routes is the path table: each path's metrics label, who may call it
// (access: the API key unless marked public) and handlers by method. A
// multi-model server (NewRouter) answers the paths in frontPaths itself and
// sends every other one to the handler of the model the request's "model"
// field names (router.go), so a handler added here is routed by model with
// no more wiring; it is behind the API key unless marked otherwise here.
func (s *Server) routes() map[string]route {
	post := func(endpoint string, h http.HandlerFunc) route {
		return route{endpoint, needsKey, map[string]http.HandlerFunc{http.MethodPost: h}}
	}
	get := func(endpoint string, a access, h http.HandlerFunc) route {
		return route{endpoint, a, map[string]http.HandlerFunc{http.MethodGet: h}}
	}
	return map[string]route{
		"/v1/completions":           post("completions", s.handleCompletions),
		"/v1/chat/completions":      post("chat_completions", s.handleChat),
		"/v1/embeddings":            post("embeddings", s.handleEmbeddings),
		"/v1/responses":             post("responses", s.handleResponses),
		"/v1/messages":              post("anthropic_messages", s.handleAnthropicMessages),
		"/v1/messages/count_tokens": post("anthropic_count_tokens", s.handleAnthropicCountTokens),
		"/infill":                   post("infill", s.handleInfill),
		"/v1/models":                get("models", needsKey, s.handleModels),
		modelPath:                   get("models", needsKey, s.handleModelPath),
		"/health":                   get("health", public, s.handleHealth),
		"/ready":                    get("ready", public, s.handleReady),
		"/metrics":                  get("metrics", metricsAccess, s.handleMetrics),
		"/tokenize":                 post("tokenize", s.handleTokenize),
		"/detokenize":               post("detokenize", s.handleDetokenize),
		"/apply-template":           post("apply_template", s.handleApplyTemplate),
		"/api/generate":             post("ollama_generate", s.handleOllamaGenerate),
		"/api/chat":                 post("ollama_chat", s.handleOllamaChat),
		"/api/embed":                post("ollama_embed", s.handleOllamaEmbed),
		"/api/embeddings":           post("ollama_embeddings", s.handleOllamaEmbeddings),
		"/api/show":                 post("ollama_show", s.handleOllamaShow),
		"/api/tags":                 get("ollama_tags", needsKey, s.handleOllamaTags),
		"/api/ps":                   get("ollama_ps", needsKey, s.handleOllamaPS),
		"/api/version":              get("ollama_version", needsKey, s.handleOllamaVersion),
		"/api/pull":                 post("ollama_pull", s.handleOllamaPull),
	}
}

// Route is one entry of the route table as a client sees it.
type Route struct {
	Path    string   // ModelPath ("/v1/models/{id}") stands for any path under /v1/models/
	Methods []string // sorted
	Public  bool     // answered without the API key
}

// ModelPath is the route table's path of one model's card.
const ModelPath = modelPath

// Routes lists, sorted by path, every route a server made with opts
// answers (a multi-model server answers the same), with its methods and
// whether it needs the API key: what tests and the bad-input check walk.
func Routes(opts Options) []Route {
	s := &Server{metricsAuth: opts.MetricsAuth}
	var out []Route
	for path, rt := range s.routes() {
		r := Route{Path: path, Public: !s.needsKey(rt)}
		for m := range rt.methods {
			r.Methods = append(r.Methods, m)
		}
		slices.Sort(r.Methods)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// ServeHTTP routes a request, counting it and recovering from panics. Every
// request carries an id (the client's X-Request-Id, or a new one), echoed in
// the X-Request-Id response header and in each log line about it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	path := r.URL.Path
	rt, ok := s.mux[path]
	if !ok && strings.HasPrefix(path, "/v1/models/") {
		rt, ok = s.mux[modelPath]
	}
	endpoint := "other"
	if ok {
		endpoint = rt.endpoint
	}
	reqID := requestID(r.Header.Get("X-Request-Id"))
	w.Header().Set("X-Request-Id", reqID)
	log := s.log.With("request_id", reqID)
	r = r.WithContext(context.WithValue(r.Context(), loggerKey{}, log))
	if s.reqTimeout > 0 && (endpoint == "completions" || endpoint == "chat_completions" ||
		endpoint == "ollama_generate" || endpoint == "ollama_chat" || endpoint == "infill" ||
		endpoint == "responses" || endpoint == "anthropic_messages") {
		ctx, cancel := context.WithTimeoutCause(r.Context(), s.reqTimeout, &requestTimeoutError{s.reqTimeout})
		defer cancel()
		r = r.WithContext(ctx)
	}
	sw := &statusWriter{ResponseWriter: w, ollama: strings.HasPrefix(path, "/api/"), anthropic: isAnthropicPath(path)}
	s.m.add(&s.m.inFlight, 1)
	s.inFlight.Add(1)
	defer func() {
		s.inFlight.Add(-1)
		s.m.add(&s.m.inFlight, -1)
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				s.m.request(endpoint, 499)
				panic(v)
			}
			log.Error("server: handler panic", "path", path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !sw.wrote {
				writeError(sw, &apiError{status: http.StatusInternalServerError, Type: "server_error",
					Message: "internal server error (the server logged the details)"})
			}
		}
		s.m.request(endpoint, sw.statusCode())
		level := slog.LevelInfo
		if endpoint == "health" || endpoint == "ready" || endpoint == "metrics" {
			level = slog.LevelDebug // probes and scrapes every few seconds
		}
		log.Log(r.Context(), level, "request", "method", r.Method, "path", path, "status", sw.statusCode(),
			"ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr)
	}()

	if e := s.checkOrigin(r); e != nil {
		s.refuse(sw, r, e)
		return
	}
	if s.cors != nil && s.corsHeaders(sw, r) {
		return // a preflight, answered
	}
	if !ok {
		s.refuse(sw, r, &apiError{status: http.StatusNotFound, Type: "invalid_request_error", Code: strp("not_found"),
			Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, path)})
		return
	}
	h := rt.methods[r.Method]
	if h == nil && r.Method == http.MethodHead {
		h = rt.methods[http.MethodGet]
	}
	if h == nil {
		allow := make([]string, 0, len(rt.methods))
		for m := range rt.methods {
			allow = append(allow, m)
		}
		sw.Header().Set("Allow", strings.Join(allow, ", "))
		s.refuse(sw, r, &apiError{status: http.StatusMethodNotAllowed, Type: "invalid_request_error", Code: strp("method_not_allowed"),
			Message: fmt.Sprintf("method %s is not allowed on %s (use %s)", r.Method, path, strings.Join(allow, ", "))})
		return
	}
	if s.apiKey != "" && s.needsKey(rt) && !s.authorized(r) {
		sw.Header().Set("WWW-Authenticate", `Bearer realm="nanoserve"`)
		s.refuse(sw, r, &apiError{status: http.StatusUnauthorized, Type: "authentication_error", Code: strp("invalid_api_key"),
			Message: "missing or invalid API key: send the header \"Authorization: Bearer KEY\" or \"X-Api-Key: KEY\""})
		return
	}
	if s.hook != nil {
		s.hook(r)
	}
	h(sw, r)
}

// refuse answers a request before its handler runs (403, 401, 404, 405).
// Its body is unread, so the connection is closed after the answer:
// net/http would otherwise read the rest of a small body to reuse the
// connection, with no deadline, so a client that stalls its body would
// hold the connection (and a goroutine) for as long as it likes. The read
// deadline in the past makes that read fail at once (as readBody does).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, e *apiError) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	writeError(w, e)
}

// loggerKey is the request context key of the request's logger.
type loggerKey struct{}

// logger is the logger of the request ctx belongs to (its lines carry the
// request id), or the server's.
func (s *Server) logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return s.log
}

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
//     any port) nor listed in Options.CORSOrigins ("*": any). A page on any
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
func (s *Server) checkOrigin(r *http.Request) *apiError {
	if origin := r.Header.Get("Origin"); origin != "" && !slices.Contains(s.cors, "*") && !slices.Contains(s.cors, origin) && !loopbackOrigin(origin) {
		return &apiError{status: http.StatusForbidden, Type: "invalid_request_error", Code: strp("origin_not_allowed"),
			Message: fmt.Sprintf("origin %q is not allowed: browser requests are accepted from loopback origins and those listed with --cors-origin", origin)}
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	tcp, ok := local.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() || slices.Contains(s.allowedHosts, "*") {
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
	for _, a := range s.allowedHosts {
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
// no CORS headers, so the browser refuses it; its preflight is a 403.
func (s *Server) corsHeaders(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	allowed := slices.Contains(s.cors, origin) || slices.Contains(s.cors, "*")
	if !allowed {
		if preflight {
			writeError(w, &apiError{status: http.StatusForbidden, Type: "invalid_request_error", Code: strp("cors_origin_not_allowed"),
				Message: fmt.Sprintf("origin %q is not allowed (the server's --cors-origin list)", origin)})
		}
		return preflight
	}
	if slices.Contains(s.cors, "*") {
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
	w.WriteHeader(http.StatusNoContent)
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

// cutError is the error a request the server itself cancelled answers with
// (drain timeout: 503; per-request deadline: 504); nil when ctx was not
// cut by the server (the client went away, or it is still running).
func cutError(ctx context.Context) *apiError {
	cause := context.Cause(ctx)
	var rt *requestTimeoutError
	switch {
	case errors.Is(cause, errDrainTimeout):
		return &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Code: strp("shutting_down"),
			Message: "the server is shutting down and its drain timeout cut this request; retry on another replica", retryAfter: 1}
	case errors.As(cause, &rt):
		return &apiError{status: http.StatusGatewayTimeout, Type: "server_error", Code: strp("request_timeout"),
			Message: fmt.Sprintf("the request ran past the server's per-request deadline of %v and was cancelled", rt.d)}
	}
	return nil
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
func (s *Server) authorized(r *http.Request) bool {
	want := sha256.Sum256([]byte(s.apiKey))
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

// marshal encodes v as compact JSON without HTML escaping ("<|im_end|>"
// stays readable).
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only unencodable values (NaN) get here; the callers sanitise them.
		return []byte(`{"error":{"message":"server: encoding the response failed","type":"server_error","param":null,"code":null}}`)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(marshal(v), '\n'))
}

// writeError writes e in OpenAI's shape, or in Ollama's {"error": "..."}
// on an Ollama API path.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	if sw, ok := w.(*statusWriter); ok && sw.ollama {
		writeJSON(w, e.status, ollamaError{e.Message})
		return
	}
	if sw, ok := w.(*statusWriter); ok && sw.anthropic {
		writeJSON(w, e.status, anthropicErrorBody(e))
		return
	}
	writeJSON(w, e.status, errorBody(e))
}

// ---- simple endpoints ----

func (s *Server) card(name string) modelCard {
	return modelCard{ID: name, Object: "model", Created: s.created, OwnedBy: "nanoserve", MaxModelLen: s.eng.CtxSize(), Manifest: s.manifest}.withCache(s.eng)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if s.router != nil {
		s.router.handleModels(w, r)
		return
	}
	data := make([]modelCard, len(s.names))
	for i, n := range s.names {
		data[i] = s.card(n)
	}
	writeJSON(w, http.StatusOK, struct {
		Object string      `json:"object"`
		Data   []modelCard `json:"data"`
	}{"list", data})
}

// handleModelPath answers GET /v1/models/{id}.
func (s *Server) handleModelPath(w http.ResponseWriter, r *http.Request) {
	s.handleModel(w, r, strings.TrimPrefix(r.URL.Path, "/v1/models/"))
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request, id string) {
	if s.router != nil {
		s.router.handleModel(w, r, id)
		return
	}
	if _, e := s.resolveModel(id); e != nil || id == "" {
		if e == nil {
			e = s.unknownModel(id)
		}
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, s.card(id))
}

// handleHealth is liveness: 200 while the process answers and the engine's
// scheduler loop beats (stepping or idle), draining included, so an
// orchestrator does not kill a pod that is finishing its requests; 503 when
// the loop has stopped or has not beaten for Options.HealthStall.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if s.router != nil {
		s.router.handleHealth(w, r)
		return
	}
	beat := s.eng.Heartbeat()
	if beat.IsZero() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "error", "message": "the engine is stopped"})
		return
	}
	if age := s.now().Sub(beat); age > s.healthStall {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "error",
			"message": fmt.Sprintf("the engine loop has not stepped for %v (limit %v): it is hung", age.Round(time.Second), s.healthStall)})
		return
	}
	status := "ok"
	if s.draining.Load() {
		status = "draining"
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": status})
}

// handleReady is readiness: 200 when the model is loaded (always, once the
// server exists), the engine runs, its queue and the server's admission
// cap have room, and the server is not draining; 503 saying which is not.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if s.router != nil {
		s.router.handleReady(w, r)
		return
	}
	st := s.eng.Stats()
	var why string
	switch {
	case s.draining.Load():
		why = "the server is draining for shutdown"
	case s.eng.Heartbeat().IsZero():
		why = "the engine is stopped"
	case st.Waiting >= s.eng.Options().MaxQueue:
		why = fmt.Sprintf("the engine's queue is full (%d waiting)", st.Waiting)
	case s.slots != nil && len(s.slots) >= cap(s.slots):
		why = fmt.Sprintf("the server is full (%d requests running or waiting)", cap(s.slots))
	}
	if why != "" {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "message": why})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "model": s.names[0], "running": st.Running, "waiting": st.Waiting})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.router != nil {
		s.router.handleMetrics(w, r)
		return
	}
	serveFamilies(w, r, s.gatherModel)
}

// resolveModel maps the request's model field to the name responses report.
func (s *Server) resolveModel(name string) (string, *apiError) {
	if name == "" {
		return s.names[0], nil
	}
	if matchName(s.names, name) {
		return name, nil
	}
	return "", s.unknownModel(name)
}

// matchName reports whether a request's model field names a model that
// answers to names: one of them exactly, or one with Ollama's default tag
// (":latest").
func matchName(names []string, name string) bool {
	if slices.Contains(names, name) {
		return true
	}
	base, ok := strings.CutSuffix(name, ":latest")
	return ok && base != "" && slices.Contains(names, base)
}

func (s *Server) unknownModel(name string) *apiError {
	served := s.names
	if s.router != nil {
		served = s.router.servedNames()
	}
	return &apiError{status: http.StatusNotFound, Type: "invalid_request_error", Param: strp("model"), Code: strp("model_not_found"),
		Message: fmt.Sprintf("the model %q does not exist; this server serves %s", name, strings.Join(quoteAll(served), ", "))}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
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
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	base, cancelBase := context.WithCancelCause(context.Background())
	defer cancelBase(nil)
	hs := &http.Server{
		Handler:           s,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: s.readHeaderTimeout,
		IdleTimeout:       s.idleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
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
	cut := s.inFlight.Load()
	cancelBase(errDrainTimeout)
	gctx, gcancel := context.WithTimeout(context.Background(), cutGrace)
	defer gcancel()
	if err := hs.Shutdown(gctx); errors.Is(err, context.DeadlineExceeded) {
		hs.Close()
	}
	<-errc
	return fmt.Errorf("%w (%d after the %v drain timeout)", ErrDrainCancelled, cut, drain)
}
