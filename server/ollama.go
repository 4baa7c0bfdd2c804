package server

// Ollama's API over the same engines, for the editors and chat front-ends
// that speak it:
//
//	POST /api/generate   {model, prompt, system, raw, format, options, stream, keep_alive}:
//	                     the prompt rendered as one user turn with the model's chat template
//	                     (raw, or a model without one: the prompt as is)
//	POST /api/chat       {model, messages, tools, format, options, stream, keep_alive}
//	POST /api/embed      {model, input (string or strings), dimensions, truncate}
//	POST /api/embeddings {model, prompt} (the legacy form: one embedding)
//	POST /api/show       {model}: details, model_info, template, capabilities
//	GET  /api/tags       every served model; GET /api/ps the loaded ones
//	GET  /api/version    {version}
//	POST /api/pull       {model: "hf.co/ORG/REPO[:QUANT]"}: a multi-model server with RouterOptions.Pull
//	                     downloads it from the Hugging Face hub and serves it under that name; an
//	                     Ollama-registry name (llama3.2:1b) is a 400 saying how to name a hub model
//
// generate and chat stream NDJSON by default, one JSON object a line,
// {"model","created_at","response"|"message","done":false} per piece of
// text and a last line with done true, done_reason (stop, length) and the
// counts and durations (nanoseconds): total_duration, load_duration,
// prompt_eval_count, prompt_eval_duration, eval_count, eval_duration;
// "stream": false answers with the last line holding the whole text.
// options maps onto our sampling: temperature, top_k, top_p, min_p, seed,
// num_predict (negative: to the end of the context), stop,
// repeat_penalty, presence_penalty, frequency_penalty; num_ctx and the
// rest (num_thread, mirostat, …) are accepted and ignored: the context is
// the server's. format "json" constrains the output to a JSON object, a
// JSON schema object to that schema (the structured-output constraints of
// constrain.go). keep_alive (a duration string such as "5m", or seconds)
// sets how long a multi-model server keeps the model loaded once idle
// (0 unloads it; negative keeps it); a generate with no prompt just loads
// (done_reason "load") or, with keep_alive 0, unloads ("unload") it.
// A generate with suffix fills in the middle between prompt and suffix
// (no template, no system prompt; infill.go), a 400 on a model without FIM
// tokens. Not supported, each a 400 saying so: images, template, context
// (send the conversation to /api/chat). Errors
// are Ollama's {"error": "..."} with the status OpenAI's would have.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"nanoserve/chat"
)

// ollamaVersion is the Ollama API version /api/version reports (clients
// compare it to enable features).
const ollamaVersion = "0.12.0"

type ollamaError struct {
	Error string `json:"error"`
}

// ollamaOptions are the options we map; the rest are ignored.
type ollamaOptions struct {
	Temperature      *float64        `json:"temperature"`
	TopK             *int            `json:"top_k"`
	TopP             *float64        `json:"top_p"`
	MinP             *float64        `json:"min_p"`
	Seed             *int64          `json:"seed"`
	NumPredict       *int            `json:"num_predict"`
	Stop             json.RawMessage `json:"stop"`
	RepeatPenalty    *float64        `json:"repeat_penalty"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	NumCtx           *int            `json:"num_ctx"`
}

// ollamaCommon are the fields generate and chat share.
type ollamaCommon struct {
	unsupportedParams
	Name      json.RawMessage `json:"name"` // an older spelling of model: it routes the request when model is absent
	Model     string          `json:"model"`
	Format    json.RawMessage `json:"format"`
	Options   *ollamaOptions  `json:"options"`
	Stream    *bool           `json:"stream"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	Think     json.RawMessage `json:"think"`   // chat: thinking on/off or its level (ollama_think.go); generate: accepted
	Special   *bool           `json:"special"` // nanoserve extension: control tokens as text
}

type ollamaGenerateRequest struct {
	ollamaCommon
	Prompt   *string         `json:"prompt"`
	Suffix   string          `json:"suffix"`
	System   string          `json:"system"`
	Template string          `json:"template"`
	Raw      bool            `json:"raw"`
	Images   json.RawMessage `json:"images"`
	Context  json.RawMessage `json:"context"`
}

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Thinking  string           `json:"thinking,omitempty"` // a reasoning model's thinking (ollama_think.go)
	Images    json.RawMessage  `json:"images,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName  string           `json:"tool_name,omitempty"`
}

type ollamaToolCall struct {
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaChatRequest struct {
	ollamaCommon
	Messages []ollamaMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools"`
}

