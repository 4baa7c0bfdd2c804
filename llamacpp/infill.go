package llamacpp

import (
	"errors"
	"fmt"
	"strings"

	"nanoserve/tokenizer"
)

// Infill prompts: the token layout llama-server's /infill builds for a
// fill-in-the-middle model (format_prompt_infill in tools/server), which
// editor plugins (llama.vim, llama.vscode) and our trainer both rely on.
//
// With the repository-level pattern (Qwen2.5-Coder's), the prompt is
//
//	[REP] "myproject\n"                       (if the vocabulary has REP)
//	[SEP] filename_i "\n" text_i              (each extra chunk, if it has SEP;
//	                                           else "\n\n--- snippet ---\n\n" text_i)
//	[SEP] "filename\n"                        (if it has SEP)
//	[BOS]                                     (if the model adds BOS)
//	PSM: [PRE] prefix prompt [SUF] suffix [MID]
//	SPM: [SUF] suffix [PRE] prefix prompt [MID]   (--spm-infill)
//
// and the model writes the middle, then an end-of-generation token. The
// extra context comes first and, when the budget is short, loses its
// beginning; "myproject" and "filename" are the literal placeholders
// llama-server sends (it knows neither name).
//
// Budget (llama-server's, with n_batch, n_predict, n_ctx): the prefix keeps
// its last min(len, 3·(n_batch/4)) tokens, the suffix its first
// min(len, max(0, n_batch/4 − (2 + len(prompt)))) tokens — prefix:suffix is
// 3:1 of one batch — and the extra context its last
// min(len, max(0, n_ctx − n_batch − 2·n_predict)) tokens.

// InfillRepo and InfillFile are the placeholder repository and current-file
// names of the repository-level layout.
const (
	InfillRepo = "myproject"
	InfillFile = "filename"
)

// infillSnippet separates extra chunks when the vocabulary has no file
// separator token.
const infillSnippet = "\n\n--- snippet ---\n\n"

// ErrNoFIM is returned (wrapped, naming the missing tokens) for a model
// whose vocabulary cannot fill in the middle.
var ErrNoFIM = errors.New("the model has no fill-in-the-middle tokens")

// InfillChunk is one extra file of context (llama-server's input_extra).
type InfillChunk struct {
	Filename string // "" : "tmp", as llama-server
	Text     string
}

// InfillInput is what an infill prompt is made of. Text is tokenized with
// special-token parsing off, so it can never spell a control token.
type InfillInput struct {
	Prefix, Suffix string
	Extra          []InfillChunk
	Prompt         []int // tokens that start the middle (after the prefix)
}

// InfillBudget is llama-server's n_batch, n_predict and n_ctx. Batch ≤ 0
// means no limit: every token of every piece is kept (the trainer's
// layout).
type InfillBudget struct {
	Batch, Predict, Ctx int
}

// CheckFIM returns nil if tk can fill in the middle, else an error
// wrapping ErrNoFIM that names the missing tokens.
func CheckFIM(tk *tokenizer.Tokenizer) error {
	f := tk.FIM()
	var miss []string
	for _, m := range []struct {
		name string
		ok   bool
	}{{"prefix", f.Pre.OK}, {"suffix", f.Suf.OK}, {"middle", f.Mid.OK}} {
		if !m.ok {
			miss = append(miss, m.name)
		}
	}
	if len(miss) > 0 {
		return fmt.Errorf("%w (no %s token)", ErrNoFIM, strings.Join(miss, ", "))
	}
	return nil
}

// InfillPrompt returns the token ids of an infill prompt (see above); spm
// puts the suffix first.
func InfillPrompt(tk *tokenizer.Tokenizer, in InfillInput, b InfillBudget, spm bool) ([]int, error) {
	if err := CheckFIM(tk); err != nil {
		return nil, err
	}
	f := tk.FIM()
	enc := func(s string) []int { return tk.Encode(s, false) }
	prefix, suffix := enc(in.Prefix), enc(in.Suffix)

	var extra []int // (extra tokens)
	if f.Rep.OK {
		extra = append(extra, f.Rep.ID)
		extra = append(extra, enc(InfillRepo+"\n")...)
	}
	for _, c := range in.Extra {
		name := c.Filename
		if name == "" {
			name = "tmp"
		}
		if f.Sep.OK {
			extra = append(extra, f.Sep.ID)
			extra = append(extra, enc(name+"\n")...)
		} else {
			extra = append(extra, enc(infillSnippet)...)
		}
		extra = append(extra, enc(c.Text)...)
	}
	if f.Sep.OK {
		extra = append(extra, f.Sep.ID)
		extra = append(extra, enc(InfillFile+"\n")...)
	}

	if b.Batch > 0 {
		nPre := min(len(prefix), 3*(b.Batch/4))
		nSuf := min(len(suffix), max(0, b.Batch/4-(2+len(in.Prompt))))
		nExtra := min(len(extra), max(0, b.Ctx-b.Batch-2*b.Predict))
		prefix = prefix[len(prefix)-nPre:]
		suffix = suffix[:nSuf]
		extra = extra[len(extra)-nExtra:]
	}

	pre := append([]int{f.Pre.ID}, prefix...)
	pre = append(pre, in.Prompt...)
	suf := append([]int{f.Suf.ID}, suffix...)
	first, second := pre, suf
	if spm {
		first, second = suf, pre
	}
	out := make([]int, 0, len(extra)+len(first)+len(second)+2)
	out = append(out, extra...)
	if bos, ok := tk.BOS(); ok && tk.AddBOS() {
		out = append(out, bos)
	}
	out = append(out, first...)
	out = append(out, second...)
	return append(out, f.Mid.ID), nil
}
