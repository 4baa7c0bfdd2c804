package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/sample"
)

// apiError is an error response: an HTTP status and OpenAI's error object.
type apiError struct {
	status     int
	Message    string  `json:"message"`
	Type       string  `json:"type"`
	Param      *string `json:"param"`
	Code       *string `json:"code"`
	retryAfter int     // seconds; 0: no Retry-After header
	// llama-server's exceed_context_size_error carries the prompt's
	// tokens and the context (native.go).
	NPromptTokens int `json:"n_prompt_tokens,omitempty"`
	NCtx          int `json:"n_ctx,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// badRequest is a 400 naming the offending field (param may be "").
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Param: strp(param), Message: fmt.Sprintf(format, args...)}
}

func errorBody(e *apiError) any {
	return struct {
		Error *apiError `json:"error"`
	}{e}
}

// ---- requests ----

// commonParams are the fields /v1/completions and /v1/chat/completions
// share. Pointers tell "absent or null" from a given value.
type commonParams struct {
	unsupportedParams
	telemetryFields                        // llama-server's timings_per_token, return_progress (telemetry.go)
	Model               string             `json:"model"`
	Verbose             *bool              `json:"verbose"` // llama-server's: the answer carries __verbose (native.go)
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Temperature         *float64           `json:"temperature"`
	TopP                *float64           `json:"top_p"`
	TopK                *int               `json:"top_k"`
	MinP                *float64           `json:"min_p"`
	PresencePenalty     *float64           `json:"presence_penalty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty"`
	RepetitionPenalty   *float64           `json:"repetition_penalty"`
	Seed                *int64             `json:"seed"`
	Stop                json.RawMessage    `json:"stop"`
	StopTokenIDs        []int              `json:"stop_token_ids"`
	IgnoreEOS           *bool              `json:"ignore_eos"`
	LogitBias           map[string]float64 `json:"logit_bias"`
	N                   *int               `json:"n"`
	Stream              *bool              `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage *bool `json:"include_usage"`
	} `json:"stream_options"`
	User string `json:"user"` // accepted and ignored
	// Speculative (nanoserve extension, default true): false turns the
	// server's speculative decoding off for this request.
	Speculative *bool `json:"speculative"`
	// Special (nanoserve extension, default false): render control tokens
	// (FIM markers, end-of-text, ...) as text, as llama.cpp's --special;
	// off, they are never part of the output.
	Special *bool `json:"special"`
	constraintParams
}

type completionRequest struct {
	commonParams
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     *bool           `json:"echo"`
	Suffix   *string         `json:"suffix"`
	BestOf   *int            `json:"best_of"`
	// TokenHealing (nanoserve extension): see engine's "Token healing".
	TokenHealing *bool `json:"token_healing"`
	// ParseSpecial (default true, as vLLM and llama-server): special-token
	// text in a string prompt ("<|im_end|>") is that special token; false
	// keeps it plain text.
	ParseSpecial *bool `json:"parse_special"`
}

type chatRequest struct {
	commonParams
	Messages          []wireMessage   `json:"messages"`
	Logprobs          *bool           `json:"logprobs"`
	TopLogprobs       *int            `json:"top_logprobs"`
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Functions         json.RawMessage `json:"functions"`     // deprecated form of tools
	FunctionCall      json.RawMessage `json:"function_call"` // deprecated form of tool_choice
	reasoningParams
}

type wireMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Name         string          `json:"name"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	ToolCallID   string          `json:"tool_call_id"`
	FunctionCall json.RawMessage `json:"function_call"` // deprecated form of tool_calls
	// ReasoningContent is an assistant turn's thinking, which reasoning
	// models' templates render (or deliberately drop) in history.
	ReasoningContent *string `json:"reasoning_content"`
}

// decodeJSON reads a body (readBody) and decodes it into v
// (decodeRequest).
func (f *Front) decodeJSON(w http.ResponseWriter, r *http.Request, v request) *apiError {
	data, e := f.readBody(w, r)
	if e != nil {
		return e
	}
	return decodeRequest(r, data, v)
}

// readBody reads a request body of at most Options.MaxBodyBytes within
// Options.BodyTimeout (413, 408 or 400 otherwise, and for an empty body).
func (f *Front) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	// A slow sender gets bodyTimeout for the whole body. (A server-wide
	// ReadTimeout would also end the connection's background read during a
	// long generation, which cancels it.)
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(f.bodyTimeout))
	// MaxBytesReader tells net/http the limit was hit (it then closes the
	// connection after a half-close and a grace) only when given net/http's
	// own writer, not the front's statusWriter around it.
	base := w
	for {
		u, ok := base.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		base = u.Unwrap()
	}
	data, err := io.ReadAll(http.MaxBytesReader(base, r.Body, f.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			f.linger(rc, r, mbe.Limit)
		}
		// Keep the connection's read deadline in the past. Before writing
		// the response, and again when the handler returns, net/http reads
		// and discards what is left of a small unread body so it can reuse
		// the connection; with the deadline cleared, that read waits for a
		// stalled sender forever and the error response is never written.
		// With the deadline passed it fails at once, and the connection is
		// closed after the reply.
		rc.SetReadDeadline(time.Now())
		switch {
		case errors.As(err, &mbe):
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: strp("request_too_large"),
				Message: fmt.Sprintf("request body exceeds the limit of %d bytes", mbe.Limit)}
		case errors.Is(err, os.ErrDeadlineExceeded):
			got := ""
			if r.ContentLength > 0 {
				got = fmt.Sprintf(" (received %d of the %d bytes its Content-Length announced)", len(data), r.ContentLength)
			}
			return nil, &apiError{status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: strp("request_timeout"),
				Message: fmt.Sprintf("the request body did not arrive within %v%s", f.bodyTimeout, got)}
		}
		return nil, badRequest("", "reading the request body: %v", err)
	}
	rc.SetReadDeadline(time.Time{})
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, badRequest("", "the request body is empty; expected a JSON object")
	}
	return data, nil
}

// A body the server will not use (over the limit, or refused before its
// handler) is read on and discarded, up to lingerBytes within lingerTime,
// before the error is written. net/http closes such a connection after the
// reply with the rest of the body unread, and a peer still sending then gets
// a reset that can reach it before the reply: Go's client, the SDKs over it
// and curl report "connection reset by peer" instead of the 413 or 401.
// Reading the rest first lets the client finish its upload and read the
// answer, as nginx's lingering close does. A body announced longer than
// lingerBytes past what was read is answered at once, unread.
const (
	lingerBytes = 8 << 20
	lingerTime  = 2 * time.Second
)

// linger reads and discards the rest of r's body, of which read bytes are
// gone, bounded by lingerBytes and by lingerTime or the body timeout,
// whichever is shorter. The caller sets the read deadline it wants after.
// A client that sent Expect: 100-continue and has not been asked for its
// body yet (nothing read) waits for the answer before sending it: reading
// would send it the 100 that asks for the body being refused.
func (f *Front) linger(rc *http.ResponseController, r *http.Request, read int64) {
	if r.ContentLength == 0 || r.ContentLength > read+lingerBytes ||
		read == 0 && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return
	}
	rc.SetReadDeadline(time.Now().Add(min(lingerTime, f.bodyTimeout)))
	io.CopyN(io.Discard, r.Body, lingerBytes)
}

// wrongContentType is a 415 for a body that is not JSON sent with a
// Content-Type other than JSON (an HTML form's
// application/x-www-form-urlencoded, multipart/form-data, text/plain).
// A JSON body is read whatever its Content-Type says: curl -d sends JSON
// as a form.
func wrongContentType(r *http.Request, err error) *apiError {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, perr := mime.ParseMediaType(ct)
	if perr == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil // valid JSON of the wrong shape: jsonError says which
	}
	return &apiError{status: http.StatusUnsupportedMediaType, Type: "invalid_request_error", Code: strp("unsupported_media_type"),
		Message: fmt.Sprintf("the request body is not JSON and its Content-Type is %q; send a JSON object with Content-Type: application/json (%s)",
			ct, jsonError(err).Message)}
}

// jsonError describes an encoding/json failure.
func jsonError(err error) *apiError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return badRequest("", "invalid JSON at byte offset %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "invalid JSON: unexpected end of the request body")
	case errors.As(err, &te):
		if te.Field == "" {
			return badRequest("", "the request body must be a JSON object, got %s", jsonKind(te.Value))
		}
		field := wireField(te.Field)
		want := typeName(te.Type)
		if num, ok := strings.CutPrefix(te.Value, "number "); ok && (want == "a number" || want == "an integer" && !strings.ContainsAny(num, ".eE")) {
			// A number of the right kind that the Go type cannot hold.
			return badRequest(field, "field %q is out of range: %s does not fit %s", field, num, rangeName(te.Type))
		}
		return badRequest(field, "field %q must be %s, got %s", field, want, jsonKind(te.Value))
	}
	return badRequest("", "invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// embeddedStructs are the request structs embedded in others: encoding/json
// names them in a field's path, but they are not part of the wire name.
var embeddedStructs = []string{"commonParams", "constraintParams", "ollamaCommon"}

// wireField is the field path of a JSON type error as the client wrote it
// ("ollamaCommon.options.seed" → "options.seed").
func wireField(f string) string {
	parts := strings.Split(f, ".")
	parts = slices.DeleteFunc(parts, func(p string) bool { return slices.Contains(embeddedStructs, p) })
	return strings.Join(parts, ".")
}

// rangeName says which numbers a numeric Go type holds.
func rangeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a finite number (at most ±1.8e308)"
	case reflect.Int, reflect.Int64:
		return "a 64-bit integer"
	case reflect.Int32:
		return "a 32-bit integer"
	case reflect.Uint, reflect.Uint64:
		return "an unsigned 64-bit integer"
	}
	return typeName(t)
}

// jsonKind names a JSON value kind as encoding/json reports it ("number
// 1.5", "string", "array"...).
func jsonKind(v string) string {
	if num, ok := strings.CutPrefix(v, "number"); ok {
		if num = strings.TrimSpace(num); num != "" {
			return "a number (" + num + ")"
		}
		return "a number"
	}
	switch v {
	case "array", "object":
		return "an " + v
	case "":
		return "another type"
	}
	return "a " + v
}

func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// policy builds the sampling policy: base (the model's defaults) with the
// request's fields on top, validated. defMax is max_tokens when the request
// gives none.
// choices is the request's n (absent: 1).
func (p *commonParams) choices() int {
	if p.N == nil {
		return 1
	}
	return *p.N
}

func (p *commonParams) policy(base sample.Policy, defMax int, vocab int) (sample.Policy, *apiError) {
	pol := base
	pol.LogitBias = nil
	pol.Stop = nil
	if p.N != nil && (*p.N < 1 || *p.N > engine.MaxN) {
		return pol, badRequest("n", "n must be in [1, %d], got %d", engine.MaxN, *p.N)
	}
	pol.MaxTokens = defMax
	for _, mt := range []struct {
		name string
		v    *int
	}{{"max_tokens", p.MaxTokens}, {"max_completion_tokens", p.MaxCompletionTokens}} {
		if mt.v == nil {
			continue
		}
		if *mt.v < 1 {
			return pol, badRequest(mt.name, "%s must be at least 1, got %d", mt.name, *mt.v)
		}
		pol.MaxTokens = *mt.v
	}
	f32 := func(name string, v *float64, dst *float32) *apiError {
		if v == nil {
			return nil
		}
		if math.IsNaN(*v) || math.IsInf(*v, 0) || math.Abs(*v) > math.MaxFloat32 {
			return badRequest(name, "%s must be a finite number, got %v", name, *v)
		}
		*dst = float32(*v)
		return nil
	}
	for _, f := range []struct {
		name string
		v    *float64
		dst  *float32
	}{
		{"temperature", p.Temperature, &pol.Temperature},
		{"top_p", p.TopP, &pol.TopP},
		{"min_p", p.MinP, &pol.MinP},
		{"presence_penalty", p.PresencePenalty, &pol.PresencePenalty},
		{"frequency_penalty", p.FrequencyPenalty, &pol.FrequencyPenalty},
		{"repetition_penalty", p.RepetitionPenalty, &pol.RepetitionPenalty},
	} {
		if e := f32(f.name, f.v, f.dst); e != nil {
			return pol, e
		}
	}
	if p.TopK != nil {
		// vLLM spells "off" as -1; 0 is off here.
		pol.TopK = max(*p.TopK, 0)
		if *p.TopK < -1 {
			return pol, badRequest("top_k", "top_k must be >= 0 (0 or -1: off), got %d", *p.TopK)
		}
	}
	if p.Seed != nil {
		s := uint64(*p.Seed)
		pol.Seed = &s
	}
	if !isNull(p.Stop) {
		var one string
		if err := json.Unmarshal(p.Stop, &one); err == nil {
			pol.Stop = []string{one}
		} else if err := json.Unmarshal(p.Stop, (*[]string)(&pol.Stop)); err != nil {
			return pol, badRequest("stop", "stop must be a string or an array of strings")
		}
	}
	pol.StopTokenIDs = p.StopTokenIDs
	for i, id := range p.StopTokenIDs {
		if id < 0 || id >= vocab {
			return pol, badRequest("stop_token_ids", "stop_token_ids[%d] = %d is not a token id (vocabulary of %d)", i, id, vocab)
		}
	}
	if p.IgnoreEOS != nil {
		pol.IgnoreEOS = *p.IgnoreEOS
	}
	if len(p.LogitBias) > 0 {
		pol.LogitBias = make(map[int]float32, len(p.LogitBias))
		for k, v := range p.LogitBias {
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 || id >= vocab {
				return pol, badRequest("logit_bias", "logit_bias key %q is not a token id (vocabulary of %d)", k, vocab)
			}
			pol.LogitBias[id] = float32(v)
		}
	}
	if p.StreamOptions != nil && (p.Stream == nil || !*p.Stream) {
		return pol, badRequest("stream_options", "stream_options is only allowed when stream is true")
	}
	return pol, nil
}

// validate runs the policy's own checks and names the field.
func validatePolicy(pol *sample.Policy) *apiError {
	if err := pol.Validate(); err != nil {
		var fe *sample.FieldError
		if errors.As(err, &fe) {
			return badRequest(fe.Field, "%s %s", fe.Field, fe.Msg)
		}
		return badRequest("", "%v", err)
	}
	return nil
}

// prompt is one completions prompt: text, or token ids when ids != nil.
type prompt struct {
	text string
	ids  []int
}

// completionPrompts reads the completions prompt: a string, an array of
// strings, an array of token ids, or an array of token-id arrays (several
// prompts are a batch: choice j of prompt i has index i·n + j).
func completionPrompts(raw json.RawMessage, vocab int) ([]prompt, *apiError) {
	if isNull(raw) {
		return nil, badRequest("prompt", "prompt is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []prompt{{text: text}}, nil
	}
	var strs []string
	if json.Unmarshal(raw, &strs) == nil && len(strs) > 0 {
		out := make([]prompt, len(strs))
		for i, t := range strs {
			out[i].text = t
		}
		return out, nil
	}
	var nested [][]int
	if ids := []int(nil); json.Unmarshal(raw, &ids) == nil {
		nested = [][]int{ids}
	} else if json.Unmarshal(raw, &nested) != nil || len(nested) == 0 {
		return nil, badRequest("prompt", "prompt must be a string, an array of strings, an array of token ids or an array of token-id arrays")
	}
	out := make([]prompt, len(nested))
	for i, ids := range nested {
		if len(ids) == 0 {
			return nil, badRequest("prompt", "prompt token array is empty")
		}
		for k, id := range ids {
			if id < 0 || id >= vocab {
				if len(nested) == 1 {
					return nil, badRequest("prompt", "prompt[%d] = %d is not a token id (vocabulary of %d)", k, id, vocab)
				}
				return nil, badRequest("prompt", "prompt[%d][%d] = %d is not a token id (vocabulary of %d)", i, k, id, vocab)
			}
		}
		out[i].ids = ids
	}
	return out, nil
}

// chatMessages converts the request's messages for the template: roles
// system (also "developer"), user, assistant (with tool_calls or the
// legacy function_call), tool (with tool_call_id) and the legacy function
// (with name); content a string or an array of {"type":"text","text":...}
// parts (joined with newlines). Call ids pass through format's TemplateID.
func chatMessages(in []wireMessage, format chat.ToolFormat) ([]chat.Message, *apiError) {
	if len(in) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty array")
	}
	out := make([]chat.Message, 0, len(in))
	tm := &toolMessages{format: format}
	for i, m := range in {
		field := "messages[" + strconv.Itoa(i) + "]"
		role := m.Role
		switch role {
		case "system", "user", "assistant", "tool":
		case "developer":
			role = "system"
		case "function":
			role = "tool"
		case "":
			return nil, badRequest(field+".role", "%s.role is required", field)
		default:
			return nil, badRequest(field+".role", "%s.role %q is not supported (system, developer, user, assistant, tool)", field, m.Role)
		}
		msg := chat.Message{Role: role, Name: m.Name}
		if m.ReasoningContent != nil {
			msg.Extra = map[string]any{"reasoning_content": *m.ReasoningContent}
		}
		if role != "assistant" && (!isNull(m.ToolCalls) || !isNull(m.FunctionCall)) {
			return nil, badRequest(field+".tool_calls", "%s: only assistant messages carry tool calls", field)
		}
		switch {
		case role == "assistant":
			calls, e := tm.assistantCalls(field, m)
			if e != nil {
				return nil, e
			}
			msg.ToolCalls = calls
		case m.Role == "function":
			if m.Name == "" {
				return nil, badRequest(field+".name", "%s.name is required for a function message", field)
			}
			if len(tm.pending) > 0 {
				msg.ToolCallID, tm.pending = tm.pending[0], tm.pending[1:]
			} else {
				msg.ToolCallID = format.TemplateID(m.Name)
			}
		case role == "tool":
			if m.ToolCallID == "" {
				return nil, badRequest(field+".tool_call_id", "%s.tool_call_id is required for a tool message", field)
			}
			msg.ToolCallID = format.TemplateID(m.ToolCallID)
		}
		var content string
		switch {
		case isNull(m.Content):
			if role != "assistant" {
				return nil, badRequest(field+".content", "%s.content is required", field)
			}
		case json.Unmarshal(m.Content, &content) == nil:
		default:
			var parts []struct {
				Type string  `json:"type"`
				Text *string `json:"text"`
			}
			if json.Unmarshal(m.Content, &parts) != nil {
				return nil, badRequest(field+".content", "%s.content must be a string or an array of content parts", field)
			}
			texts := make([]string, 0, len(parts))
			for j, p := range parts {
				pf := field + ".content[" + strconv.Itoa(j) + "]"
				if p.Type != "text" {
					return nil, badRequest(pf+".type", "%s.type %q is not supported (only \"text\")", pf, p.Type)
				}
				if p.Text == nil {
					return nil, badRequest(pf+".text", "%s.text is required", pf)
				}
				texts = append(texts, *p.Text)
			}
			content = strings.Join(texts, "\n")
		}
		if format == chat.ToolFormatGeneric && len(msg.ToolCalls) > 0 {
			// A template without tool syntax drops tool_calls: the turn
			// shows the calls as the generic reply object it was.
			if calls := genericHistory(m); len(calls) > 0 {
				if content != "" {
					content += "\n"
				}
				content += chat.GenericCallsText(calls)
			}
		}
		msg.Content = content
		out = append(out, msg)
	}
	return out, nil
}

// genericHistory reads an assistant message's calls (tool_calls, or the
// legacy function_call) as name and arguments text; assistantCalls has
// already checked their shape.
func genericHistory(m wireMessage) []chat.ToolCall {
	type fn struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var fns []fn
	var calls []struct {
		Function fn `json:"function"`
	}
	if json.Unmarshal(m.ToolCalls, &calls) == nil {
		for _, c := range calls {
			fns = append(fns, c.Function)
		}
	}
	var legacy fn
	if !isNull(m.FunctionCall) && json.Unmarshal(m.FunctionCall, &legacy) == nil {
		fns = append(fns, legacy)
	}
	out := make([]chat.ToolCall, 0, len(fns))
	for _, f := range fns {
		args := string(f.Arguments)
		var str string
		if json.Unmarshal(f.Arguments, &str) == nil {
			args = str // OpenAI's arguments: JSON text in a string
		}
		out = append(out, chat.ToolCall{Name: f.Name, Arguments: args})
	}
	return out
}

// ---- responses ----

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptTokensDetails.CachedTokens is the part of the prompts the
	// prefix cache held (as OpenAI, vLLM and llama-server report it).
	PromptTokensDetails promptTokensDetails `json:"prompt_tokens_details"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
	// llama-server's fields: the names the operator gave the model
	// (--served-name, --alias; the names derived from its file are
	// accepted but not listed) and its --tags, both always arrays; status
	// (loaded or unloaded, as llama-server's router lists its models);
	// meta, a loaded model's sizes (front_models.go).
	Aliases []string     `json:"aliases"`
	Tags    []string     `json:"tags"`
	Status  *modelStatus `json:"status,omitempty"`
	Meta    *modelMeta   `json:"meta,omitempty"`
	// Whether the model is loaded, its manifest (once it has loaded).
	Loaded   *bool     `json:"loaded,omitempty"`
	Manifest *Manifest `json:"manifest,omitempty"`
	// A loaded model's KV cache: its element type (f32, f16, q8_0) and
	// the bytes it holds.
	KVCacheType  string `json:"kv_cache_type,omitempty"`
	KVCacheBytes int64  `json:"kv_cache_bytes,omitempty"`
}

