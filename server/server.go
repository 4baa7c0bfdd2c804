// Package server is nanoserve's OpenAI-compatible HTTP API: the endpoints
// that vLLM, Ollama and llama.cpp's server offer, so any OpenAI client
// library (or curl) can drive an engine.
//
// Shape: Front (front.go) is the one http.Handler, a ServeMux over the
// route table, answering the server-wide routes over the model table
// (front_models.go; package host keeps the models) and running every
// other route on the model the request names (Server, one per model).
// Each generating API is a decoder and a sink over one pipeline
// (pipeline.go).
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
//	GET  /slots                llama-server's slot monitor: what each of the engine's MaxSeqs
//	                           sequence slots is doing (slots.go; Options.NoSlots: 501)
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
//	GET  /, /ui/NAME           the chat page and its files (Options.WebUI, package webui;
//	                           public: its API calls carry the key)
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
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/host"
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
	// template (chat.Template.ToolFormat), the generic JSON format
	// (chat.ToolFormatGeneric) when the template has no tool syntax.
	ToolFormat chat.ToolFormat
	// ReasoningFormat is how chat replies return a reasoning model's
	// thinking ("": auto, llama-server's default); a request's
	// reasoning_format overrides it (reasoning.go).
	ReasoningFormat chat.ReasoningFormat
	// ReasoningBudget caps a reply's reasoning tokens (nil: no cap;
	// llama-server's --reasoning-budget); a request's
	// reasoning_budget_tokens overrides it.
	ReasoningBudget *int
	// NoPrefillAssistant: a chat ending with an assistant message gets a
	// new assistant turn, instead of continuing that message
	// (llama-server's --no-prefill-assistant; reasoning.go).
	NoPrefillAssistant bool
	// Thinking is the enable_thinking a chat template gets unless the
	// request says (llama-server's --reasoning on/off; nil: auto, true for
	// a reasoning template).
	Thinking *bool
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
	// BlockStop: /v1/completions and Ollama's /api/generate end at the end
	// of the block the prompt opened (blockstop.go; serve sets it for the
	// built-in completion model, as generate).
	BlockStop bool
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
	// WebUI, if set, answers GET / and GET /ui/... (the chat page,
	// package webui) without the API key; nil: those paths are 404s.
	WebUI http.Handler
	// llama-server's switches (server/native.go): NoMetrics makes
	// /metrics answer 501 (--metrics=false); AnyModelName makes a
	// single-model server answer a model field naming none of its names
	// with its model, as llama-server does, on every path but Ollama's
	// /api/ (serve sets it unless --strict-model-names; off: a 404);
	// NPredict (> 0) is the token budget of a generation request that
	// gives none (--n-predict); Temperature and Seed, when
	// set, replace the model's defaults (--temp, --seed); Verbose puts
	// the __verbose debug object on every whole chat and completion
	// answer (--verbose; a request's "verbose": true does it for one).
	// NoSlots makes GET /slots answer 501 (--slots=false, llama-server's
	// --no-slots).
	NoMetrics bool
	NoSlots   bool
	// PredictRoute, if set, serves Vertex AI's prediction protocol there
	// (POST, predict.go); HealthRoute, if set, answers as /health
	// (AIP_PREDICT_ROUTE, AIP_HEALTH_ROUTE under AIP_MODE=PREDICTION).
	PredictRoute, HealthRoute string
	AnyModelName              bool
	NPredict                  int
	Temperature               *float32
	Seed                      *uint64
	Verbose                   bool
}

// Server is one model's handler: its engine, tokenizer, chat template,
// sampling defaults and admission slots, and the handlers of the routes a
// model answers (generation, embeddings, tokens, Ollama's show). The Front
// runs them on the model a request names; it is not an http.Handler.
type Server struct {
	eng      *engine.Engine
	tok      *tokenizer.Tokenizer
	names    []string
	chat     *chat.Prompter // nil: no chat template
	defaults sample.Policy
	slots    chan struct{} // admission: one token per admitted generation (nil: no cap)
	log      *slog.Logger
	created  int64
	m        *metrics // the model's own series (generations, latencies, engine)
	// responses is the front's memory of Responses API replies (set by
	// the router with keepAlive; nil: none is kept).
	responses *responseStore

	manifest *Manifest // describes this model (nil: unknown)

	// toolFormat: how replies are read for tool calls (ToolFormatNone:
	// requests with tools other than tool_choice "none" are a 400).
	toolFormat      chat.ToolFormat
	reasoningFormat chat.ReasoningFormat // Options.ReasoningFormat, resolved
	reasoningBudget *int                 // Options.ReasoningBudget
	noPrefill       bool                 // Options.NoPrefillAssistant
	thinking        *bool                // Options.Thinking
	spmInfill       bool                 // FIM prompts suffix first (infill.go)
	heal            bool                 // token healing unless a request says (Options.TokenHealing)
	nonEmpty        bool                 // completions never empty (Options.NonEmpty)
	blockStop       bool                 // completions end with their block (Options.BlockStop)
	infillB         int                  // llama-server's n_batch for /infill (infill.go)
	native          nativeOptions
	lc              llamaCounters // llamacpp:* counters (native_metrics.go)

	// gen is what jobs are submitted to: the engine (tests put a fake in
	// its place through the generator interface).
	gen generator
}

