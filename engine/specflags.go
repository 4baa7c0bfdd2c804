package engine

// The command-line face of speculative decoding: what nanoserve's --spec,
// --spec-k, --spec-fixed-k and --draft-model mean together.

import (
	"fmt"

	"nanoserve/model"
)

// CheckSpecFlags validates --spec (mode), --spec-k (k) and --draft-model
// (draft) before any model is loaded; errors name the flag.
func CheckSpecFlags(mode string, k int, draft string) error {
	if k < 1 || k > MaxSpecK {
		return fmt.Errorf("--spec-k %d: want 1 to %d proposed tokens", k, MaxSpecK)
	}
	switch mode {
	case SpecOff, SpecNgram:
		if draft != "" {
			return fmt.Errorf("--draft-model %s: only with --spec draft", draft)
		}
		return nil
	case SpecDraft:
		if draft == "" {
			return fmt.Errorf("--spec %s: --spec draft needs --draft-model", mode)
		}
		return nil
	}
	return fmt.Errorf("--spec %s: want off, ngram or draft", mode)
}

// OpenDraft loads the --draft-model file path (with lo) and makes it target's
// proposer (NewDraft, cacheTokens positions); close releases the draft model.
func OpenDraft(path string, lo model.Options, target *model.Model, cacheTokens int) (d *Draft, close func(), err error) {
	dm, err := model.Load(path, lo)
	if err != nil {
		return nil, nil, fmt.Errorf("--draft-model: %w", err)
	}
	if d, err = NewDraft(dm, target, cacheTokens); err != nil {
		dm.Close()
		return nil, nil, fmt.Errorf("--draft-model %s: %w", path, err)
	}
	return d, func() { dm.Close() }, nil
}
