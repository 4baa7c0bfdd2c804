package server

// Structured output and the fields we do not implement.
//
// A request may carry one constraint, spelt in any of the dialects
// clients use: OpenAI's response_format (json_object, json_schema),
// llama.cpp's grammar and json_schema, vLLM's guided_json, guided_regex,
// guided_choice, guided_grammar and structured_outputs {json, regex,
// choice, grammar}. It is compiled against the model's vocabulary (cached
// by content hash in the engine) and run as a logits processor, so the
// output always parses: a schema keyword or grammar construct we cannot
// enforce is a 400 naming it, never a silently unconstrained 200.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"nanoserve/engine"
	"nanoserve/grammar"
)

// constraintParams are the structured-output fields of both endpoints.
type constraintParams struct {
	ResponseFormat    *responseFormat `json:"response_format"`
	Grammar           *string         `json:"grammar"`
	JSONSchema        json.RawMessage `json:"json_schema"`
	GuidedJSON        json.RawMessage `json:"guided_json"`
	GuidedRegex       *string         `json:"guided_regex"`
	GuidedChoice      []string        `json:"guided_choice"`
	GuidedGrammar     *string         `json:"guided_grammar"`
	StructuredOutputs *struct {
		JSON    json.RawMessage `json:"json"`
		Regex   *string         `json:"regex"`
		Choice  []string        `json:"choice"`
		Grammar *string         `json:"grammar"`
	} `json:"structured_outputs"`
	MinTokens *int `json:"min_tokens"`
	// ctx is the request's context: a compile stops when it is done
	// (nil: never).
	ctx context.Context
	// toolCall is the constraint a forced tool call must match
	// (tool_choice "required" or a named function; see tools.go).
	toolCall *constraintSpec
}

// responseFormat is OpenAI's response_format, with llama-server's schema
// beside type json_object.
type responseFormat struct {
	Type       string          `json:"type"`
	Schema     json.RawMessage `json:"schema"` // llama-server: the schema of a json_object
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

type constraintSpec struct {
	field, kind, spec string
}

// schemaText accepts a schema given as a JSON object or as a string
// holding one (vLLM accepts both).
func schemaText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// constraint returns the request's one constraint, or nil.
func (p *constraintParams) constraint() (*constraintSpec, *apiError) {
	var found []constraintSpec
	add := func(field, kind, spec string) { found = append(found, constraintSpec{field, kind, spec}) }
	if p.toolCall != nil {
		found = append(found, *p.toolCall)
	}
	if rf := p.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			if !isNull(rf.Schema) {
				// llama-server's json_object with a schema: that schema.
				add("response_format", engine.ConstraintJSONSchema, schemaText(rf.Schema))
				break
			}
			add("response_format", engine.ConstraintJSONObject, "")
		case "json_schema":
			if rf.JSONSchema == nil || isNull(rf.JSONSchema.Schema) {
				return nil, badRequest("response_format", "response_format json_schema needs json_schema.schema")
			}
			add("response_format", engine.ConstraintJSONSchema, schemaText(rf.JSONSchema.Schema))
		default:
			return nil, badRequest("response_format", "response_format type %q is not supported (text, json_object, json_schema are)", rf.Type)
		}
	}
	if p.Grammar != nil && *p.Grammar != "" {
		add("grammar", engine.ConstraintGBNF, *p.Grammar)
	}
	if !isNull(p.JSONSchema) {
		add("json_schema", engine.ConstraintJSONSchema, schemaText(p.JSONSchema))
	}
	// vLLM's four kinds, as guided_* fields and as structured_outputs.*.
	vllm := func(prefix string, schema json.RawMessage, regex *string, choice []string, gbnf *string) {
		if !isNull(schema) {
			add(prefix+"json", engine.ConstraintJSONSchema, schemaText(schema))
		}
		if regex != nil {
			add(prefix+"regex", engine.ConstraintRegex, *regex)
		}
		if choice != nil {
			b, _ := json.Marshal(choice)
			add(prefix+"choice", engine.ConstraintChoice, string(b))
		}
		if gbnf != nil {
			add(prefix+"grammar", engine.ConstraintGBNF, *gbnf)
		}
	}
	vllm("guided_", p.GuidedJSON, p.GuidedRegex, p.GuidedChoice, p.GuidedGrammar)
	if so := p.StructuredOutputs; so != nil {
		vllm("structured_outputs.", so.JSON, so.Regex, so.Choice, so.Grammar)
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &found[0], nil
	}
	return nil, badRequest(found[1].field, "only one output constraint per request: both %s and %s are set", found[0].field, found[1].field)
}

