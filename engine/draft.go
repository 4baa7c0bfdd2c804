package engine

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/tokenizer"
)

// SpecDraft is the draft-model speculation mode (--spec draft).
const SpecDraft = "draft"

// ErrDraftVocab is wrapped by the error NewDraft returns when the draft
// model's vocabulary differs from the target's.
var ErrDraftVocab = errors.New("engine: draft model vocabulary differs from the target's")

// Draft proposes with a smaller model of the same vocabulary: the draft
// model decodes k tokens greedily after the sequence's tokens, and the
// target verifies them in one step. Its proposal is a point mass (the
// draft's argmax), so the engine's verification keeps the target's
// distribution exactly under sampling too (see "Speculative decoding").
//
// It keeps no per-sequence state: its own paged KV cache, with prefix
// caching, remembers every full block of tokens it has computed, so each
// call attaches the longest cached prefix of the sequence (kvcache.Match),
// computes the few tokens after it (at most a block plus the tokens
// accepted since the last call), then one token per proposal. Its full
// blocks are registered only for the sequence's tokens, never for its own
// proposals; its blocks are released after each call (they stay cached
// until evicted).
type Draft struct {
	mu    sync.Mutex
	fw    forwarder
	cache *kvcache.Cache
	ctx   int // positions the draft model can attend over
	vocab int
	b     model.Batch
}

// NewDraft checks that draft's vocabulary equals target's — the same
// size, the same piece for every id, the same BOS, EOS and
// end-of-generation ids — and returns its proposer, with a KV cache of
// cacheTokens positions (at least the draft's context length).
func NewDraft(draft, target *model.Model, cacheTokens int) (*Draft, error) {
	if draft.Tokenizer == nil || target.Tokenizer == nil {
		return nil, errors.New("engine: draft and target models need tokenizers")
	}
	if err := sameVocab(draft.Tokenizer, target.Tokenizer, draft.Vocab, target.Vocab); err != nil {
		return nil, err
	}
	if !slices.Equal(draft.Gen.EOG, target.Gen.EOG) {
		return nil, fmt.Errorf("%w: end-of-generation ids %v, target %v", ErrDraftVocab, draft.Gen.EOG, target.Gen.EOG)
	}
	c, err := draft.NewCache(max(cacheTokens, draft.ContextLen))
	if err != nil {
		return nil, err
	}
	return &Draft{fw: draft, cache: c, ctx: draft.ContextLen, vocab: draft.Vocab}, nil
}

// sameVocab compares two tokenizers and their models' logit counts.
func sameVocab(d, t *tokenizer.Tokenizer, dLogits, tLogits int) error {
	if d.Size() != t.Size() || dLogits != tLogits {
		return fmt.Errorf("%w: %d tokens (%d logits), target %d tokens (%d logits)", ErrDraftVocab, d.Size(), dLogits, t.Size(), tLogits)
	}
	for id := range d.Size() {
		if d.Token(id) != t.Token(id) || d.TokenType(id) != t.TokenType(id) {
			return fmt.Errorf("%w: token %d is %q, target %q", ErrDraftVocab, id, d.Token(id), t.Token(id))
		}
	}
	for _, sp := range []struct {
		name string
		get  func(*tokenizer.Tokenizer) (int, bool)
	}{{"BOS", (*tokenizer.Tokenizer).BOS}, {"EOS", (*tokenizer.Tokenizer).EOS}} {
		di, dok := sp.get(d)
		ti, tok := sp.get(t)
		if di != ti || dok != tok {
			return fmt.Errorf("%w: %s id %d (%v), target %d (%v)", ErrDraftVocab, sp.name, di, dok, ti, tok)
		}
	}
	if d.AddBOS() != t.AddBOS() {
		return fmt.Errorf("%w: add-BOS %v, target %v", ErrDraftVocab, d.AddBOS(), t.AddBOS())
	}
	return nil
}

// Propose implements Proposer: up to k greedy tokens of the draft model
// after tokens (none when they do not fit its context or cache, or its
// forward fails).
func (d *Draft) Propose(dst, tokens []int, k int) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	dst = dst[:0]
	L := len(tokens)
	k = min(k, d.ctx-L)
	if k <= 0 || L == 0 {
		return dst
	}
	c := d.cache
	var s kvcache.Seq
	defer func() {
		c.Commit(&s, tokens) // full blocks of the sequence's own tokens only
		c.Release(&s)
	}()
	c.Match(&s, tokens, L-1) // at least the last token is recomputed for its logits
	if c.Reserve(&s, L-s.Len+k-1) != nil {
		return dst
	}
	feed := tokens[s.Len:]
	for j := range k {
		b := &d.b
		b.Tokens, b.Pos, b.Seq, b.Output = b.Tokens[:0], b.Pos[:0], b.Seq[:0], nil
		for i, t := range feed {
			b.Tokens = append(b.Tokens, t)
			b.Pos = append(b.Pos, s.Len+i)
			b.Seq = append(b.Seq, &s)
		}
		logits, err := d.fw.Forward(*b, c)
		clear(b.Seq)
		if err != nil {
			return dst[:0]
		}
		dst = append(dst, argmaxRow(logits[:d.vocab]))
		if j < k-1 {
			feed = dst[j : j+1]
		}
	}
	return dst
}

// argmaxRow is the first index of the largest value.
func argmaxRow(l []float32) int {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return best
}
