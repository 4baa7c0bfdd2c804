package tokenizer

import "slices"

// Fill-in-the-middle (FIM) tokens.
//
// A FIM model completes the gap between a prefix and a suffix: it reads
// the pieces behind control tokens (prefix, suffix, then "middle" for the
// text to write) and ends the middle with an end-of-generation token.
// Repository-level models also mark a repository name and file boundaries
// (other files of the project as context). The ids come from llama.cpp's
// tokenizer.ggml.fim_*_token_id keys when the vocabulary has them;
// otherwise, as llama.cpp does, from the token text of the well-known
// spellings (Qwen2.5-Coder's "<|fim_prefix|>", CodeLlama's "▁<PRE>", ...).
// Like llama.cpp, a token found this way is treated as a control token
// whatever its recorded type, so user text spelling it can never produce
// it (Encode without parseSpecial), and the pad, repository and file
// separator tokens end generation (a model that writes them has left the
// middle).

// FIMTokens are a vocabulary's fill-in-the-middle token ids.
type FIMTokens struct {
	Pre, Suf, Mid OptID // prefix, suffix and middle markers
	Pad, Rep, Sep OptID // padding, repository name, file separator
	// SuffixFirst says the model was trained to read FIM prompts suffix
	// first (SPM: suffix, prefix, middle — llama-server's --spm-infill
	// layout), so servers lay prompts out that way by default.
	SuffixFirst bool
}

// OK reports whether the vocabulary can fill in the middle: it has the
// prefix, suffix and middle tokens.
func (f FIMTokens) OK() bool { return f.Pre.OK && f.Suf.OK && f.Mid.OK }

// FIM names of the tokens nanoserve's trainer reserves (Qwen2.5-Coder's
// spelling, which llama.cpp recognises by text).
const (
	FIMPrefix   = "<|fim_prefix|>"
	FIMSuffix   = "<|fim_suffix|>"
	FIMMiddle   = "<|fim_middle|>"
	FIMPad      = "<|fim_pad|>"
	FIMRepoName = "<|repo_name|>"
	FIMFileSep  = "<|file_sep|>"
)

// fimSpellings are the token texts that name each FIM token when the
// vocabulary's metadata does not (llama.cpp's list for these models).
var fimSpellings = [6][]string{
	{FIMPrefix, "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"},
	{FIMSuffix, "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"},
	{FIMMiddle, "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"},
	{FIMPad, "<fim-pad>", "<fim_pad>", "<PAD>"},
	{"<|fim_repo|>", FIMRepoName, "<fim-repo>", "<REPO>", "<reponame>"},
	{FIMFileSep},
}

func (f *FIMTokens) slots() [6]*OptID {
	return [6]*OptID{&f.Pre, &f.Suf, &f.Mid, &f.Pad, &f.Rep, &f.Sep}
}

// resolveFIM fills v.FIM's missing ids from token text, and returns the
// token types with every FIM token made a control token (a copy when that
// changes one) and the ids that end generation (pad, repository, file
// separator).
func resolveFIM(v *Vocab, types []TokenType) ([]TokenType, []int) {
	slots := v.FIM.slots()
	for i, o := range slots {
		if o.OK {
			continue
		}
		for id, s := range v.Tokens {
			if slices.Contains(fimSpellings[i], s) {
				*o = Some(id)
				break
			}
		}
	}
	copied := false
	var eog []int
	for i, o := range slots {
		if !o.OK || o.ID < 0 || o.ID >= len(types) {
			continue
		}
		if types[o.ID] != TypeControl {
			if !copied {
				types, copied = slices.Clone(types), true
			}
			types[o.ID] = TypeControl
		}
		if i >= 3 {
			eog = append(eog, o.ID)
		}
	}
	return types, eog
}

// FIM returns the vocabulary's fill-in-the-middle tokens.
func (t *Tokenizer) FIM() FIMTokens { return t.vocab.FIM }