// applyConstraints compiles the request's constraint and min_tokens into
// the job's processors.
func (s *Server) applyConstraints(p *constraintParams, j *job) *apiError {
	cs, e := p.constraint()
	if e != nil {
		return e
	}
	minTok := 0
	if p.MinTokens != nil {
		if *p.MinTokens < 0 {
			return badRequest("min_tokens", "min_tokens must be >= 0, got %d", *p.MinTokens)
		}
		if mt := j.reqs[0].Policy.MaxTokens; mt > 0 && *p.MinTokens > mt {
			return badRequest("min_tokens", "min_tokens %d exceeds max_tokens %d", *p.MinTokens, mt)
		}
		minTok = *p.MinTokens
	}
	pol := j.reqs[0].Policy // every prompt of the job shares the policy
	var c *grammar.Constraint
	budget := pol.MaxTokens
	if cs != nil {
		switch {
		case j.reqs[0].TokenHealing:
			return badRequest("token_healing", "token_healing cannot be combined with %s", cs.field)
		case pol.IgnoreEOS:
			return badRequest("ignore_eos", "ignore_eos cannot be combined with %s: a constrained output ends where the grammar does", cs.field)
		case minTok > 0:
			return badRequest("min_tokens", "min_tokens cannot be combined with %s", cs.field)
		}
		ctx := p.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		var err error
		if c, err = s.eng.Constraint(ctx, cs.kind, cs.spec); err != nil {
			if e := cutError(ctx); e != nil {
				return e
			}
			msg := strings.TrimPrefix(err.Error(), "grammar: ")
			e := badRequest(cs.field, "%s cannot be enforced: %s", cs.field, msg)
			var le *grammar.LimitError
			if errors.As(err, &le) {
				e.Message += fmt.Sprintf(" (the server's --grammar-max-%s raises it)", le.Limit)
				e.Code = strp("grammar_limit_exceeded")
			}
			return e
		}
		if budget <= 0 {
			budget = s.eng.CtxSize()
		}
		if need := c.MinTokens(); need > budget {
			return badRequest("max_tokens", "max_tokens %d is below what the shortest output valid under %s may need (%d tokens)", budget, cs.field, need)
		}
	}
	gated := j.gated(c != nil) // a reasoning model thinks first (reasoning.go)
	if c == nil && minTok == 0 && !gated {
		return nil
	}
	if gated && c != nil {
		j.openReasoning()
	}
	stop := slices.Clone(pol.StopTokenIDs)
	eng := s.eng
	for i := range j.reqs {
		// The grammar's token budget is the output's: max_tokens capped by
		// the context the prompt leaves (known once the engine has
		// tokenized it), so the mask ends the output before the context
		// does; an output that cannot fit is refused before any work.
		budget := pol.MaxTokens
		if c != nil {
			field := cs.field
			j.reqs[i].Budget = func(left int) error {
				budget = left
				if need := c.MinTokens(); need > left {
					if pol.MaxTokens > 0 && left == pol.MaxTokens {
						return &engine.RequestError{Field: "max_tokens", Msg: fmt.Sprintf("max_tokens %d is below what the shortest output valid under %s may need (%d tokens)", left, field, need)}
					}
					return &engine.RequestError{Field: "max_tokens", Msg: fmt.Sprintf("the context left after the prompt (%d tokens) is below what the shortest output valid under %s may need (%d tokens)", left, field, need)}
				}
				return nil
			}
		}
		j.reqs[i].Processors = func() []engine.LogitsProcessor {
			var ps []engine.LogitsProcessor
			if minTok > 0 {
				ps = append(ps, eng.MinTokensProcessor(minTok, stop))
			}
			if c != nil || gated {
				ps = append(ps, j.answerProcessor(eng, c, budget, stop))
			}
			return ps
		}
	}
	return nil
}

// failing is a processor that ends its sequence with an error.
type failing struct{ err error }

func (f failing) Process([]float32) error { return f.err }
func (f failing) Accept(int) error        { return f.err }

// unsupportedFields are semantic request fields that nanoserve does not
// implement, each with the values that mean "off" (accepted). Any other
// value is a 400 naming the field: silently ignoring it would change what
// the client gets. README lists them; unsupportedParams captures them.
var unsupportedFields = map[string][]string{
	"use_beam_search":               {"false"},
	"length_penalty":                {"1", "1.0"},
	"early_stopping":                {"false"},
	"include_stop_str_in_output":    {"false"},
	"skip_special_tokens":           {"true"},
	"spaces_between_special_tokens": {"true"},
	"prompt_logprobs":               {"0"},
	"truncate_prompt_tokens":        {},
	"guided_whitespace_pattern":     {},
	"guided_decoding_backend":       nil, // any: a backend choice changes no semantics
	"typical_p":                     {"1", "1.0"},
	"tfs_z":                         {"1", "1.0"},
	"mirostat":                      {"0"},
	"n_probs":                       {"0"},
	"dynatemp_range":                {"0", "0.0"},
	"penalize_nl":                   {"false"},
	"prediction":                    {},
	"audio":                         {},
	"modalities":                    {`["text"]`},
	"web_search_options":            {},
	"logit_bias_type":               {},
}
