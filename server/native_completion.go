package server

// POST /completion (and /completions): llama-server's native completion, a
// decoder and a sink on the generation pipeline (pipeline.go).
//
// Request: prompt in any of llama-server's forms (native_prompt.go; several
// prompts answer with an array, streamed chunks carry their "index"),
// n_predict (-1 or absent: --n-predict, else until the context is full),
// the sampling fields (temperature, top_k, top_p, min_p, seed, stop,
// repeat_penalty, presence_penalty, frequency_penalty, ignore_eos),
// logit_bias as llama-server spells it ([[id or text, bias], …] or an
// object; false as the bias bans the token (-100); text is tokenized and every
// token of it biased), n_probs (the top alternatives of each generated
// token: completion_probabilities; post_sampling_probs reports
// probabilities instead of logprobs), return_tokens, response_fields, the
// output constraints (grammar, json_schema, response_format: constrain.go),
// stream. Fields of llama-server's own machinery — cache_prompt (the
// prefix cache is always on), samplers (the order is nanoserve's), id_slot,
// n_keep, t_max_prompt_ms — are accepted and ignored; timings_per_token and
// return_progress stream llama-server's telemetry (telemetry.go).
//
// Response: llama-server's completion object: content, tokens (the ids
// when return_tokens), id_slot -1, stop, model, tokens_predicted,
// tokens_evaluated, generation_settings, prompt, has_new_line, truncated,
// stop_type ("eos", "limit", "word"), stopping_word, tokens_cached,
// timings (prompt_n counts the prompt tokens evaluated, cache_n those
// reused; the generation rate is over the decode steps, predicted_n − 1,
// since the first token comes from the prompt's logits), and
// completion_probabilities with n_probs. A stream sends one event per
// piece of text (its token ids always, stop false), then the final object
// with empty content and stop true; no [DONE], as llama-server.

