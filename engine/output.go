package engine

import (
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// output is one sequence's output stage: it turns each sampled token into
// the text to show now and decides whether, and why, the sequence ends.
// It knows nothing of the model or the scheduler, so it is tested with a
// tokenizer alone. Rules that forbid tokens (token healing's first draw,
// a grammar, min_tokens) are logits processors and run before sampling;
// the output stage only sees the token that was drawn.
type output struct {
	stopIDs   map[int]bool // end-of-generation ids (unless ignored) and the policy's stop ids
	dec       *tokenizer.Decoder
	stop      *sample.StopMatcher
	healed    string // token healing's removed text: the first piece omits it
	maxTokens int    // ≤ 0: no limit
	ctxLen    int    // a token at index ≥ ctxLen is the last: it cannot be fed back
	n         int    // tokens accepted (stop ids excluded)
}

// piece is what the output stage makes of one sampled token.
type piece struct {
	text   string // text safe to show now (complete UTF-8, stop strings held back); may be ""
	stop   bool   // the token is a stop id: not part of the output, text is held-back text released
	finish string // "" (go on), FinishStop or FinishLength
}

// newOutput prepares the output stage of a sequence whose prompt is
// prompt (as tokenized, before healing removed anything).
func newOutput(tok *tokenizer.Tokenizer, pol *sample.Policy, eog []int, prompt []int, healed string, ctxLen int, special bool) *output {
	mode := tokenizer.SpecialSkip // control tokens are never text unless asked for
	if special {
		mode = tokenizer.SpecialRender
	}
	o := &output{
		stopIDs: map[int]bool{},
		// Generated text continues the prompt's: keep the first piece's space.
		dec:       tok.NewDecoderWith(tokenizer.DecodeOptions{Special: mode, Continuation: tok.Decode(prompt) != ""}),
		stop:      sample.NewStopMatcher(pol.Stop),
		healed:    healed,
		maxTokens: pol.MaxTokens,
		ctxLen:    ctxLen,
	}
	for _, id := range pol.StopTokenIDs {
		o.stopIDs[id] = true
	}
	if !pol.IgnoreEOS {
		for _, id := range eog {
			o.stopIDs[id] = true
		}
	}
	return o
}

// accept takes the token sampled as token pos of the sequence (prompt
// included: pos = the number of tokens before it).
func (o *output) accept(id, pos int) piece {
	if o.stopIDs[id] {
		// The stop id itself is not part of the output; release any text
		// still held back (an incomplete stop-string prefix).
		return piece{text: o.flush(), stop: true, finish: FinishStop}
	}
	o.n++
	last := (o.maxTokens > 0 && o.n >= o.maxTokens) || pos >= o.ctxLen
	var text string
	if o.n == 1 && o.healed != "" {
		text = o.dec.NextAfter(id, o.healed) // the prompt shows the removed text
	} else {
		text = o.dec.Next(id)
	}
	out, matched := o.stop.Push(text)
	if last && !matched {
		out += o.flush()
	}
	p := piece{text: out}
	switch {
	case matched:
		p.finish = FinishStop
	case last:
		p.finish = FinishLength
	}
	return p
}

// flush releases the text the decoder and the stop matcher hold back.
func (o *output) flush() string {
	t, matched := o.stop.Push(o.dec.Flush())
	if matched {
		return t
	}
	return t + o.stop.Flush()
}
