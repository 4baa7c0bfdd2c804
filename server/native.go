package server

// llama-server's native surface, beside the OpenAI one: the switches and
// aliases its clients (and llama.cpp's own server test suite) rely on.
//
//   - paths without /v1: /chat/completions, /models, /embeddings answer as
//     their /v1 twins; /completion and /completions are llama-server's
//     native completion (native_completion.go), not OpenAI's;
//   - a single-model server answers a request naming any model with its
//     one model (Options.AnyModelName, serve's default: llama-server
//     ignores the field; --strict-model-names restores the 404), except on
//     Ollama's /api/ paths, whose clients pull a model reported missing;
//   - /metrics can be switched off (Options.NoMetrics: 501, llama-server's
//     "not supported" error), and carries llama-server's llamacpp:* names
//     (native_metrics.go);
//   - --n-predict is the token budget of a request that gives none;
//     --temp and --seed replace the model's sampling defaults.

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"nanoserve/engine"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// nativeOptions are the llama-server switches a Server keeps.
type nativeOptions struct {
	noMetrics bool
	noSlots   bool // Options.NoSlots: GET /slots answers 501
	anyName   bool // Options.AnyModelName
	nPredict  int  // > 0: the token budget of a generation that gives none
	verbose   bool // Options.Verbose
}

// newNativeOptions keeps o's llama-server switches and applies --temp and
// --seed to the default policy d (nil: a server without an engine).
func newNativeOptions(o Options, d *sample.Policy) nativeOptions {
	if d != nil {
		if o.Temperature != nil {
			d.Temperature = *o.Temperature
		}
		if o.Seed != nil {
			seed := *o.Seed
			d.Seed = &seed
		}
	}
	return nativeOptions{noMetrics: o.NoMetrics, noSlots: o.NoSlots, anyName: o.AnyModelName, nPredict: max(o.NPredict, 0), verbose: o.Verbose}
}

// nativeAliases are llama-server's paths without /v1 and the twin each
// answers as (same handlers, same access, same metrics label).
var nativeAliases = map[string]string{
	"/chat/completions":              "/v1/chat/completions",
	"/chat/completions/input_tokens": "/v1/chat/completions/input_tokens",
	"/responses":                     "/v1/responses",
	"/responses/input_tokens":        "/v1/responses/input_tokens",
	"/models":                        "/v1/models",
	"/embeddings":                    "/v1/embeddings",
}

// budget gives --n-predict to every request of a job that has no token
// budget of its own.
func (n nativeOptions) budget(reqs []engine.Request) {
	for i := range reqs {
		reqs[i].Policy.MaxTokens = n.tokens(reqs[i].Policy.MaxTokens)
	}
}

// tokens is a generation's token budget: maxTokens, or --n-predict when it
// is 0 (no budget), as llama-server reads n_predict -1.
func (n nativeOptions) tokens(maxTokens int) int {
	if maxTokens <= 0 {
		return n.nPredict
	}
	return maxTokens
}

// metricsOff answers /metrics on a server started with --metrics=false, as
// llama-server answers without --metrics; it reports whether it did.
func (f *Front) metricsOff(w http.ResponseWriter) bool {
	if !f.native.noMetrics {
		return false
	}
	writeError(w, notSupported("the metrics endpoint is disabled (start the server with --metrics)"))
	return true
}

// notSupported is llama-server's ERROR_TYPE_NOT_SUPPORTED: a 501.
func notSupported(msg string) *apiError {
	return &apiError{status: http.StatusNotImplemented, Type: "not_supported_error", Message: msg}
}

// processStart is when this process started serving, which llama-server
// sends with every scrape (Process-Start-Time-Unix) so a scraper can tell
// a restart from a counter reset.
var processStart = time.Now().Unix()

func setProcessStart(w http.ResponseWriter) {
	w.Header().Set("Process-Start-Time-Unix", strconv.FormatInt(processStart, 10))
}

// anyName is the model name a request on path is answered by: name, or ""
// (the one model) when name is none of the served names and the server
// has one model and AnyModelName, except on Ollama's /api/ paths.
func (f *Front) anyName(path, name string) string {
	if !f.native.anyName || name == "" || strings.HasPrefix(path, "/api/") || len(f.models.List()) != 1 {
		return name
	}
	if _, ok := f.models.Lookup(name); ok {
		return name
	}
	return ""
}