import (
	"encoding/json"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"nanoserve/engine"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// nativeRequest is /completion's body: the completions fields plus
// llama-server's own.
type nativeRequest struct {
	completionRequest
	NPredict          *int            `json:"n_predict"`
	NProbs            *int            `json:"n_probs"`
	PostSamplingProbs *bool           `json:"post_sampling_probs"`
	RepeatPenalty     *float64        `json:"repeat_penalty"`
	ReturnTokens      *bool           `json:"return_tokens"`
	ResponseFields    []string        `json:"response_fields"`
	LogitBias         json.RawMessage `json:"logit_bias"` // shadows the OpenAI map: llama-server's forms
}

// nativeJob is a validated /completion request: the pipeline's job and
// what the sink needs besides.
type nativeJob struct {
	*job
	nPredict  int // as reported in generation_settings (-1: none)
	nProbs    int
	post      bool // post_sampling_probs
	retTokens bool
	fields    []string
	settings  map[string]any
	stops     []string
}

// ownFields are the unsupportedFields /completion reads itself: its own
// NProbs shadows the one unsupportedParams captures, so checkUnsupported
// never sees it set.
func (*nativeRequest) ownFields() []string { return []string{"n_probs"} }

func (s *Server) handleNativeCompletion(w http.ResponseWriter, r *http.Request, nr *nativeRequest) {
	start := time.Now()
	nr.ctx = r.Context()
	j, e := s.nativeJob(nr)
	if e != nil {
		writeError(w, e)
		return
	}
	j.start = start
	j.setTelemetry(nr.telemetryFields, j.stream)
	s.run(r.Context(), j.job, s.newNativeSink(w, j))
}

func (s *Server) nativeJob(nr *nativeRequest) (*nativeJob, *apiError) {
	model, e := s.resolveModel(nr.Model)
	if e != nil {
		return nil, e
	}
	vocab := s.tok.Size()
	nPredict := -1
	switch {
	case nr.NPredict != nil:
		nPredict = *nr.NPredict
		if nPredict < -1 {
			return nil, badRequest("n_predict", "n_predict must be -1 (no limit) or more, got %d", nPredict)
		}
		nr.MaxTokens = nil
	case nr.MaxTokens != nil:
		nPredict = *nr.MaxTokens
	}
	if nr.RepeatPenalty != nil && nr.RepetitionPenalty == nil {
		nr.RepetitionPenalty = nr.RepeatPenalty
	}
	bias, e := s.nativeLogitBias(nr.LogitBias)
	if e != nil {
		return nil, e
	}
	nr.commonParams.LogitBias = nil
	pol, e := nr.policy(s.defaults, 0, vocab)
	if e != nil {
		return nil, e
	}
	pol.LogitBias = bias
	if nPredict == 0 {
		return nil, badRequest("n_predict", "n_predict must be -1 (no limit) or at least 1, got 0")
	}
	pol.MaxTokens = s.native.tokens(max(nPredict, 0))
	if pol.MaxTokens > 0 {
		nPredict = pol.MaxTokens
	}
	j := &nativeJob{nPredict: nPredict, retTokens: nr.ReturnTokens != nil && *nr.ReturnTokens, fields: nr.ResponseFields,
		post: nr.PostSamplingProbs != nil && *nr.PostSamplingProbs, stops: pol.Stop}
	lp := -1
	if nr.NProbs != nil && *nr.NProbs > 0 {
		if *nr.NProbs > sample.MaxLogprobs {
			return nil, badRequest("n_probs", "n_probs must be in [0, %d], got %d", sample.MaxLogprobs, *nr.NProbs)
		}
		lp, j.nProbs = *nr.NProbs, *nr.NProbs
		pol.Logprobs = &lp
	}
	if e := validatePolicy(&pol); e != nil {
		return nil, e
	}
	prompts, e := s.llamaPrompts(nr.Prompt, "prompt")
	if e != nil {
		return nil, e
	}
	healing, nonEmpty := s.heal, s.nonEmpty
	if cs, _ := nr.constraintParams.constraint(); cs != nil {
		healing, nonEmpty = false, false
	}
	if nr.TokenHealing != nil {
		healing = *nr.TokenHealing
	}
	j.job = &job{model: model, n: 1, stream: nr.Stream != nil && *nr.Stream, logprobs: lp}
	for _, p := range prompts {
		j.reqs = append(j.reqs, engine.Request{Prompt: p.text, PromptIDs: p.ids, ParseSpecial: true, Policy: pol,
			TokenHealing: healing, NoSpeculation: noSpeculation(&nr.commonParams), Special: showSpecial(&nr.commonParams), NonEmpty: nonEmpty})
	}
	if e := s.applyConstraints(&nr.constraintParams, j.job); e != nil {
		return nil, e
	}
	seed := any(-1)
	if pol.Seed != nil {
		seed = *pol.Seed
	}
	stop := pol.Stop
	if stop == nil {
		stop = []string{}
	}
	j.settings = map[string]any{"n_predict": nPredict, "seed": seed, "temperature": pol.Temperature, "top_k": pol.TopK,
		"top_p": pol.TopP, "min_p": pol.MinP, "repeat_penalty": pol.RepetitionPenalty, "presence_penalty": pol.PresencePenalty,
		"frequency_penalty": pol.FrequencyPenalty, "ignore_eos": pol.IgnoreEOS, "stop": stop, "stream": j.stream,
		"n_probs": j.nProbs, "post_sampling_probs": j.post, "logit_bias": biasList(pol.LogitBias),
		// llama-server's adaptive-p sampler, which nanoserve does not
		// have: reported as llama-server reports it off.
		"adaptive_target": -1.0, "adaptive_decay": 0.9}
	return j, nil
}

// nativeLogitBias reads logit_bias in llama-server's forms: an array of
// [id or text, bias] pairs, or an object keyed by id or text; a bias of
// false bans the token. Text is tokenized (no BOS) and each of its tokens
// gets the bias.
func (s *Server) nativeLogitBias(raw json.RawMessage) (map[int]float32, *apiError) {
	if isNull(raw) {
		return nil, nil
	}
	vocab := s.tok.Size()
	out := map[int]float32{}
	add := func(key json.RawMessage, val json.RawMessage) *apiError {
		var bias float32
		var f float64
		var b bool
		switch {
		case json.Unmarshal(val, &f) == nil:
			if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
				return badRequest("logit_bias", "logit_bias values must be finite numbers")
			}
			bias = float32(f)
		case json.Unmarshal(val, &b) == nil && !b:
			bias = -100 // llama-server's -inf: the policy's floor, which bans the token
		default:
			return badRequest("logit_bias", "a logit_bias value must be a number or false")
		}
		var id int
		if json.Unmarshal(key, &id) == nil {
			if id < 0 || id >= vocab {
				return badRequest("logit_bias", "logit_bias names %d, not a token id (vocabulary of %d)", id, vocab)
			}
			out[id] = bias
			return nil
		}
		var text string
		if json.Unmarshal(key, &text) != nil {
			return badRequest("logit_bias", "a logit_bias key must be a token id or a text")
		}
		for _, id := range s.tok.Encode(text, false) {
			out[id] = bias
		}
		return nil
	}
	var pairs [][]json.RawMessage
	if json.Unmarshal(raw, &pairs) == nil {
		for _, p := range pairs {
			if len(p) != 2 {
				return nil, badRequest("logit_bias", "logit_bias pairs are [token id or text, bias]")
			}
			if e := add(p[0], p[1]); e != nil {
				return nil, e
			}
		}
		return out, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil, badRequest("logit_bias", "logit_bias must be an array of [token, bias] pairs or an object")
	}
	for k, v := range obj {
		key := json.RawMessage(strconv.Quote(k))
		if _, err := strconv.Atoi(k); err == nil {
			key = json.RawMessage(k)
		}
		if e := add(key, v); e != nil {
			return nil, e
		}
	}
	return out, nil
}

