package server

// POST /infill: llama-server's fill-in-the-middle endpoint, which editor
// plugins (llama.vim, llama.vscode) speak, and the FIM prompt behind
// /v1/completions' suffix.
//
// Request (llama-server's fields): input_prefix and input_suffix (required
// strings), input_extra ([{filename, text}], other files as context),
// prompt (text that starts the middle), n_predict (-1 or absent: until the
// context is full), t_max_predict_ms (after that much generation time,
// stop at the next newline), n_indent (stop before the first generated line
// whose indentation is below n_indent: the editor's cursor column), the
// sampling fields (temperature, top_k, top_p, min_p, seed, stop,
// repeat_penalty, presence_penalty, frequency_penalty), stream,
// return_tokens and response_fields. Unknown fields (samplers,
// cache_prompt, id_slot, t_max_prompt_ms, ...) are ignored.
//
// The prompt is llamacpp.InfillPrompt with llama-server's budget: n_batch
// is the engine's batch size, capped at the context minus room for the
// middle (min(n_predict, ctx/2); ctx/2 without a bound) so the middle
// always has positions; the extra context gets ctx − n_batch − 2·n_predict
// (n_predict -1 counting as half the room, so the extra context never
// takes the middle's room either); the prefix keeps its end, the suffix
// its start, the extra context its end.
// All text — prefix, suffix, extra and prompt — is tokenized with
// special-token parsing off (llama-server parses special text in prompt;
// here it is user text like the rest), so no request can spell a FIM
// token. The prompt ends with the middle token, a control token, so token
// healing (token_healing: true) never backs into it.
//
// Response: llama-server's non-OpenAI completion object (content, tokens,
// stop, model, tokens_predicted, tokens_evaluated, generation_settings,
// prompt, has_new_line, truncated, stop_type, stopping_word,
// tokens_cached, timings), reduced to response_fields when given (a
// "a/b" path is unnested to a key "a/b", as llama-server does). Streaming
// sends one "data: {...}" event per piece of text (stop: false), then the
// final object with empty content and stop: true, and no [DONE] — as
// llama-server. The n_indent cut holds back each new line until its
// indentation is known, so the streamed pieces always concatenate to the
// non-streamed content.

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"nanoserve/engine"
	"nanoserve/tokenizer"
)

type infillRequest struct {
	commonParams
	InputPrefix    *string         `json:"input_prefix"`
	InputSuffix    *string         `json:"input_suffix"`
	InputExtra     json.RawMessage `json:"input_extra"`
	Prompt         json.RawMessage `json:"prompt"`
	NPredict       *int            `json:"n_predict"`
	TMaxPredictMs  *float64        `json:"t_max_predict_ms"`
	NIndent        *int            `json:"n_indent"`
	RepeatPenalty  *float64        `json:"repeat_penalty"`
	ReturnTokens   *bool           `json:"return_tokens"`
	ResponseFields []string        `json:"response_fields"`
	TokenHealing   *bool           `json:"token_healing"`
}

// infillJob is one validated /infill request.
type infillJob struct {
	model     string
	req       engine.Request
	nIndent   int
	tMax      time.Duration // 0: none
	stream    bool
	retTokens bool
	fields    []string
	settings  map[string]any
}

// noFIM is the 400 for a FIM request on a model without FIM tokens.
func noFIM(param string, err error) *apiError {
	e := badRequest(param, "infill is not supported by this model: %v", err)
	e.Code = strp("fim_not_supported")
	return e
}

func (s *Server) handleInfill(w http.ResponseWriter, r *http.Request, ir *infillRequest) {
	start := time.Now()
	j, e := s.infillJob(ir)
	if e != nil {
		writeError(w, e)
		return
	}
	s.run(r.Context(), &job{model: j.model, reqs: []engine.Request{j.req}, n: 1, stream: j.stream, logprobs: -1, start: start},
		&infillSink{infillOut: infillOut{frames: frames{w: w}, s: s, j: j}, cut: indentCut{n: j.nIndent}})
}

