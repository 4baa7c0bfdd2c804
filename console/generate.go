package console

// One-shot generation: a request run to its end, streamed as text or
// printed as one JSON object.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"nanoserve/engine"
	"nanoserve/sample"
)

// GenerateOptions say how Generate shows a completion.
type GenerateOptions struct {
	JSON    bool // one JSON object (ids, text, finish_reason, timings) instead of streamed text
	Verbose bool // timings to stderr after streaming
	// Cut, if set, is given each piece of output and returns the part to
	// show and whether the output ends there (the rest is cancelled; in
	// JSON the text is cut and the finish reason is stop).
	Cut func(piece string) (string, bool)
}

type generateJSON struct {
	PromptIDs    []int          `json:"prompt_ids"`
	IDs          []int          `json:"ids"`
	Text         string         `json:"text"`
	Healed       string         `json:"healed,omitempty"`
	FinishReason string         `json:"finish_reason"`
	Error        string         `json:"error,omitempty"`
	Seed         uint64         `json:"seed"`
	PrefillMs    float64        `json:"prefill_ms"`
	DecodeMs     float64        `json:"decode_ms"`
	TTFTMs       float64        `json:"ttft_ms"`
	PrefillTokS  float64        `json:"prefill_tok_s"`
	DecodeTokS   float64        `json:"decode_tok_s"`
	Usage        engine.Usage   `json:"usage"`
	Policy       sample.Policy  `json:"policy"`
	Logprobs     []logprobsJSON `json:"logprobs,omitempty"`
}

type logprobsJSON struct {
	ID      int              `json:"id"`
	Text    string           `json:"text"`
	Logprob float32          `json:"logprob"`
	Top     []sample.Logprob `json:"top,omitempty"`
}

// Generate runs req on eng and writes the completion to stdout (timings,
// with Verbose, to stderr). A generation that fails midway is an error
// after what it wrote.
func Generate(ctx context.Context, eng *engine.Engine, req engine.Request, o GenerateOptions, stdout, stderr io.Writer) error {
	var res *engine.Result
	var err error
	if o.JSON {
		res, err = eng.Generate(ctx, req)
		if err != nil {
			return err
		}
		out := generateJSON{PromptIDs: res.PromptIDs, IDs: res.IDs, Text: res.Text, Healed: res.Healed, FinishReason: res.FinishReason,
			Seed: res.Seed, PrefillMs: res.Timings.PrefillMs, DecodeMs: res.Timings.DecodeMs, TTFTMs: res.Timings.TTFTMs,
			PrefillTokS: res.Timings.PrefillTokS, DecodeTokS: res.Timings.DecodeTokS, Usage: res.Usage, Policy: req.Policy}
		if res.IDs == nil {
			out.IDs = []int{}
		}
		if o.Cut != nil {
			if text, done := o.Cut(res.Text); done {
				out.Text, out.FinishReason = text, engine.FinishStop // the prompt's block ended
			}
		}
		if res.Err != nil {
			out.Error = res.Err.Error()
		}
		for _, t := range res.Logprobs {
			out.Logprobs = append(out.Logprobs, logprobsJSON{ID: t.ID, Text: t.Text, Logprob: t.Logprob, Top: t.Top})
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		// Unbuffered: each token's text appears as it lands.
		for tok, err := range eng.GenerateStream(ctx, req, &res) {
			if err != nil {
				return err
			}
			text, done := tok.Text, false
			if o.Cut != nil {
				text, done = o.Cut(text)
			}
			io.WriteString(stdout, text)
			if done {
				break // the block the prompt opened is closed (cancels the rest)
			}
		}
		io.WriteString(stdout, "\n")
		if o.Verbose {
			PrintTimings(stderr, res)
		}
	}
	if res.Err != nil {
		return fmt.Errorf("generation failed after %d tokens: %w", len(res.IDs), res.Err)
	}
	return nil
}

// PrintTimings writes one line of res's finish reason, token counts and
// prefill/decode rates.
func PrintTimings(w io.Writer, res *engine.Result) {
	fmt.Fprintf(w, "[%s] prompt %d tokens (%d cached): prefill %.1f ms (%.1f tok/s), ttft %.1f ms; %d tokens: decode %.1f tok/s\n",
		res.FinishReason, res.Usage.PromptTokens, res.Usage.CachedTokens, res.Timings.PrefillMs, res.Timings.PrefillTokS,
		res.Timings.TTFTMs, res.Usage.CompletionTokens, res.Timings.DecodeTokS)
}

// Constrain attaches a JSON Schema (schemaPath) or GBNF grammar
// (grammarPath) file's constraint to req (the two exclude each other;
// token healing is turned off under one). Both empty: nothing to do.
func Constrain(eng *engine.Engine, req *engine.Request, schemaPath, grammarPath string) error {
	if schemaPath == "" && grammarPath == "" {
		return nil
	}
	if schemaPath != "" && grammarPath != "" {
		return errors.New("--json-schema and --grammar exclude each other")
	}
	if req.Policy.IgnoreEOS {
		return errors.New("--ignore-eos cannot be combined with --json-schema or --grammar: a constrained output ends where the grammar does")
	}
	kind, path := engine.ConstraintJSONSchema, schemaPath
	if grammarPath != "" {
		kind, path = engine.ConstraintGBNF, grammarPath
	}
	spec, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	c, err := eng.Constraint(context.Background(), kind, string(spec))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	budget := req.Policy.MaxTokens
	if budget <= 0 {
		budget = eng.CtxSize()
	}
	if _, err := engine.GrammarProcessor(c, budget, req.Policy.StopTokenIDs); err != nil {
		return err
	}
	req.TokenHealing = false
	req.Processors = func() []engine.LogitsProcessor {
		p, _ := engine.GrammarProcessor(c, budget, req.Policy.StopTokenIDs)
		return []engine.LogitsProcessor{p}
	}
	return nil
}