// nativeTimings is llama-server's timings object.
type nativeTimings struct {
	CacheN              int     `json:"cache_n"`
	PromptN             int     `json:"prompt_n"`
	PromptMs            float64 `json:"prompt_ms"`
	PromptPerTokenMs    float64 `json:"prompt_per_token_ms"`
	PromptPerSecond     float64 `json:"prompt_per_second"`
	PredictedN          int     `json:"predicted_n"`
	PredictedMs         float64 `json:"predicted_ms"`
	PredictedPerTokenMs float64 `json:"predicted_per_token_ms"`
	PredictedPerSecond  float64 `json:"predicted_per_second"`
}

// llamaTimings are a result's timings as llama-server reports them: the
// prompt rate over the prompt tokens evaluated (not those reused from the
// cache), the generation rate of predicted tokens over steps (/completion:
// the decode steps, predicted − 1, as the first token comes from the
// prompt's logits; /infill: every token), every value finite and ≥ 0.
func llamaTimings(res *engine.Result, predicted, steps int) *nativeTimings {
	tm := res.Timings
	prefilled := res.Usage.PromptTokens - res.Usage.CachedTokens
	t := &nativeTimings{CacheN: res.Usage.CachedTokens, PromptN: prefilled, PromptMs: tm.PrefillMs, PredictedN: predicted, PredictedMs: tm.DecodeMs}
	if prefilled > 0 && tm.PrefillMs > 0 {
		t.PromptPerTokenMs, t.PromptPerSecond = tm.PrefillMs/float64(prefilled), 1000*float64(prefilled)/tm.PrefillMs
	}
	if steps > 0 && tm.DecodeMs > 0 {
		t.PredictedPerTokenMs, t.PredictedPerSecond = tm.DecodeMs/float64(steps), 1000*float64(steps)/tm.DecodeMs
	}
	return t
}

// tokenProb is one entry of completion_probabilities.
type tokenProb struct {
	ID          int         `json:"id"`
	Token       string      `json:"token"`
	Logprob     *float32    `json:"logprob,omitempty"`
	Prob        *float32    `json:"prob,omitempty"`
	Bytes       []int       `json:"bytes"`
	TopLogprobs []tokenProb `json:"top_logprobs,omitempty"`
	TopProbs    []tokenProb `json:"top_probs,omitempty"`
}

// nativeResponse is llama-server's answer object, of /completion and of
// /infill (which never sets completion_probabilities).
type nativeResponse struct {
	Index              int             `json:"index"`
	Content            string          `json:"content"`
	Tokens             []int           `json:"tokens"`
	IDSlot             int             `json:"id_slot"`
	Stop               bool            `json:"stop"`
	Model              string          `json:"model,omitempty"`
	TokensPredicted    int             `json:"tokens_predicted"`
	TokensEvaluated    int             `json:"tokens_evaluated"`
	GenerationSettings map[string]any  `json:"generation_settings,omitempty"`
	Prompt             *string         `json:"prompt,omitempty"`
	HasNewLine         *bool           `json:"has_new_line,omitempty"`
	Truncated          *bool           `json:"truncated,omitempty"`
	StopType           string          `json:"stop_type,omitempty"`
	StoppingWord       *string         `json:"stopping_word,omitempty"`
	TokensCached       *int            `json:"tokens_cached,omitempty"`
	Timings            *nativeTimings  `json:"timings,omitempty"`
	PromptProgress     *promptProgress `json:"prompt_progress,omitempty"`
	Probs              []tokenProb     `json:"completion_probabilities,omitempty"`
}

