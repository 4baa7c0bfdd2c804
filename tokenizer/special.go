package tokenizer

import "slices"

// LlamaCppTypeFixes applies to v the fixes of token types by token text
// that llama.cpp makes when it loads a GGUF vocabulary
// (llama_vocab::impl::load); GGUF loaders call it, so that a GGUF file
// tokenizes as llama.cpp tokenizes it. Converters often record a model's
// end-of-generation markers as ordinary or user-defined tokens; llama.cpp
// recognises them by text (eogNames), treats them as control tokens
// whatever their recorded type — so user text spelling phi-3's "</s>" stays
// text unless special tokens are parsed — and makes them end generation.
// A few models need the opposite:
//
//   - gpt-oss's harmony format writes <|channel|>, <|message|>, <|start|> and
//     <|constrain|> in visible output: they become user-defined (always
//     matched, always rendered);
//   - harmony (<|return|>, <|call|>) and Solar-Open (<|calls|>, <|flush|>)
//     vocabularies use <|end|> between messages, not to stop: it becomes
//     user-defined and does not end generation;
//   - Gemma 4 (which has <|tool_response>) writes </s> as text: it becomes a
//     normal token and does not end generation.
//
// Tokenizer files from Hugging Face are not changed this way: there a
// normal token spelt "</s>" (Qwen3 has one) is text.
func LlamaCppTypeFixes(v *Vocab) {
	types := v.Types
	if types == nil {
		types = defaultTypes(v.Tokens)
	}
	// The tokens made control end generation through eogNames (FromVocab).
	types, changed, notEOG := reclassifyByName(v.Tokens, types)
	if changed {
		v.Types = types
	}
	v.EOG = slices.DeleteFunc(v.EOG, func(id int) bool { return slices.Contains(notEOG, id) })
}

// eogNames are the texts llama.cpp makes end-of-generation control tokens
// (in any vocabulary, a control token with one of these texts ends
// generation).
var eogNames = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
	"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
	"_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
	"<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
}

// harmonyShown are gpt-oss's format tokens that llama.cpp always renders.
var harmonyShown = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}

// reclassifyByName returns types with llama.cpp's fixes applied (a copy,
// copied, if any changes) and the ids that must not end generation even if
// the vocabulary's metadata says so.
func reclassifyByName(tokens []string, types []TokenType) (out []TokenType, copied bool, notEOG []int) {
	out = types
	set := func(id int, ty TokenType) {
		if out[id] == ty {
			return
		}
		if !copied {
			out, copied = slices.Clone(out), true
		}
		out[id] = ty
	}
	named := map[string]int{}
	for id, s := range tokens {
		if slices.Contains(eogNames, s) {
			named[s] = id
			set(id, TypeControl)
		}
		if slices.Contains(harmonyShown, s) {
			set(id, TypeUserDefined)
		}
	}
	has := func(s string) bool { _, ok := named[s]; return ok }
	drop := func(s string, ty TokenType) {
		id := named[s]
		set(id, ty)
		notEOG = append(notEOG, id)
	}
	call := has("<|call|>") || has("<|calls|>")
	if has("<|end|>") && call && (has("<|return|>") || has("<|flush|>")) {
		drop("<|end|>", TypeUserDefined)
	}
	if has("<|tool_response>") && has("</s>") {
		drop("</s>", TypeNormal)
	}
	return out, copied, notEOG
}