// New makes a server of one engine: a table of one model, loaded (the
// engine stays the caller's: Close does not close it).
func New(eng *engine.Engine, opts Options) (*Front, error) {
	s, err := newModelServer(eng, opts)
	if err != nil {
		return nil, err
	}
	lm := &LoadedModel{Engine: eng, Options: modelOptions(opts), Close: func() {}}
	f, err := NewRouter(RouterOptions{Options: opts, Models: []ModelSpec{{Names: s.names, Aliases: s.names[1:], Preload: true,
		Load: func() (*LoadedModel, error) { return lm, nil }}}})
	if err != nil {
		return nil, err
	}
	s.responses = f.responses
	f.models.Put(0, s, lm)
	return f, nil
}

// newModelServer makes the handler of one model's engine.
func newModelServer(eng *engine.Engine, opts Options) (*Server, error) {
	s := &Server{
		eng:      eng,
		tok:      eng.Tokenizer(),
		names:    opts.ModelNames,
		log:      opts.Logger,
		created:  time.Now().Unix(),
		m:        newMetrics(),
		manifest: opts.Manifest,
	}
	if len(s.names) == 0 {
		s.names = []string{"nanoserve"}
	}
	for i, n := range s.names {
		if n == "" || slices.Contains(s.names[:i], n) {
			return nil, fmt.Errorf("server: model name %q is empty or repeated", n)
		}
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
	s.reasoningFormat, s.reasoningBudget, s.noPrefill = opts.ReasoningFormat, opts.ReasoningBudget, opts.NoPrefillAssistant
	s.thinking = opts.Thinking
	if s.reasoningFormat == "" {
		s.reasoningFormat = chat.ReasoningAuto
	}
	s.spmInfill = eng.SuffixFirst(opts.SPMInfill)
	s.heal, s.nonEmpty, s.blockStop = opts.TokenHealing, opts.NonEmpty, opts.BlockStop
	s.infillB = opts.InfillBatch
	if s.infillB <= 0 {
		s.infillB = 2048
	}
	if s.toolFormat == "" {
		s.toolFormat = chat.ToolFormatNone
		if opts.Template != nil {
			s.toolFormat = opts.Template.ToolFormat()
		}
		if s.toolFormat == chat.ToolFormatNone {
			// A template without tool syntax: the server's own JSON
			// format (chat/toolgeneric.go), as llama-server falls back.
			// An explicit --tool-call-format none keeps tools off.
			s.toolFormat = chat.ToolFormatGeneric
		}
	}
	s.gen = engineGen{eng}
	s.defaults = eng.Defaults()
	if opts.Defaults != nil {
		s.defaults = *opts.Defaults
	}
	s.native = newNativeOptions(opts, &s.defaults)
	if err := s.defaults.Validate(); err != nil {
		return nil, fmt.Errorf("server: default policy: %w", err)
	}
	return s, nil
}

// logger is the logger of the request ctx belongs to (its lines carry the
// request id), or the server's.
func (s *Server) logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return s.log
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

// resolveModel maps the request's model field to the name responses report.
func (s *Server) resolveModel(name string) (string, *apiError) {
	if name == "" {
		return s.names[0], nil
	}
	if matchName(s.names, name) {
		return name, nil
	}
	if s.native.anyName {
		// The front let the request through to the one model (AnyModelName).
		return s.names[0], nil
	}
	return "", s.unknownModel(name)
}

// strictModel is resolveModel without AnyModelName: Ollama's API, whose
// clients pull a model they are told is missing.
func (s *Server) strictModel(name string) (string, *apiError) {
	if name == "" || matchName(s.names, name) {
		return s.resolveModel(name)
	}
	return "", s.unknownModel(name)
}

// matchName reports whether a request's model field names a model that
// answers to names: one of them exactly, or one with Ollama's default tag
// (":latest").
func matchName(names []string, name string) bool { return host.MatchName(names, name) }

func (s *Server) unknownModel(name string) *apiError {
	return unknownModel(name, s.names)
}

// unknownModel is the 404 for a model name no model answers to.
func unknownModel(name string, served []string) *apiError {
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