// nativeSink writes /completion's answer.
type nativeSink struct {
	frames
	s       *Server
	j       *nativeJob
	content map[int]*strings.Builder // by prompt
	ids     map[int][]int
	probs   map[int][]tokenProb
	evalN   []int // by prompt: prompt tokens (known at the end; streamed chunks report 0 until then)
}

func (s *Server) newNativeSink(w http.ResponseWriter, j *nativeJob) *nativeSink {
	return &nativeSink{frames: frames{w: w}, s: s, j: j, content: map[int]*strings.Builder{}, ids: map[int][]int{}, probs: map[int][]tokenProb{}}
}

func (o *nativeSink) Fail(e *apiError) { writeError(o.w, e) }

func (o *nativeSink) Delta(i int, d delta) bool {
	var probs []tokenProb
	for _, t := range d.Tokens {
		o.ids[i] = append(o.ids[i], t.ID)
		if o.j.nProbs > 0 {
			probs = append(probs, o.prob(t))
		}
	}
	o.probs[i] = append(o.probs[i], probs...)
	if o.content[i] == nil {
		o.content[i] = &strings.Builder{}
	}
	o.content[i].WriteString(d.Text)
	if !o.j.stream || d.Text == "" {
		return true
	}
	toks := make([]int, len(d.Tokens))
	for k, t := range d.Tokens {
		toks[k] = t.ID
	}
	return o.send(&nativeResponse{Index: i, Content: d.Text, Tokens: toks, IDSlot: -1, TokensPredicted: len(o.ids[i]), Probs: probs,
		Timings: o.j.timingsNow(i)})
}

// Progress streams a prompt_progress chunk (return_progress).
func (o *nativeSink) Progress(p engine.PromptProgress) bool {
	return o.send(&nativeResponse{Content: "", Tokens: []int{}, IDSlot: -1, TokensEvaluated: p.Total,
		Timings: o.j.progressTimings(p), PromptProgress: progressOf(p)})
}

// prob is one token's completion_probabilities entry.
func (o *nativeSink) prob(t engine.Token) tokenProb {
	one := func(id int, logp float32) tokenProb {
		text := o.s.tok.DecodeWith([]int{id}, tokenizer.DecodeOptions{Continuation: true, Special: tokenizer.SpecialRender})
		p := tokenProb{ID: id, Token: text, Bytes: byteInts(text)}
		v := lp(logp)
		if o.j.post {
			pr := float32(math.Exp(float64(logp)))
			p.Prob = &pr
		} else {
			p.Logprob = &v
		}
		return p
	}
	out := one(t.ID, t.Logprob)
	for _, a := range t.Top {
		if o.j.post {
			if math.Exp(float64(a.Logprob)) <= 0 {
				continue // a token the samplers removed
			}
			out.TopProbs = append(out.TopProbs, one(a.ID, a.Logprob))
		} else {
			out.TopLogprobs = append(out.TopLogprobs, one(a.ID, a.Logprob))
		}
	}
	if o.j.post && out.TopProbs == nil {
		out.TopProbs = []tokenProb{}
	}
	if !o.j.post && out.TopLogprobs == nil {
		out.TopLogprobs = []tokenProb{}
	}
	return out
}

func (o *nativeSink) End(out *outcome) {
	if out.cancelled() {
		if out.Cut != nil {
			o.fail(out.Cut)
		}
		return
	}
	if out.Failure != "" {
		o.fail(&apiError{status: http.StatusInternalServerError, Type: "server_error", Message: out.Failure})
		return
	}
	finals := make([]any, len(out.Results))
	for i, res := range out.Results {
		for _, t := range out.Held[i] {
			o.ids[i] = append(o.ids[i], t.ID)
			if o.j.nProbs > 0 {
				o.probs[i] = append(o.probs[i], o.prob(t))
			}
		}
		content := ""
		if o.content[i] != nil {
			content = o.content[i].String()
		}
		f := o.final(i, res, content)
		if o.j.stream {
			f.Content, f.Tokens, f.Probs = "", []int{}, nil // sent with the pieces
			if !o.send(f) {
				return
			}
			continue
		}
		finals[i] = responseFields(f, o.j.fields)
	}
	if o.j.stream {
		return
	}
	if len(finals) == 1 {
		writeJSON(o.w, http.StatusOK, finals[0])
		return
	}
	writeJSON(o.w, http.StatusOK, finals)
}

