package server

// A model route's request: the front reads its body once (readBody) and
// decodes it once, into the type the route table declares for it (decoded),
// then reads from that value the model it names (request.modelName) and
// whether it sets a field nanoserve does not support (unsupportedParams),
// and hands the value to the route's handler.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// request is a model route's decoded body.
type request interface {
	// modelName is the model the request names ("": the first model).
	modelName() string
	unsupported() *unsupportedParams
}

// modelHandler is a model route's request type and handler.
type modelHandler struct {
	newReq func() request
	run    func(s *Server, w http.ResponseWriter, r *http.Request, req request)
}

// decoded makes the model route of a handler that takes its decoded body
// as a *T.
func decoded[T any, P interface {
	*T
	request
}](h func(*Server, http.ResponseWriter, *http.Request, P)) modelHandler {
	return modelHandler{
		newReq: func() request { return P(new(T)) },
		run:    func(s *Server, w http.ResponseWriter, r *http.Request, req request) { h(s, w, r, req.(P)) },
	}
}

func (c *commonParams) modelName() string            { return c.Model }
func (e *embeddingRequest) modelName() string        { return e.Model }
func (e *ollamaEmbedRequest) modelName() string      { return e.Model }
func (e *ollamaEmbeddingsRequest) modelName() string { return e.Model }
func (t *tokenizeRequest) modelName() string         { return t.Model }
func (t *detokenizeRequest) modelName() string       { return t.Model }
func (t *applyTemplateRequest) modelName() string    { return t.Model }

// modelName is model, or when it is absent the older "name" if that is a
// string.
func (c *ollamaCommon) modelName() string {
	var name string
	if c.Model == "" && json.Unmarshal(c.Name, &name) == nil {
		return name
	}
	return c.Model
}

func (s *ollamaShowRequest) modelName() string {
	if s.Model == "" {
		return s.Name
	}
	return s.Model
}

// decodeRequest decodes a body into v, turning every failure into a 4xx
// that says what is wrong and where: 415 for a body that is not JSON sent
// with another Content-Type (a form, say), 400 for everything else,
// including a field the server does not support set to anything but its
// default.
func decodeRequest(r *http.Request, data []byte, v request) *apiError {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if e := wrongContentType(r, err); e != nil {
			return e
		}
		return jsonError(err)
	}
	if dec.More() {
		return badRequest("", "invalid JSON: trailing data after the request object")
	}
	return checkUnsupported(v.unsupported())
}

// unsupportedParams captures the fields of unsupportedFields, which every
// request type embeds: a body that sets one is refused whatever its API.
type unsupportedParams struct {
	UseBeamSearch              json.RawMessage `json:"use_beam_search"`
	LengthPenalty              json.RawMessage `json:"length_penalty"`
	EarlyStopping              json.RawMessage `json:"early_stopping"`
	IncludeStopStrInOutput     json.RawMessage `json:"include_stop_str_in_output"`
	SkipSpecialTokens          json.RawMessage `json:"skip_special_tokens"`
	SpacesBetweenSpecialTokens json.RawMessage `json:"spaces_between_special_tokens"`
	PromptLogprobs             json.RawMessage `json:"prompt_logprobs"`
	TruncatePromptTokens       json.RawMessage `json:"truncate_prompt_tokens"`
	GuidedWhitespacePattern    json.RawMessage `json:"guided_whitespace_pattern"`
	GuidedDecodingBackend      json.RawMessage `json:"guided_decoding_backend"`
	TypicalP                   json.RawMessage `json:"typical_p"`
	TfsZ                       json.RawMessage `json:"tfs_z"`
	Mirostat                   json.RawMessage `json:"mirostat"`
	NProbs                     json.RawMessage `json:"n_probs"`
	DynatempRange              json.RawMessage `json:"dynatemp_range"`
	PenalizeNL                 json.RawMessage `json:"penalize_nl"`
	Prediction                 json.RawMessage `json:"prediction"`
	Audio                      json.RawMessage `json:"audio"`
	Modalities                 json.RawMessage `json:"modalities"`
	WebSearchOptions           json.RawMessage `json:"web_search_options"`
	LogitBiasType              json.RawMessage `json:"logit_bias_type"`
}

func (u *unsupportedParams) unsupported() *unsupportedParams { return u }

// checkUnsupported rejects a body that sets an unsupported field to a
// non-default value (null is always accepted).
func checkUnsupported(u *unsupportedParams) *apiError {
	var bad []string
	v := reflect.ValueOf(u).Elem()
	for i := range v.NumField() {
		raw := v.Field(i).Interface().(json.RawMessage)
		k, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		ok := unsupportedFields[k]
		if raw == nil || ok == nil || isNull(raw) {
			continue
		}
		var compact bytes.Buffer
		if json.Compact(&compact, raw) != nil || !slices.Contains(ok, compact.String()) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return badRequest(bad[0], "%s is not supported (only its default value is accepted)", strings.Join(bad, ", "))
}
