package engine

// Fill in the middle: the one path that builds and tokenizes a FIM prompt
// (llama-server's /infill layout and budget, llamacpp.InfillPrompt), so an
// API builds a FIM request as it builds any other: text in, checked token
// ids out.

import (
	"fmt"

	"nanoserve/llamacpp"
)

// FIMChunk is one extra file of context (llama-server's input_extra).
type FIMChunk = llamacpp.InfillChunk

// ErrNoFIM is wrapped by the error for a model whose vocabulary cannot fill
// in the middle (it names the missing tokens).
var ErrNoFIM = llamacpp.ErrNoFIM

// FIM is a fill-in-the-middle prompt. All text is tokenized with
// special-token parsing off, so no request can spell a FIM token.
type FIM struct {
	Prefix, Suffix string
	Extra          []FIMChunk
	Prompt         string // text that starts the middle, after the prefix
	// Predict bounds the middle (≤ 0: none); Batch is llama-server's
	// n_batch (≤ 0: 2048). With the context they set how the prefix,
	// suffix and extra context share the prompt.
	Predict, Batch int
	// SuffixFirst asks for the SPM layout (suffix first; llama-server's
	// --spm-infill); a model trained suffix first is always prompted so.
	SuffixFirst bool
}

// CheckFIM returns nil if the model can fill in the middle, else an error
// wrapping ErrNoFIM that names the missing tokens.
func (e *Engine) CheckFIM() error { return llamacpp.CheckFIM(e.tok) }

// SuffixFirst reports whether FIM prompts are laid out suffix first: spm
// asked for it, or the model was trained that way.
func (e *Engine) SuffixFirst(spm bool) bool { return llamacpp.SuffixFirst(e.tok, spm) }

// EncodeFIM builds and tokenizes a FIM prompt with llama-server's budget:
// n_batch is capped at the context minus room for the middle
// (min(Predict, ctx/2); ctx/2 without a bound) so the middle always has
// positions; the extra context gets ctx − n_batch − 2·n_predict (an
// unbounded Predict counting as half the room plus one, so the extra
// context never takes the middle's room either); the prefix keeps its end,
// the suffix its start, the extra context its end. As Encode does for
// every other prompt, text that must be kept whole (Prompt) is refused
// before tokenizing when its bytes cannot fit the context
// (ErrPromptTooLong); the prefix, suffix and extra context are cut to the
// budget instead. The prompt ends with the middle token, a control token,
// so token healing never backs into it.
func (e *Engine) EncodeFIM(f FIM) ([]int, error) {
	if err := e.CheckFIM(); err != nil {
		return nil, err
	}
	if err := e.tok.CheckPromptBytes(f.Prompt, e.ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPromptTooLong, err)
	}
	ctx := e.ctx
	np := max(f.Predict, 0)
	room := ctx / 2
	if np > 0 {
		room = min(np, room)
	}
	// llama-server's n_batch, within the context: the FIM part can be one
	// token longer than the batch, BOS one more, and the engine prefills a
	// prompt longer than one step in chunks, so the step budget
	// (MaxBatchTokens) does not bound it.
	b := f.Batch
	if b <= 0 {
		b = 2048
	}
	batch := max(min(b, ctx-room-2), 4)
	// The FIM part takes at most n_batch+2 tokens, so the middle keeps its
	// room when 2·n_predict ≥ room+2: true of any n_predict ≥ 2, and
	// without a bound (where llama-server's budget would fill the context
	// and leave the middle no position) n_predict counts as half the room
	// plus one.
	pred := np
	if np <= 0 {
		pred = (room+1)/2 + 1
	}
	in := llamacpp.InfillInput{Prefix: f.Prefix, Suffix: f.Suffix, Extra: f.Extra, Prompt: e.tok.Encode(f.Prompt, false)}
	return llamacpp.InfillPrompt(e.tok, in, llamacpp.InfillBudget{Batch: batch, Predict: pred, Ctx: ctx}, e.SuffixFirst(f.SuffixFirst))
}
