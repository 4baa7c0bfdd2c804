package engine

// The command-line face of the engine's options: what nanoserve's --spec,
// --spec-k and --draft-model mean together, and serve's structured-output
// limits (--grammar-*).

import (
	"flag"
	"fmt"

	"nanoserve/grammar"
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

// RegisterFlags adds the flags that raise (or lower) what one constraint
// compile may take (a request past a limit gets a 400 naming the flag),
// with grammar.DefaultLimits.
func (o *GrammarOptions) RegisterFlags(fs *flag.FlagSet) {
	d := grammar.DefaultLimits()
	fs.Int64Var(&o.Limits.Steps, "grammar-max-steps", d.Steps,
		"work steps one structured-output compile (and each token mask after it) may take (a CPU-time bound: ~10-50 ns each)")
	fs.Int64Var(&o.Limits.Nodes, "grammar-max-nodes", d.Nodes, "grammar nodes (rules, positions, automaton stacks) one structured-output compile may create")
	fs.Int64Var(&o.Limits.Bytes, "grammar-max-bytes", d.Bytes, "bytes one structured-output compile (and its mask caches) may hold")
	fs.Int64Var(&o.CacheBytes, "grammar-cache-bytes", defaultGrammarCacheBytes, "bytes the compiled constraints kept for reuse may hold together")
	fs.IntVar(&o.Compiles, "grammar-compiles", 0, "structured-output compiles that run at once; more wait (0: half the CPUs, at least 1)")
}
