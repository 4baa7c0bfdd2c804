package train

// The options' checks, in the terms of `nanoserve train`'s flags.

import "fmt"

// Check refuses numeric options no training run can use before the corpus
// is read, naming each by its `nanoserve train` flag (a shape the model
// cannot have is also caught later by Config.Validate, with less to say
// about the flag).
func (o *Options) Check() error {
	positive := []struct {
		name string
		v    int
	}{
		{"dim", o.Shape.Dim}, {"layers", o.Shape.Layers}, {"heads", o.Shape.Heads},
		{"ffn", o.Shape.Hidden}, {"ctx", o.Shape.Ctx}, {"vocab", o.Shape.Vocab},
		{"bpe-bytes", o.BPEBytes}, {"batch", o.Batch}, {"steps", o.Steps},
		{"threads", o.Threads}, {"eval-every", o.EvalEvery}, {"eval-tokens", o.EvalTokens},
		{"checkpoint-every", o.CheckpointEvery},
	}
	for _, f := range positive {
		if f.v < 1 {
			return errOption(f.name, f.v, "want at least 1")
		}
	}
	nonNegative := []struct {
		name string
		v    int
	}{{"kv-heads", o.Shape.KVHeads}, {"warmup", o.Warmup}, {"fim-chunk", o.FIMChunkTokens}, {"final-eval-tokens", o.FinalEvalTokens}}
	for _, f := range nonNegative {
		if f.v < 0 {
			return errOption(f.name, f.v, "want 0 or more")
		}
	}
	switch {
	case !(o.Shape.RopeTheta > 0):
		return errOption("rope-theta", o.Shape.RopeTheta, "want a positive RoPE base")
	case !(o.LR > 0):
		return errOption("lr", o.LR, "want a positive learning rate")
	case !(o.MinLR >= 0) || o.MinLR > o.LR:
		return errOption("min-lr", o.MinLR, "want 0 ≤ min-lr ≤ lr")
	case !(o.WD >= 0):
		return errOption("weight-decay", o.WD, "want 0 or more")
	case !(o.Clip >= 0):
		return errOption("clip", o.Clip, "want 0 (off) or a positive norm")
	case !(o.FIMRate >= 0 && o.FIMRate <= 1):
		return errOption("fim-rate", o.FIMRate, "want a fraction between 0 and 1")
	case !(o.FIMWeight > 0):
		return errOption("fim-weight", o.FIMWeight, "want a positive weight")
	case !(o.FIMFirstWeight >= 0):
		return errOption("fim-first-weight", o.FIMFirstWeight, "want 0 (the --fim-weight) or a positive weight")
	case !(o.FIMSPMRate >= 0 && o.FIMSPMRate <= 1):
		return errOption("fim-spm-rate", o.FIMSPMRate, "want a fraction between 0 and 1")
	case !(o.FIMLineStart >= 0 && o.FIMLineStart <= 1):
		return errOption("fim-line-start", o.FIMLineStart, "want a fraction between 0 and 1")
	case !(o.FIMBlockRate >= 0 && o.FIMBlockRate <= 1):
		return errOption("fim-block-rate", o.FIMBlockRate, "want a fraction between 0 and 1")
	case !(o.HeldOut > 0 && o.HeldOut < 1):
		return errOption("held-out", o.HeldOut, "want a fraction between 0 and 1")
	}
	return nil
}

// errOption is a bad option's error: the flag, its value, what it wants.
func errOption(name string, v any, want string) error {
	return fmt.Errorf("--%s %v: %s", name, v, want)
}
