package model_test

import (
	"nanoserve/bench"
	"nanoserve/model"
)

// The synthetic-file writer of model's tests (syntheticFile): bench's
// --synthetic generator, which imports model, so it is wired in from this
// external test package.
func init() {
	model.SetSyntheticFile(func(dir, shape, typ string, seed uint64) (string, error) {
		s, err := bench.LookupShape(shape)
		if err != nil {
			return "", err
		}
		mix, err := bench.ParseMix(typ)
		if err != nil {
			return "", err
		}
		p, _, err := bench.SyntheticFile(dir, s, mix, seed, 0)
		return p, err
	})
}
