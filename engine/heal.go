package engine

import (
	"math"
	"unicode/utf8"

	"nanoserve/tokenizer"
)

// healing is a request's token-healing plan (see "Token healing" in the
// package comment): the prompt's last token was removed, and the first
// generated token must be one of allowed, every one of whose texts starts
// with text.
type healing struct {
	text    string // the removed token's text (its decoded bytes, valid UTF-8)
	removed int    // its id
	allowed []int  // ascending ids whose text starts with text (removed included)
}

// planHealing decides whether prompt's last token can be healed and
// returns the plan, or nil. It heals only when there is something to gain
// and something left to prefill: the prompt has at least two tokens; the
// last one is an ordinary token (never BOS or another control, byte,
// unknown or user-defined token) whose text is valid UTF-8; and some token
// of the model's vocabulary has a strictly longer text starting with it.
func planHealing(tok *tokenizer.Tokenizer, vocab int, prompt []int) *healing {
	if len(prompt) < 2 {
		return nil
	}
	last := prompt[len(prompt)-1]
	if tok.TokenType(last) != tokenizer.TypeNormal {
		return nil
	}
	text := tok.Piece(last)
	if text == "" || !utf8.ValidString(text) {
		return nil
	}
	h := &healing{text: text, removed: last}
	longer := false
	for _, id := range tok.TokensWithPrefix(text) {
		if id >= vocab {
			break // ascending: the rest are outside the model's logits too
		}
		h.allowed = append(h.allowed, id)
		longer = longer || len(tok.Piece(id)) > len(text)
	}
	if !longer {
		return nil
	}
	return h
}

var negInf = float32(math.Inf(-1))

// mask writes logits (vocab) to dst (vocab) with every token outside
// allowed set to -Inf, and returns dst: the sampler then draws only
// allowed tokens, under any policy, with its usual single random draw.
func (h *healing) mask(dst, logits []float32) []float32 {
	for i := range dst {
		dst[i] = negInf
	}
	for _, id := range h.allowed {
		dst[id] = logits[id]
	}
	return dst
}