// withCache fills in the KV cache fields of a loaded model's card.
func (c modelCard) withCache(eng *engine.Engine) modelCard {
	c.KVCacheType = strings.ToLower(eng.Options().KVType.String())
	c.KVCacheBytes = eng.CacheBytes()
	return c
}

// completions: choices[].text, logprobs in the legacy shape.
type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"` // "text_completion"
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
	// llama-server's: the build (every object) and the timings (a whole
	// answer, a stream's usage chunk); native.go.
	SystemFingerprint string          `json:"system_fingerprint,omitempty"`
	Timings           *nativeTimings  `json:"timings,omitempty"`
	PromptProgress    *promptProgress `json:"prompt_progress,omitempty"` // return_progress (telemetry.go)
	Verbose           *nativeResponse `json:"__verbose,omitempty"`
}

// chat: choices[].message (or .delta when streaming), logprobs.content.

// chatMessage is a streamed delta.
type chatMessage struct {
	Role             string        `json:"role,omitempty"`
	Content          *string       `json:"content,omitempty"`
	ReasoningContent *string       `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
	FunctionCall     *functionOut  `json:"function_call,omitempty"`
}

// replyMessage is a non-streamed choice's message: content is null when
// the reply is only tool calls.
type replyMessage struct {
	Role             string        `json:"role"`
	Content          *string       `json:"content"`
	ReasoningContent *string       `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallOut `json:"tool_calls,omitempty"`
	FunctionCall     *functionOut  `json:"function_call,omitempty"`
}

type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     float32          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      *replyMessage `json:"message,omitempty"`
	Delta        *chatMessage  `json:"delta,omitempty"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "chat.completion" or "chat.completion.chunk"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
	// llama-server's, as on completionResponse.
	SystemFingerprint string          `json:"system_fingerprint,omitempty"`
	Timings           *nativeTimings  `json:"timings,omitempty"`
	PromptProgress    *promptProgress `json:"prompt_progress,omitempty"`
	Verbose           *nativeResponse `json:"__verbose,omitempty"`
}