// ollamaDone are the last line's fields.
type ollamaDone struct {
	DoneReason         string `json:"done_reason,omitempty"`
	TotalDuration      int64  `json:"total_duration,omitempty"`
	LoadDuration       int64  `json:"load_duration,omitempty"`
	PromptEvalCount    int    `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64  `json:"prompt_eval_duration,omitempty"`
	EvalCount          int    `json:"eval_count,omitempty"`
	EvalDuration       int64  `json:"eval_duration,omitempty"`
}

type ollamaGenerateResponse struct {
	Model     string `json:"model"`
	CreatedAt string `json:"created_at"`
	Response  string `json:"response"`
	Done      bool   `json:"done"`
	ollamaDone
}

type ollamaChatResponse struct {
	Model     string        `json:"model"`
	CreatedAt string        `json:"created_at"`
	Message   ollamaMessage `json:"message"`
	Done      bool          `json:"done"`
	ollamaDone
}

func createdAt() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// params maps the Ollama fields onto our request parameters.
func (c *ollamaCommon) params(p *commonParams, maxTokens int) *apiError {
	p.Model = c.Model
	p.Special = c.Special
	if o := c.Options; o != nil {
		p.Temperature, p.TopK, p.TopP, p.MinP, p.Seed = o.Temperature, o.TopK, o.TopP, o.MinP, o.Seed
		p.RepetitionPenalty, p.PresencePenalty, p.FrequencyPenalty = o.RepeatPenalty, o.PresencePenalty, o.FrequencyPenalty
		p.Stop = o.Stop
		if o.NumPredict != nil {
			n := *o.NumPredict
			if n < 0 {
				n = maxTokens
			}
			p.MaxTokens = &n
		}
	}
	if p.MaxTokens == nil {
		p.MaxTokens = &maxTokens
	}
	stream := false
	p.Stream = &stream // the job runs unstreamed; ollamaRun streams NDJSON itself
	format := bytes.TrimSpace(c.Format)
	switch {
	case isNull(format):
	case string(format) == `""`:
	case string(format) == `"json"`:
		p.ResponseFormat = &responseFormat{Type: "json_object"}
	case format[0] == '{':
		p.JSONSchema = format
	default:
		return badRequest("format", "format must be \"json\" or a JSON schema object, got %s", format)
	}
	return nil
}

// checkOllamaOptions validates a request's options as a generation does
// (the same checks as /v1's sampling fields), for a request that runs none.
func (s *Server) checkOllamaOptions(c *ollamaCommon) *apiError {
	var p commonParams
	if e := c.params(&p, s.eng.CtxSize()); e != nil {
		return e
	}
	pol, e := p.policy(s.defaults, s.eng.CtxSize(), s.tok.Size())
	if e != nil {
		return e
	}
	return validatePolicy(&pol)
}

// keepAlive parses Ollama's keep_alive: a duration string ("5m", "1h",
// "-1"), or a number of seconds. ok is false when absent.
func keepAlive(raw json.RawMessage) (d time.Duration, ok bool, e *apiError) {
	if isNull(raw) {
		return 0, false, nil
	}
	var secs float64
	if json.Unmarshal(raw, &secs) == nil {
		return time.Duration(secs * float64(time.Second)), true, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false, badRequest("keep_alive", "keep_alive must be a duration such as \"5m\" or a number of seconds")
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(n * float64(time.Second)), true, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, false, badRequest("keep_alive", "keep_alive %q is not a duration such as \"5m\" or a number of seconds", s)
	}
	return d, true, nil
}

func (s *Server) handleOllamaGenerate(w http.ResponseWriter, r *http.Request, req *ollamaGenerateRequest) {
	start := time.Now()
	model, e := s.strictModel(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	switch {
	case !isNull(req.Images) && string(bytes.TrimSpace(req.Images)) != "[]":
		e = badRequest("images", "images are not supported: the served models read text only")
	case req.Template != "":
		e = badRequest("template", "template is not supported: the model's own chat template is used (or send raw: true with a rendered prompt)")
	case !isNull(req.Context) && string(bytes.TrimSpace(req.Context)) != "[]":
		e = badRequest("context", "context is not supported: send the conversation to /api/chat")
	}
	if e != nil {
		writeError(w, e)
		return
	}
	d, hasKA, e := s.applyKeepAlive(r.Context(), req.KeepAlive)
	if e != nil {
		writeError(w, e)
		return
	}
	if req.Prompt == nil || *req.Prompt == "" && req.System == "" {
		// Ollama's load / unload request: no prompt. Its options are
		// still checked as a generation's would be.
		if e := s.checkOllamaOptions(&req.ollamaCommon); e != nil {
			writeError(w, e)
			return
		}
		reason := "load"
		if hasKA && d == 0 {
			reason = "unload"
		}
		writeJSON(w, http.StatusOK, ollamaGenerateResponse{Model: model, CreatedAt: createdAt(), Done: true,
			ollamaDone: ollamaDone{DoneReason: reason, TotalDuration: int64(time.Since(start))}})
		return
	}
	var j *job
	if !req.Raw && s.chat != nil && req.Suffix == "" {
		var cr chatRequest
		if e := req.params(&cr.commonParams, s.eng.CtxSize()); e != nil {
			writeError(w, e)
			return
		}
		cr.constraintParams = cr.commonParams.constraintParams
		user, _ := json.Marshal(*req.Prompt)
		if req.System != "" {
			sys, _ := json.Marshal(req.System)
			cr.Messages = append(cr.Messages, wireMessage{Role: "system", Content: sys})
		}
		cr.Messages = append(cr.Messages, wireMessage{Role: "user", Content: user})
		cr.ctx = r.Context()
		j, e = s.chatJob(&cr)
	} else {
		var cr completionRequest
		if e := req.params(&cr.commonParams, s.eng.CtxSize()); e != nil {
			writeError(w, e)
			return
		}
		text := *req.Prompt
		if req.System != "" && !req.Raw && req.Suffix == "" {
			text = req.System + "\n\n" + text
		}
		cr.Prompt, _ = json.Marshal(text)
		if req.Suffix != "" {
			cr.Suffix = &req.Suffix // fill in the middle between prompt and suffix (infill.go)
		}
		cr.ctx = r.Context()
		j, e = s.completionJob(&cr)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	j.start = start
	j.model = model
	s.run(r.Context(), j, s.blockStops(j, &ollamaSink{frames: frames{w: w}, s: s, j: j, stream: req.Stream == nil || *req.Stream}))
}

func (s *Server) handleOllamaChat(w http.ResponseWriter, r *http.Request, req *ollamaChatRequest) {
	start := time.Now()
	model, e := s.strictModel(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	if _, _, e := s.applyKeepAlive(r.Context(), req.KeepAlive); e != nil {
		writeError(w, e)
		return
	}
	if len(req.Messages) == 0 {
		// Ollama's load request: no messages.
		writeJSON(w, http.StatusOK, ollamaChatResponse{Model: model, CreatedAt: createdAt(), Done: true,
			Message: ollamaMessage{Role: "assistant"}, ollamaDone: ollamaDone{DoneReason: "load", TotalDuration: int64(time.Since(start))}})
		return
	}
	var cr chatRequest
	if e := req.params(&cr.commonParams, s.eng.CtxSize()); e != nil {
		writeError(w, e)
		return
	}
	cr.Tools = req.Tools
	if e := ollamaThink(req.Think, &cr.reasoningParams); e != nil {
		writeError(w, e)
		return
	}
	msgs, e := ollamaMessages(req.Messages)
	if e != nil {
		writeError(w, e)
		return
	}
	cr.Messages = msgs
	cr.ctx = r.Context()
	j, e := s.chatJob(&cr)
	if e != nil {
		writeError(w, e)
		return
	}
	j.start = start
	j.model = model
	s.run(r.Context(), j, &ollamaSink{frames: frames{w: w}, s: s, j: j, stream: req.Stream == nil || *req.Stream, chat: true})
}

// ollamaMessages turns Ollama's messages into the OpenAI ones chatJob
// reads: tool calls get ids and string arguments; a tool result names its
// tool (tool_name) instead of a call id.
func ollamaMessages(in []ollamaMessage) ([]wireMessage, *apiError) {
	out := make([]wireMessage, 0, len(in))
	for i, m := range in {
		field := fmt.Sprintf("messages[%d]", i)
		if !isNull(m.Images) && string(bytes.TrimSpace(m.Images)) != "[]" {
			return nil, badRequest(field+".images", "%s.images: images are not supported (the served models read text only)", field)
		}
		content, _ := json.Marshal(m.Content)
		w := wireMessage{Role: m.Role, Content: content}
		if m.Thinking != "" {
			w.ReasoningContent = &m.Thinking
		}
		if len(m.ToolCalls) > 0 {
			calls := make([]toolCallOut, len(m.ToolCalls))
			for k, c := range m.ToolCalls {
				args := string(bytes.TrimSpace(c.Function.Arguments))
				var str string
				if json.Unmarshal(c.Function.Arguments, &str) == nil {
					args = str
				}
				if args == "" {
					args = "{}"
				}
				calls[k] = toolCallOut{ID: fmt.Sprintf("call_%d_%d", i, k), Type: "function", Function: functionOut{Name: c.Function.Name, Arguments: args}}
			}
			w.ToolCalls, _ = json.Marshal(calls)
		}
		if m.Role == "tool" {
			if m.ToolName != "" {
				w.Role, w.Name = "function", m.ToolName
			} else {
				w.ToolCallID = "call"
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// loadKey is the request context key of the time the router spent loading
// the request's model.
type loadKey struct{}

func loadDuration(ctx context.Context) time.Duration {
	d, _ := ctx.Value(loadKey{}).(time.Duration)
	return d
}

type ollamaEmbedRequest struct {
	unsupportedParams
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Truncate   *bool           `json:"truncate"`
	Dimensions *int            `json:"dimensions"`
	Options    *ollamaOptions  `json:"options"`
	KeepAlive  json.RawMessage `json:"keep_alive"`
}

func (s *Server) handleOllamaEmbed(w http.ResponseWriter, r *http.Request, req *ollamaEmbedRequest) {
	start := time.Now()
	if _, _, e := s.applyKeepAlive(r.Context(), req.KeepAlive); e != nil {
		writeError(w, e)
		return
	}
	if in := bytes.TrimSpace(req.Input); string(in) == `""` {
		// llama-server's "" (BOS alone, native_prompt.go) is not Ollama's.
		writeError(w, badRequest("input", "input cannot be an empty string"))
		return
	}
	resp, e := s.embeddings(r.Context(), &embeddingRequest{Model: req.Model, Input: req.Input, Dimensions: req.Dimensions})
	if e != nil {
		writeError(w, e)
		return
	}
	embs := make([][]float32, len(resp.Data))
	for i, d := range resp.Data {
		embs[i] = d.Embedding.([]float32)
	}
	writeJSON(w, http.StatusOK, struct {
		Model           string      `json:"model"`
		Embeddings      [][]float32 `json:"embeddings"`
		TotalDuration   int64       `json:"total_duration"`
		LoadDuration    int64       `json:"load_duration"`
		PromptEvalCount int         `json:"prompt_eval_count"`
	}{resp.Model, embs, int64(time.Since(start)), int64(loadDuration(r.Context())), resp.Usage.PromptTokens})
}

type ollamaEmbeddingsRequest struct {
	unsupportedParams
	Model     string          `json:"model"`
	Prompt    *string         `json:"prompt"`
	KeepAlive json.RawMessage `json:"keep_alive"`
}

func (s *Server) handleOllamaEmbeddings(w http.ResponseWriter, r *http.Request, req *ollamaEmbeddingsRequest) {
	if req.Prompt == nil {
		writeError(w, badRequest("prompt", "prompt is required"))
		return
	}
	if _, _, e := s.applyKeepAlive(r.Context(), req.KeepAlive); e != nil {
		writeError(w, e)
		return
	}
	in, _ := json.Marshal(*req.Prompt)
	resp, e := s.embeddings(r.Context(), &embeddingRequest{Model: req.Model, Input: in})
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"embedding": resp.Data[0].Embedding})
}

// ollamaName is the model a request names: model, or the older name;
// neither is a 400.
func ollamaName(model, name string) (string, *apiError) {
	if model == "" {
		model = name
	}
	if model == "" {
		return "", badRequest("model", "model is required")
	}
	return model, nil
}

// ollamaDetails is Ollama's model details object.
type ollamaDetails struct {
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

func details(m *Manifest) ollamaDetails {
	if m == nil {
		return ollamaDetails{Families: []string{}}
	}
	return ollamaDetails{Format: m.Format, Family: m.Architecture, Families: []string{m.Architecture},
		ParameterSize: paramSize(m.Parameters), QuantizationLevel: m.Quantization}
}

// paramSize spells a parameter count as Ollama does ("260K", "15M", "1.5B").
func paramSize(n int64) string {
	f := float64(n)
	switch {
	case n >= 1e9:
		return strconv.FormatFloat(f/1e9, 'f', 1, 64) + "B"
	case n >= 1e6:
		return strconv.FormatFloat(f/1e6, 'f', 1, 64) + "M"
	case n >= 1e3:
		return strconv.FormatFloat(f/1e3, 'f', 0, 64) + "K"
	}
	return strconv.FormatInt(n, 10)
}

// digest is a model's Ollama-style digest: its weights' sha256.
func digest(m *Manifest) string {
	if m == nil {
		return ""
	}
	return m.WeightsSHA256
}

type ollamaShowRequest struct {
	unsupportedParams
	Model   string `json:"model"`
	Name    string `json:"name"` // the older spelling
	Verbose bool   `json:"verbose"`
}

func (s *Server) handleOllamaShow(w http.ResponseWriter, r *http.Request, req *ollamaShowRequest) {
	name, e := ollamaName(req.Model, req.Name)
	if e != nil {
		writeError(w, e)
		return
	}
	if _, e := s.strictModel(name); e != nil {
		writeError(w, e)
		return
	}
	caps := []string{"completion"}
	if s.toolFormat != chat.ToolFormatNone {
		caps = append(caps, "tools")
	}
	if s.tok.FIM().OK() { // prefix, suffix and middle tokens: what /infill needs
		caps = append(caps, "insert") // Ollama's name for fill in the middle (suffix; here also /infill)
	}
	caps = append(caps, "embedding")
	m := s.eng.ModelInfo()
	info := map[string]any{"general.architecture": m.Arch, "general.parameter_count": m.Params,
		m.Arch + ".context_length": m.ContextLen, m.Arch + ".embedding_length": m.Dim, m.Arch + ".block_count": m.Layers,
		m.Arch + ".attention.head_count": m.Heads, m.Arch + ".attention.head_count_kv": m.KVHeads,
		"tokenizer.ggml.model": s.tok.Kind(), "nanoserve.context_length": s.eng.CtxSize()}
	tmpl := ""
	if s.chat != nil {
		tmpl = s.chat.Template.Source()
	}
	var params strings.Builder
	d := s.defaults
	fmt.Fprintf(&params, "temperature %s\ntop_k %d\ntop_p %s", strconv.FormatFloat(float64(d.Temperature), 'g', -1, 64), d.TopK, strconv.FormatFloat(float64(d.TopP), 'g', -1, 64))
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":    "",
		"parameters":   params.String(),
		"template":     tmpl,
		"details":      details(s.manifest),
		"model_info":   info,
		"capabilities": caps,
		"modified_at":  modifiedAt(s.manifest),
	})
}

func modifiedAt(m *Manifest) string {
	if m == nil || m.ModifiedAt.IsZero() {
		return time.Unix(0, 0).UTC().Format(time.RFC3339)
	}
	return m.ModifiedAt.UTC().Format(time.RFC3339Nano)
}

type ollamaModel struct {
	Name       string        `json:"name"`
	Model      string        `json:"model"`
	ModifiedAt string        `json:"modified_at,omitempty"`
	Size       int64         `json:"size"`
	Digest     string        `json:"digest"`
	Details    ollamaDetails `json:"details"`
	ExpiresAt  string        `json:"expires_at,omitempty"`
	SizeVRAM   *int64        `json:"size_vram,omitempty"`
}

// Version is the nanoserve version /api/version reports beside the Ollama
// API version (set by cmd/nanoserve).
var Version = "dev"