// final is prompt i's closing object.
func (o *nativeSink) final(i int, res *engine.Result, content string) *nativeResponse {
	ids := res.IDs
	stopType, word := o.s.stopType(res, o.j.stops)
	toks := []int{}
	if o.j.retTokens {
		toks = ids
	}
	prompt := o.s.tok.DecodeWith(res.PromptIDs, tokenizer.DecodeOptions{Special: tokenizer.SpecialRender})
	hasNL := strings.Contains(content, "\n")
	truncated := false
	cached := res.Usage.CachedTokens
	var probs []tokenProb
	if o.j.nProbs > 0 {
		probs = o.probs[i]
	}
	return &nativeResponse{Index: i, Content: content, Tokens: toks, IDSlot: -1, Stop: true, Model: o.j.model,
		TokensPredicted: len(ids), TokensEvaluated: res.Usage.PromptTokens, GenerationSettings: o.j.settings,
		Prompt: &prompt, HasNewLine: &hasNL, Truncated: &truncated, StopType: stopType, StoppingWord: &word,
		TokensCached: &cached, Timings: llamaTimings(res, len(ids), len(ids)-1), Probs: probs}
}

// stopType is how llama-server names the end of res: "limit" (the token
// budget), "eos" (an end-of-generation token) or "word" with the stop
// string.
func (s *Server) stopType(res *engine.Result, stops []string) (typ, word string) {
	if res.FinishReason != engine.FinishStop {
		return "limit", ""
	}
	// The end-of-generation token that stopped it is not in ids; the
	// tokens of a stop string are (the engine cut it from the text).
	full := s.tok.DecodeWith(res.IDs, tokenizer.DecodeOptions{Special: tokenizer.SpecialSkip})
	for _, w := range stops {
		if w != "" && strings.Contains(full, w) {
			return "word", w
		}
	}
	return "eos", ""
}

// verboseObject is llama-server's __verbose of an OpenAI answer (its
// first choice): the native /completion object of res — the prompt as the
// model saw it (its tokens decoded, control tokens shown), the raw text,
// the counts and timings.
func (s *Server) verboseObject(j *job, res *engine.Result) *nativeResponse {
	typ, word := s.stopType(res, j.reqs[0].Policy.Stop)
	prompt := s.tok.DecodeWith(res.PromptIDs, tokenizer.DecodeOptions{Special: tokenizer.SpecialRender})
	hasNL, truncated, cached := strings.Contains(res.Text, "\n"), false, res.Usage.CachedTokens
	return &nativeResponse{Content: res.Text, Tokens: []int{}, IDSlot: -1, Stop: true, Model: j.model,
		TokensPredicted: len(res.IDs), TokensEvaluated: res.Usage.PromptTokens, Prompt: &prompt, HasNewLine: &hasNL,
		Truncated: &truncated, StopType: typ, StoppingWord: &word, TokensCached: &cached, Timings: llamaTimings(res, len(res.IDs), len(res.IDs)-1)}
}

func (o *nativeSink) send(v any) bool {
	if !o.failed {
		o.start(sseHeaders...)
	}
	return o.sse(responseFields(v, o.j.fields))
}

// fail ends the answer with an error: an error event once streaming, else
// an error reply.
func (o *nativeSink) fail(e *apiError) {
	if o.started {
		o.send(errorBody(e))
		return
	}
	writeError(o.w, e)
}

// biasEntry is one of generation_settings.logit_bias: a bias of null bans
// the token (-inf, which JSON cannot write).
type biasEntry struct {
	Token int      `json:"token"`
	Bias  *float32 `json:"bias"`
}

// biasList is a policy's logit biases as llama-server lists them, by token
// id. ignore_eos adds none: nanoserve's keeps generating after an
// end-of-generation token (vLLM's meaning) instead of banning it.
func biasList(m map[int]float32) []biasEntry {
	out := make([]biasEntry, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		e := biasEntry{Token: id}
		if b := m[id]; !math.IsInf(float64(b), -1) {
			e.Bias = &b
		}
		out = append(out, e)
	}
	return out
}
