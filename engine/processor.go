package engine

import (
	"math"
	"strings"
	"unicode/utf8"

	"nanoserve/tokenizer"
)

// LogitsProcessor is one link of a sequence's logits-processor chain: the
// rules that forbid or reweight tokens before each draw (token healing,
// a grammar constraint, min_tokens, ...). See "Logits processors" in the
// package comment for the contract; in short, for every token the engine
// calls Process on each processor in chain order, samples, then calls
// Accept with the sampled id on each processor in the same order.
//
// A processor belongs to one sequence (Request.Processors builds a fresh
// chain per sequence, so each of n choices has its own), is called from the
// scheduler goroutine only, and must not block: it runs inside the step
// every running sequence waits for.
type LogitsProcessor interface {
	// Process edits logits (vocab) in place for the next draw: set a
	// logit to -Inf to forbid its token. At least one token must stay
	// finite. An error ends the sequence with FinishError.
	Process(logits []float32) error
	// Accept reports the token drawn (the processor advances its state:
	// a grammar consumes it, a counter counts it). An error ends the
	// sequence with FinishError.
	Accept(token int) error
}

// DraftProcessor is an optional extension for speculative decoding, where
// a proposer guesses k tokens and one forward pass returns k+1 rows of
// logits to verify them. ProcessDraft edits rows[j] (vocab each, j ≤
// len(draft)) as Process would after Accept(draft[0]), ...,
// Accept(draft[j-1]), without changing the processor's state. The engine
// does not need it: it verifies row by row with Process and Accept (see
// "Speculative decoding" in the package comment), so every processor
// takes part in speculative decoding as it is.
type DraftProcessor interface {
	LogitsProcessor
	ProcessDraft(rows [][]float32, draft []int) error
}

// healProcessor is token healing's processor (see "Token healing" in the
// package comment): the first draw may only take a token whose text
// starts with the removed prompt token's text; later draws are untouched.
type healProcessor struct {
	text    string // the removed token's text (its decoded bytes, valid UTF-8)
	removed int    // its id
	allowed []int  // ascending ids whose text starts with text (removed included)
	done    bool   // the first token was accepted
}

// planHealing decides whether prompt's last token can be healed and
// returns the processor, or nil. It heals only when there is something to
// gain and something left to prefill: the prompt has at least two tokens;
// the last one is an ordinary token (never BOS or another control, byte,
// unknown or user-defined token) whose text is valid UTF-8; and some token
// of the model's vocabulary has a strictly longer text starting with it.
func planHealing(tok *tokenizer.Tokenizer, vocab int, prompt []int) *healProcessor {
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
	h := &healProcessor{text: text, removed: last}
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

// clone is a fresh copy of the plan for another sequence (n > 1).
func (h *healProcessor) clone() *healProcessor { c := *h; c.done = false; return &c }

var negInf = float32(math.Inf(-1))

// Process sets every logit outside allowed to -Inf on the first draw, so
// the sampler draws only allowed tokens under any policy, with its usual
// single random draw.
func (h *healProcessor) Process(logits []float32) error {
	if h.done {
		return nil
	}
	j := 0
	for i := range logits {
		if j < len(h.allowed) && h.allowed[j] == i {
			j++
			continue
		}
		logits[i] = negInf
	}
	return nil
}

// Accept ends the healing after the first token.
func (h *healProcessor) Accept(int) error { h.done = true; return nil }

// maskProcessor forbids a fixed set of tokens at every draw (the FIM
// markers a request cannot mean; see "Control tokens").
type maskProcessor struct {
	ids []int // ascending, each < vocab
}

// fimMask returns the processor that masks the FIM markers of tok a
// request may not draw (fim: a FIM layout, where the tokens that end a
// middle stay allowed), or nil when the model has none.
func fimMask(tok *tokenizer.Tokenizer, vocab int, fim bool) *maskProcessor {
	f := tok.FIM()
	ids := []tokenizer.OptID{f.Pre, f.Suf, f.Mid, f.Rep}
	if !fim {
		ids = append(ids, f.Pad, f.Sep)
	}
	m := &maskProcessor{}
	for _, o := range ids {
		if o.OK && o.ID >= 0 && o.ID < vocab {
			m.ids = append(m.ids, o.ID)
		}
	}
	if len(m.ids) == 0 {
		return nil
	}
	return m
}

// Process sets the masked tokens' logits to -Inf.
func (m *maskProcessor) Process(logits []float32) error {
	for _, id := range m.ids {
		logits[id] = float32(math.Inf(-1))
	}
	return nil
}

// Accept has nothing to track.
func (m *maskProcessor) Accept(int) error { return nil }

// nonEmptyProcessor masks the end-of-generation tokens until a token with
// visible text is accepted (Request.NonEmpty).
type nonEmptyProcessor struct {
	tok    *tokenizer.Tokenizer
	eog    []int
	vocab  int
	healed string // token healing's removed text: the first token's text after it counts
	n      int    // tokens accepted
	seen   bool   // visible text accepted
}

// Process forbids ending before visible text.
func (p *nonEmptyProcessor) Process(logits []float32) error {
	if p.seen {
		return nil
	}
	for _, id := range p.eog {
		if id >= 0 && id < p.vocab {
			logits[id] = float32(math.Inf(-1))
		}
	}
	return nil
}

// Accept notes whether id adds visible text.
func (p *nonEmptyProcessor) Accept(id int) error {
	text := p.tok.Piece(id)
	if p.n == 0 && p.healed != "" {
		text = strings.TrimPrefix(text, p.healed)
	}
	p.n++
	if p.tok.TokenType(id) != tokenizer.TypeControl && strings.TrimSpace(text) != "" {
		p.seen = true
	}
	return nil
}
