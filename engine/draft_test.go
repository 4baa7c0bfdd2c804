package engine

import (
	"errors"
	"slices"
	"testing"

	"nanoserve/kvcache"
	"nanoserve/model"
)

// lastOnly is fakeModel with model.Forward's batch contract: a nil Output
// returns the last token's logits only, and an empty batch is an error.
type lastOnly struct{ *fakeModel }

func (f lastOnly) Forward(b model.Batch, c *kvcache.Cache) ([]float32, error) {
	if len(b.Tokens) == 0 {
		return nil, errors.New("fake: empty batch")
	}
	if b.Output == nil {
		b.Output = make([]bool, len(b.Tokens))
		b.Output[len(b.Tokens)-1] = true
	}
	return f.fakeModel.Forward(b, c)
}

// The draft proposer attaches the cached blocks of a sequence it has seen
// but always recomputes at least its last token (the proposals start from
// its logits): when the sequence's length is a multiple of the block size
// every position is in cached blocks, and attaching them all would leave
// nothing to compute. Whatever the length, the second proposal over the
// same tokens (from the cache) equals the first and one from an empty
// cache, and costs fewer token computations.
func TestDraftProposesFromCachedBlocks(t *testing.T) {
	const bs, vocab = 4, 97
	newDraft := func() (*Draft, *fakeModel) {
		f := &fakeModel{vocab: vocab}
		return &Draft{fw: lastOnly{f}, cache: newFakeCache(t, bs, 32), ctx: 128, vocab: vocab}, f
	}
	for _, L := range []int{3, 4, 5, 7, 8, 9, 12} {
		toks := make([]int, L)
		for i := range toks {
			toks[i] = (i*13 + 5) % vocab
		}
		fresh, _ := newDraft()
		want := slices.Clone(fresh.Propose(nil, toks, 3))
		if len(want) != 3 {
			t.Fatalf("L=%d: %d proposals from an empty cache, want 3", L, len(want))
		}
		d, f := newDraft()
		first := slices.Clone(d.Propose(nil, toks, 3))
		cold := f.tokens
		second := slices.Clone(d.Propose(nil, toks, 3))
		warm := f.tokens - cold
		if !slices.Equal(first, want) || !slices.Equal(second, want) {
			t.Fatalf("L=%d: proposals %v then %v (cached), want %v", L, first, second, want)
		}
		if L > bs && warm >= cold {
			t.Errorf("L=%d: the cached call computed %d tokens, the first %d", L, warm, cold)
		}
		if err := d.cache.Check(); err != nil || d.cache.UsedBlocks() != 0 {
			t.Fatalf("L=%d: draft cache %v, %d blocks used", L, err, d.cache.UsedBlocks())
		}
	}
}
