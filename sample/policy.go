package sample

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Version is the version of Policy's serialised (JSON) form. A Policy carries it
// in its "version" field; Validate accepts 0 (unversioned, read as the current
// version) or Version, so a stored policy written by a newer, incompatible
// build is rejected instead of being misread.
const Version = 1

// MaxLogprobs is the largest number of alternatives Policy.Logprobs may ask for
// (the OpenAI API's limit).
const MaxLogprobs = 20

// Policy is the complete sampling policy of one request. It is a plain value:
// validate it with Validate, serialise it with encoding/json (the names follow
// the OpenAI / vLLM request fields), and store it beside the model so a run can
// be reproduced. A zero Policy is not valid (top_p 0, repetition_penalty 0):
// start from Defaults or FromGenerationConfig and override fields, e.g. by
// json.Unmarshal into that value — absent JSON keys keep their value.
//
// Fields that bear on the draw (see Sampler) are applied in this order:
// logit_bias → repetition_penalty → frequency_penalty → presence_penalty →
// temperature → top_k → top_p → min_p → draw. The remaining fields (stop,
// stop_token_ids, max_tokens, ignore_eos) tell the engine when to stop.
type Policy struct {
	// Version of this serialised form: 0 or Version.
	Version int `json:"version,omitempty"`

	// Temperature divides the logits before the softmax. 0 selects greedy
	// decoding: the arg-max of the (biased, penalised) logits, first maximum
	// wins, and the random generator is not touched. Must be finite and >= 0.
	Temperature float32 `json:"temperature"`
	// TopK keeps the K most likely tokens; 0 disables it (as does K >= vocab).
	TopK int `json:"top_k"`
	// TopP keeps the smallest most-likely-first prefix whose probability
	// reaches TopP (nucleus sampling); in (0, 1], 1 disables it.
	TopP float32 `json:"top_p"`
	// MinP keeps tokens whose probability is at least MinP times that of the
	// most likely token; in [0, 1], 0 disables it.
	MinP float32 `json:"min_p"`

	// RepetitionPenalty (> 0; 1 = off) is applied once to every distinct token
	// in the last RepeatLastN tokens of prompt + output: positive logits are
	// divided by it, negative ones multiplied (CTRL / Hugging Face / llama.cpp).
	RepetitionPenalty float32 `json:"repetition_penalty"`
	// RepeatLastN is the repetition penalty's window over prompt + output:
	// n > 0 = the last n tokens; 0 or -1 = all of them (0 is the Hugging Face /
	// vLLM behaviour; -1 is accepted for llama.cpp's "whole context").
	RepeatLastN int `json:"repeat_last_n"`
	// PresencePenalty and FrequencyPenalty (each in [-2, 2]) act on the output
	// tokens only (not the prompt), as in the OpenAI API:
	// logit -= frequency_penalty·count, then logit -= presence_penalty if count > 0.
	PresencePenalty  float32 `json:"presence_penalty"`
	FrequencyPenalty float32 `json:"frequency_penalty"`
	// LogitBias adds a value in [-100, 100] to a token's logit before any
	// penalty (JSON object keys are token ids as strings, as in the OpenAI API).
	LogitBias map[int]float32 `json:"logit_bias,omitempty"`

	// Seed of the request's random generator. nil: New picks a random seed,
	// which Sampler.Seed and Sampler.Policy report so it can be recorded.
	Seed *uint64 `json:"seed,omitempty"`

	// Stop strings end generation when they appear in the decoded output,
	// also across token boundaries; the stop string and anything after it are
	// not emitted (see StopMatcher). JSON accepts a string or a list.
	Stop StopStrings `json:"stop,omitempty"`
	// StopTokenIDs end generation when sampled (the token is not emitted as
	// text), independently of IgnoreEOS.
	StopTokenIDs []int `json:"stop_token_ids,omitempty"`
	// MaxTokens bounds the number of generated tokens; 0 = no bound other than
	// the context window.
	MaxTokens int `json:"max_tokens"`
	// IgnoreEOS keeps generating after an end-of-generation token (which is
	// then sampled and emitted like any other token), as vLLM's ignore_eos.
	IgnoreEOS bool `json:"ignore_eos"`

	// Logprobs asks for log-probabilities of the model's raw distribution
	// (log-softmax of the unmodified logits, before bias, penalties and
	// temperature): nil = none (saves a softmax over the vocabulary);
	// 0 = the chosen token's only; n in 1..MaxLogprobs = the chosen token's
	// plus the n most likely tokens.
	Logprobs *int `json:"logprobs,omitempty"`
}

// StopStrings is a list of stop strings. In JSON it is a list, and a bare
// string is read as a list of one (the OpenAI API allows both).
type StopStrings []string