func (s *Server) infillJob(ir *infillRequest) (*infillJob, *apiError) {
	model, e := s.resolveModel(ir.Model)
	if e != nil {
		return nil, e
	}
	if err := s.eng.CheckFIM(); err != nil {
		return nil, noFIM("", err)
	}
	switch {
	case ir.InputPrefix == nil:
		return nil, badRequest("input_prefix", "input_prefix is required (a string)")
	case ir.InputSuffix == nil:
		return nil, badRequest("input_suffix", "input_suffix is required (a string)")
	case ir.N != nil && *ir.N != 1:
		return nil, badRequest("n", "/infill returns one completion; n must be 1")
	}
	var extra []engine.FIMChunk
	if !isNull(ir.InputExtra) {
		var raw []map[string]json.RawMessage
		if err := json.Unmarshal(ir.InputExtra, &raw); err != nil {
			return nil, badRequest("input_extra", `input_extra must be an array of {"filename": string, "text": string}`)
		}
		for i, c := range raw {
			var ch engine.FIMChunk
			if err := json.Unmarshal(c["text"], &ch.Text); err != nil || c["text"] == nil {
				return nil, badRequest("input_extra", "input_extra[%d] must have a \"text\" string", i)
			}
			if f, ok := c["filename"]; ok && !isNull(f) {
				if err := json.Unmarshal(f, &ch.Filename); err != nil {
					return nil, badRequest("input_extra", "input_extra[%d].filename must be a string", i)
				}
			}
			extra = append(extra, ch)
		}
	}
	var prompt string
	if !isNull(ir.Prompt) {
		if err := json.Unmarshal(ir.Prompt, &prompt); err != nil {
			return nil, badRequest("prompt", "prompt must be a string (the start of the middle)")
		}
	}
	nPredict := -1
	if ir.NPredict != nil {
		nPredict = *ir.NPredict
		if nPredict < -1 {
			return nil, badRequest("n_predict", "n_predict must be -1 (no limit) or more, got %d", nPredict)
		}
	} else if ir.MaxTokens != nil {
		nPredict = *ir.MaxTokens
	}
	if ir.RepeatPenalty != nil && ir.RepetitionPenalty == nil {
		ir.RepetitionPenalty = ir.RepeatPenalty
	}
	pol, e := ir.policy(s.defaults, 0, s.tok.Size())
	if e != nil {
		return nil, e
	}
	pol.MaxTokens = max(nPredict, 0)
	if nPredict == 0 {
		return nil, badRequest("n_predict", "n_predict must be -1 (no limit) or at least 1, got 0")
	}
	if e := validatePolicy(&pol); e != nil {
		return nil, e
	}
	j := &infillJob{model: model, stream: ir.Stream != nil && *ir.Stream, retTokens: ir.ReturnTokens != nil && *ir.ReturnTokens,
		fields: ir.ResponseFields}
	if ir.NIndent != nil {
		if *ir.NIndent < 0 {
			return nil, badRequest("n_indent", "n_indent must be 0 or more, got %d", *ir.NIndent)
		}
		j.nIndent = *ir.NIndent
	}
	if ir.TMaxPredictMs != nil {
		if !(*ir.TMaxPredictMs >= 0) {
			return nil, badRequest("t_max_predict_ms", "t_max_predict_ms must be 0 (none) or more")
		}
		j.tMax = time.Duration(*ir.TMaxPredictMs * float64(time.Millisecond))
	}
	ids, err := s.eng.EncodeFIM(engine.FIM{Prefix: *ir.InputPrefix, Suffix: *ir.InputSuffix, Extra: extra, Prompt: prompt,
		Predict: nPredict, Batch: s.infillB, SuffixFirst: s.spmInfill})
	if err != nil {
		return nil, fimError("prompt", err)
	}
	j.req = engine.Request{PromptIDs: ids, Policy: pol, TokenHealing: healOr(ir.TokenHealing, s.heal),
		FIM: true, Special: showSpecial(&ir.commonParams)}
	j.settings = map[string]any{"n_predict": nPredict, "n_indent": j.nIndent, "t_max_predict_ms": ir.TMaxPredictMs,
		"temperature": pol.Temperature, "top_k": pol.TopK, "top_p": pol.TopP, "min_p": pol.MinP,
		"repeat_penalty": pol.RepetitionPenalty, "stop": pol.Stop, "stream": j.stream, "spm_infill": s.spmInfill}
	return j, nil
}