// corsAllowed reports whether origin is on the --cors-origin list: listed,
// "*" (any), or a loopback origin (any scheme http/https, any port) when
// the list holds "localhost", as llama-server reads --cors-origins
// localhost.
func (f *Front) corsAllowed(origin string) bool {
	if slices.Contains(f.cors, origin) || slices.Contains(f.cors, "*") {
		return true
	}
	return slices.Contains(f.cors, "localhost") && loopbackOrigin(origin)
}

// isPreflight reports whether r is a CORS preflight.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
}

// fingerprint is system_fingerprint: llama-server sends its build
// ("b<build>-<commit>"), here "b-nanoserve-" and the version.
func fingerprint() string {
	v := "dev"
	if f := strings.Fields(Version); len(f) > 0 {
		v = f[0]
	}
	return "b-nanoserve-" + v
}

// outcomeTimings are llama-server's timings of a job's first choice (nil
// when nothing ran).
func outcomeTimings(out *outcome) *nativeTimings {
	if len(out.Results) == 0 {
		return nil
	}
	res := out.Results[0]
	return llamaTimings(res, len(res.IDs), len(res.IDs)-1)
}

// MarshalJSON writes a streamed delta; the role chunk that opens a choice
// carries "content": null, as llama-server's (and OpenAI's omitting it
// would read as no content field at all).
func (m *chatMessage) MarshalJSON() ([]byte, error) {
	type plain chatMessage
	if m.Role == "" || m.Content != nil || len(m.ToolCalls) > 0 || m.FunctionCall != nil {
		return marshal((*plain)(m)), nil // unescaped, as the rest of the object
	}
	return json.Marshal(struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
	}{m.Role, nil})
}

// exceedsContext gives a prompt-too-long error llama-server's shape: type
// exceed_context_size_error with the prompt's tokens and the context
// (OpenAI's code context_length_exceeded stays; the status is 400 either
// way).
func exceedsContext(e *apiError, tokens, ctx int) {
	e.Type = "exceed_context_size_error"
	e.NPromptTokens, e.NCtx = tokens, ctx
}

// promptBytesError is the answer to a prompt refused before tokenizing,
// too long in bytes for any tokenization to fit the context: an
// exceed_context_size_error whose n_prompt_tokens is the fewest tokens the
// text can take (nil for other errors).
func promptBytesError(err error, param string) *apiError {
	var pb *tokenizer.PromptBytesError
	if !errors.As(err, &pb) {
		return nil
	}
	least := (pb.Bytes + pb.LongestToken - 1) / max(pb.LongestToken, 1)
	e := badRequest(param, "the prompt (%d bytes, at least %d tokens) is too large for this model's maximum context length of %d tokens", pb.Bytes, least, pb.MaxTokens)
	e.Code = strp("context_length_exceeded")
	exceedsContext(e, least, pb.MaxTokens)
	return e
}

// defaultParams are the sampling defaults /props reports (llama-server's
// default_generation_settings.params): seed -1 when each request draws
// its own, n_predict -1 without --n-predict.
func (s *Server) defaultParams() map[string]any {
	d := s.defaults
	seed := any(-1)
	if d.Seed != nil {
		seed = *d.Seed
	}
	np := -1
	if s.native.nPredict > 0 {
		np = s.native.nPredict
	}
	return map[string]any{"seed": seed, "temperature": d.Temperature, "top_k": d.TopK, "top_p": d.TopP, "min_p": d.MinP,
		"n_predict": np, "repeat_penalty": d.RepetitionPenalty, "presence_penalty": d.PresencePenalty, "frequency_penalty": d.FrequencyPenalty}
}

// modelFile is the model's file name as /props reports model_path: the
// name the model answers to that has the file's extension, else its id.
func (s *Server) modelFile() string {
	for _, n := range s.names {
		if strings.HasSuffix(strings.ToLower(n), ".gguf") || strings.HasSuffix(n, ".bin") {
			return n
		}
	}
	return s.names[0]
}