// UnmarshalJSON accepts null, a string, or a list of strings.
func (s *StopStrings) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return fmt.Errorf("sample: stop: %w", err)
		}
		*s = StopStrings{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("sample: stop must be a string or a list of strings")
	}
	*s = list
	return nil
}

// Defaults returns the neutral policy of the OpenAI and vLLM APIs: temperature
// 1 and every filter and penalty off (pure sampling from the model's softmax),
// no token limit, no log-probabilities, a random seed.
func Defaults() Policy {
	return Policy{
		Version:           Version,
		Temperature:       1,
		TopK:              0,
		TopP:              1,
		MinP:              0,
		RepetitionPenalty: 1,
		RepeatLastN:       0,
	}
}

// Greedy returns Defaults with temperature 0: deterministic arg-max decoding.
func Greedy() Policy {
	p := Defaults()
	p.Temperature = 0
	return p
}

// ErrInvalidPolicy is matched (errors.Is) by every validation error.
var ErrInvalidPolicy = errors.New("sample: invalid policy")

// FieldError is a validation error that names the offending field by its JSON
// name, e.g. "sample: top_p must be in (0, 1], got 1.5".
type FieldError struct {
	Source string // where the value came from, e.g. "generation_config.json"; may be empty
	Field  string // JSON field name, with an index or key where useful: "stop[2]"
	Msg    string
}

func (e *FieldError) Error() string {
	if e.Source != "" {
		return "sample: " + e.Source + ": " + e.Field + " " + e.Msg
	}
	return "sample: " + e.Field + " " + e.Msg
}

// Is reports whether target is ErrInvalidPolicy.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidPolicy }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