// indentCut applies n_indent to generated text as it grows: every line
// after the first must be indented by at least n spaces or tabs once it
// has something else; the first that is not ends the generation, cut
// after its indentation (as llama-server cuts it). Text of a line whose
// indentation is still undecided is held back.
type indentCut struct {
	n       int
	text    string // everything generated
	decided int    // text[:decided] is final
	cut     bool
}

// push appends piece and returns the text that became final.
func (c *indentCut) push(piece string) string {
	if c.cut {
		return ""
	}
	c.text += piece
	from := c.decided
	if c.n <= 0 {
		c.decided = len(c.text)
		return c.text[from:]
	}
	for c.decided < len(c.text) {
		if c.decided > 0 && c.text[c.decided-1] == '\n' {
			// A new line: decide it once something follows its indentation
			// (a blank line too, as in llama-server).
			ind := indentOf(c.text[c.decided:])
			if c.decided+ind == len(c.text) {
				break
			}
			if ind < c.n {
				c.text = c.text[:c.decided+ind]
				c.decided = len(c.text)
				c.cut = true
				break
			}
		}
		nl := strings.IndexByte(c.text[c.decided:], '\n')
		if nl < 0 {
			c.decided = len(c.text)
			break
		}
		c.decided += nl + 1
	}
	return c.text[from:c.decided]
}

// flush returns the held-back rest at the end of the generation.
func (c *indentCut) flush() string {
	if c.cut {
		return ""
	}
	rest := c.text[c.decided:]
	c.decided = len(c.text)
	return rest
}

func indentOf(s string) int {
	n := 0
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	return n
}

// infillSink writes one /infill answer: llama-server's pieces as SSE
// events and its final object, or that object alone.
type infillSink struct {
	infillOut
	cut      indentCut
	content  strings.Builder
	ids      []int // generated
	pending  []int // generated, not yet streamed
	stopType string
	hasNL    bool
	first    time.Time
}

func (o *infillSink) Fail(e *apiError) { writeError(o.w, e) }

func (o *infillSink) Delta(_ int, d delta) bool {
	if o.first.IsZero() {
		o.first = time.Now()
	}
	for _, t := range d.Tokens {
		o.ids = append(o.ids, t.ID)
		o.pending = append(o.pending, t.ID)
	}
	piece := o.cut.push(d.Text)
	o.content.WriteString(piece)
	if piece != "" && o.j.stream {
		if !o.partial(piece, o.pending, len(o.ids)) {
			return false // the client is gone: leaving the stream cancels it
		}
		o.pending = o.pending[:0]
	}
	if o.cut.cut {
		o.stopType = "limit"
		return false
	}
	if strings.Contains(d.Text, "\n") {
		o.hasNL = true
		if o.j.tMax > 0 && time.Since(o.first) > o.j.tMax {
			o.stopType = "limit"
			return false
		}
	}
	return true
}