func finite32(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// Validate checks every field and returns a *FieldError (matching
// ErrInvalidPolicy) for the first invalid one, in field order. Token ids are
// checked against the vocabulary by New, which knows its size.
func (p *Policy) Validate() error {
	switch {
	case p.Version != 0 && p.Version != Version:
		return fieldErr("version", "%d is not supported (this build reads version %d)", p.Version, Version)
	case !finite32(p.Temperature) || p.Temperature < 0:
		return fieldErr("temperature", "must be a finite number >= 0, got %v", p.Temperature)
	case p.TopK < 0:
		return fieldErr("top_k", "must be >= 0 (0 disables it), got %d", p.TopK)
	case !(p.TopP > 0 && p.TopP <= 1): // also NaN
		return fieldErr("top_p", "must be in (0, 1], got %v", p.TopP)
	case !(p.MinP >= 0 && p.MinP <= 1):
		return fieldErr("min_p", "must be in [0, 1], got %v", p.MinP)
	case !finite32(p.RepetitionPenalty) || p.RepetitionPenalty <= 0:
		return fieldErr("repetition_penalty", "must be a finite number > 0 (1 disables it), got %v", p.RepetitionPenalty)
	case p.RepeatLastN < -1:
		return fieldErr("repeat_last_n", "must be >= -1 (0 or -1: the whole history), got %d", p.RepeatLastN)
	case !(p.PresencePenalty >= -2 && p.PresencePenalty <= 2):
		return fieldErr("presence_penalty", "must be in [-2, 2], got %v", p.PresencePenalty)
	case !(p.FrequencyPenalty >= -2 && p.FrequencyPenalty <= 2):
		return fieldErr("frequency_penalty", "must be in [-2, 2], got %v", p.FrequencyPenalty)
	}
	if len(p.LogitBias) > 0 {
		ids := make([]int, 0, len(p.LogitBias))
		for id := range p.LogitBias {
			ids = append(ids, id)
		}
		slices.Sort(ids) // report the lowest bad id, deterministically
		for _, id := range ids {
			v := p.LogitBias[id]
			if id < 0 {
				return fieldErr("logit_bias["+strconv.Itoa(id)+"]", "is not a token id (must be >= 0)")
			}
			if !(v >= -100 && v <= 100) {
				return fieldErr("logit_bias["+strconv.Itoa(id)+"]", "must be in [-100, 100], got %v", v)
			}
		}
	}
	for i, s := range p.Stop {
		if s == "" {
			return fieldErr("stop["+strconv.Itoa(i)+"]", "is empty")
		}
	}
	for i, id := range p.StopTokenIDs {
		if id < 0 {
			return fieldErr("stop_token_ids["+strconv.Itoa(i)+"]", "must be >= 0, got %d", id)
		}
	}
	if p.MaxTokens < 0 {
		return fieldErr("max_tokens", "must be >= 0 (0: no limit), got %d", p.MaxTokens)
	}
	if p.Logprobs != nil && (*p.Logprobs < 0 || *p.Logprobs > MaxLogprobs) {
		return fieldErr("logprobs", "must be in [0, %d], got %d", MaxLogprobs, *p.Logprobs)
	}
	return nil
}

// checkVocab validates the token ids in p against a vocabulary of n tokens.
func (p *Policy) checkVocab(n int) error {
	for id := range p.LogitBias {
		if id >= n {
			return fieldErr("logit_bias["+strconv.Itoa(id)+"]", "is outside the vocabulary (%d tokens)", n)
		}
	}
	for i, id := range p.StopTokenIDs {
		if id >= n {
			return fieldErr("stop_token_ids["+strconv.Itoa(i)+"]", "= %d is outside the vocabulary (%d tokens)", id, n)
		}
	}
	return nil
}

// Parse decodes a JSON policy over base (keys absent from data keep base's
// values), rejecting unknown keys, and validates the result.
func Parse(data []byte, base Policy) (Policy, error) {
	p := base
	if base.LogitBias != nil { // do not let decoding write into base's map
		p.LogitBias = make(map[int]float32, len(base.LogitBias))
		for k, v := range base.LogitBias {
			p.LogitBias[k] = v
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("sample: policy JSON: %w", err)
	}
	if dec.More() {
		return Policy{}, errors.New("sample: policy JSON: trailing data after the object")
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// StopsOn reports whether sampling token id ends generation: id is one of
// StopTokenIDs, or eog (the caller's "id is an end-of-generation token of the
// model") holds and IgnoreEOS is off. MaxTokens and stop strings are the
// caller's to check.
func (p *Policy) StopsOn(id int, eog bool) bool {
	if eog && !p.IgnoreEOS {
		return true
	}
	return slices.Contains(p.StopTokenIDs, id)
}

// FromGenerationConfig reads a Hugging Face generation_config.json and returns
// Defaults overridden by the keys it sets (vLLM's reading of the file):
// temperature, top_k, top_p, min_p, repetition_penalty, max_new_tokens
// (→ MaxTokens), and do_sample — only an explicit "do_sample": false forces
// greedy decoding (temperature 0); an absent do_sample does not, because many
// files give sampling defaults without it.
//
// The end-of-generation ids (eos_token_id, an integer or a list) are returned
// separately as eos rather than put into StopTokenIDs: they are a property of
// the model (engines stop on their union with the tokenizer's), and IgnoreEOS
// applies to them but not to a request's stop_token_ids. Other keys are
// ignored. The result is validated.
func FromGenerationConfig(data []byte) (p Policy, eos []int, err error) {
	const src = "generation_config.json"
	var g struct {
		Temperature       *float64        `json:"temperature"`
		TopK              *int            `json:"top_k"`
		TopP              *float64        `json:"top_p"`
		MinP              *float64        `json:"min_p"`
		RepetitionPenalty *float64        `json:"repetition_penalty"`
		DoSample          *bool           `json:"do_sample"`
		MaxNewTokens      *int            `json:"max_new_tokens"`
		EOS               json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return Policy{}, nil, fmt.Errorf("sample: %s: %w", src, err)
	}
	p = Defaults()
	if g.Temperature != nil {
		p.Temperature = float32(*g.Temperature)
	}
	if g.TopK != nil {
		p.TopK = *g.TopK
	}
	if g.TopP != nil {
		p.TopP = float32(*g.TopP)
	}
	if g.MinP != nil {
		p.MinP = float32(*g.MinP)
	}
	if g.RepetitionPenalty != nil {
		p.RepetitionPenalty = float32(*g.RepetitionPenalty)
	}
	if g.DoSample != nil && !*g.DoSample {
		p.Temperature = 0
	}
	if g.MaxNewTokens != nil {
		p.MaxTokens = *g.MaxNewTokens
	}
	if err := p.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Source = src
			if fe.Field == "max_tokens" {
				fe.Field = "max_new_tokens"
			}
		}
		return Policy{}, nil, err
	}
	if e := bytes.TrimSpace(g.EOS); len(e) > 0 && !bytes.Equal(e, []byte("null")) {
		var one int
		if json.Unmarshal(e, &one) == nil {
			eos = []int{one}
		} else if json.Unmarshal(e, &eos) != nil {
			return Policy{}, nil, &FieldError{Source: src, Field: "eos_token_id", Msg: "must be an integer or a list of integers"}
		}
		for _, id := range eos {
			if id < 0 {
				return Policy{}, nil, &FieldError{Source: src, Field: "eos_token_id", Msg: fmt.Sprintf("must be >= 0, got %d", id)}
			}
		}
	}
	return p, eos, nil
}