func (o *infillSink) End(out *outcome) {
	res := out.Results[0]
	for _, t := range out.Held[0] {
		o.ids = append(o.ids, t.ID)
		o.pending = append(o.pending, t.ID)
	}
	if rest := o.cut.flush(); rest != "" || len(o.pending) > 0 {
		o.content.WriteString(rest)
		if o.j.stream {
			o.partial(rest, o.pending, len(o.ids))
		}
	}
	if o.stopType == "" {
		switch res.FinishReason {
		case engine.FinishStop:
			o.stopType = "eos"
		case engine.FinishLength:
			o.stopType = "limit"
		case engine.FinishCancelled:
			if out.Cut != nil {
				o.fail(out.Cut)
			}
			return
		case engine.FinishError:
			o.fail(&apiError{status: http.StatusInternalServerError, Type: "server_error", Message: out.Failure})
			return
		}
	}
	final := o.s.infillFinal(o.j, res, o.content.String(), o.ids, o.stopType, o.hasNL)
	if o.j.stream {
		final.Content, final.Tokens = "", []int{} // all sent with the pieces
		o.send(final)
		return
	}
	writeJSON(o.w, http.StatusOK, responseFields(final, o.j.fields))
}

func (s *Server) infillFinal(j *infillJob, res *engine.Result, content string, ids []int, stopType string, hasNL bool) *nativeResponse {
	tim := llamaTimings(res, len(ids), len(ids)) // /infill's rate: over every generated token
	toks := []int{}
	if j.retTokens {
		toks = ids
	}
	prompt := s.tok.DecodeWith(res.PromptIDs, tokenizer.DecodeOptions{Special: tokenizer.SpecialRender})
	empty := ""
	truncated := false
	cached := res.Usage.CachedTokens
	return &nativeResponse{Content: content, Tokens: toks, IDSlot: -1, Stop: true, Model: j.model,
		TokensPredicted: len(ids), TokensEvaluated: res.Usage.PromptTokens, GenerationSettings: j.settings,
		Prompt: &prompt, HasNewLine: &hasNL, Truncated: &truncated, StopType: stopType, StoppingWord: &empty,
		TokensCached: &cached, Timings: tim}
}

// infillOut writes one /infill response.
type infillOut struct {
	frames
	s *Server
	j *infillJob
}

func (o *infillOut) send(v any) bool {
	if !o.failed {
		o.start(sseHeaders...)
	}
	return o.sse(responseFields(v, o.j.fields))
}

// partial streams one piece of the middle with the ids of the tokens
// generated since the last piece; n is the number generated so far.
func (o *infillOut) partial(piece string, ids []int, n int) bool {
	toks := []int{}
	if o.j.retTokens {
		toks = ids
	}
	return o.send(&nativeResponse{Content: piece, Tokens: toks, IDSlot: -1, TokensPredicted: n,
		TokensEvaluated: len(o.j.req.PromptIDs)})
}

// fail ends the response with an error: an error event once streaming,
// else an error reply.
func (o *infillOut) fail(e *apiError) {
	if o.started {
		o.send(errorBody(e))
		return
	}
	writeError(o.w, e)
}

// fimPrompt is the FIM prompt of /v1/completions' prompt + suffix: the
// prompt is the prefix, no extra context.
func (s *Server) fimPrompt(prefix, suffix string, maxTokens int) ([]int, *apiError) {
	ids, err := s.eng.EncodeFIM(engine.FIM{Prefix: prefix, Suffix: suffix, Predict: maxTokens, Batch: s.infillB, SuffixFirst: s.spmInfill})
	if err != nil {
		return nil, fimError("suffix", err)
	}
	return ids, nil
}

// fimError is the 400 for a FIM prompt the engine could not build: a
// model without FIM tokens (fim_not_supported), a prompt too long.
func fimError(param string, err error) *apiError {
	switch {
	case errors.Is(err, engine.ErrNoFIM):
		return noFIM(param, err)
	case errors.Is(err, engine.ErrPromptTooLong):
		e := badRequest(param, "%v", err)
		e.Code = strp("context_length_exceeded")
		return e
	}
	return badRequest(param, "%v", err)
}

// healOr is a request's token_healing, or def when it does not say.
func healOr(req *bool, def bool) bool {
	if req != nil {
		return *req
	}
	return def
}
