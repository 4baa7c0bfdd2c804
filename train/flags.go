package train

// The command-line face of Options and FIMComparison: nanoserve train's
// and fim-eval's flags.

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"nanoserve/tensor"
)

// Flags binds nanoserve train's flags: the Options, with the weight type
// and the progress bar as --dtype and --quiet say (Check).
type Flags struct {
	Options
	dtype string
	quiet bool
}

// RegisterFlags adds train's flags to fs.
func (f *Flags) RegisterFlags(fs *flag.FlagSet) {
	f.Options.RegisterFlags(fs)
	fs.StringVar(&f.dtype, "dtype", "f16", "weight type of the written matrices: f16 or f32")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar")
}

// Check refuses options no run can use (Options.Check, a corpus and an
// output) before anything is read; args, the positional arguments, are
// the corpus when --corpus is not given.
func (f *Flags) Check(args []string) error {
	if err := f.Options.Check(); err != nil {
		return err
	}
	if len(f.Corpus) == 0 {
		f.Corpus = append(f.Corpus, args...)
	}
	if len(f.Corpus) == 0 || f.Out == "" {
		return errors.New("need --corpus PATH... and --out MODEL.gguf")
	}
	switch strings.ToLower(f.dtype) {
	case "f16":
		f.WeightType = tensor.F16
	case "f32":
		f.WeightType = tensor.F32
	default:
		return fmt.Errorf("--dtype %q: want f16 or f32", f.dtype)
	}
	f.Progress = !f.quiet
	return nil
}

// RegisterFlags adds a flag for each option of a run to fs, with its
// default (all but the weight type, the progress bar and the hooks).
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.Var((*pathList)(&o.Corpus), "corpus", "corpus file or directory (repeatable)")
	fs.Var((*pathList)(&o.Exts), "ext", "only read files with this suffix from directories, e.g. .go (repeatable)")
	fs.StringVar(&o.Out, "out", "", "model to write (GGUF); promoted only if it beats the baseline and --prev")
	fs.StringVar(&o.Prev, "prev", "", "last known-good model to beat (default: --out if it exists)")
	fs.IntVar(&o.Shape.Dim, "dim", 128, "embedding width")
	fs.IntVar(&o.Shape.Layers, "layers", 4, "transformer layers")
	fs.IntVar(&o.Shape.Heads, "heads", 4, "attention heads")
	fs.IntVar(&o.Shape.KVHeads, "kv-heads", 0, "key/value heads (0: heads)")
	fs.IntVar(&o.Shape.Hidden, "ffn", 384, "feed-forward width")
	fs.IntVar(&o.Shape.Ctx, "ctx", 256, "context length")
	fs.IntVar(&o.Shape.Vocab, "vocab", 4096, "tokenizer vocabulary size (bytes + merges + <|endoftext|> and, with --fim-rate, 6 FIM tokens)")
	fs.Float64Var(&o.Shape.RopeTheta, "rope-theta", 10000, "RoPE base")
	fs.Float64Var(&o.FIMRate, "fim-rate", 0.5, "fraction of training chunks made fill-in-the-middle samples (0: left to right only; > 0 reserves the FIM tokens)")
	fs.Float64Var(&o.FIMWeight, "fim-weight", 1, "loss weight of FIM middle tokens (and their end token) against 1 for every other token")
	fs.Float64Var(&o.FIMFirstWeight, "fim-first-weight", 0, "loss weight of a FIM middle's first token, predicted at <|fim_middle|> (0: --fim-weight)")
	fs.Float64Var(&o.FIMSPMRate, "fim-spm-rate", 0, "fraction of FIM samples laid out suffix first (0: half)")
	fs.IntVar(&o.FIMChunkTokens, "fim-chunk", 0, "tokens per chunk the documents are cut into before some become FIM samples (0: the context)")
	fs.Float64Var(&o.FIMLineStart, "fim-line-start", 0, "fraction of rest-of-line FIM middles that start right after the indentation (0: at a random character)")
	fs.Float64Var(&o.FIMBlockRate, "fim-block-rate", 0, "fraction of FIM middles drawn as block bodies before the usual mix (0: the mix alone: 35% rest of a line, 25% 1-4 lines, 20% block body, 20% span)")
	fs.StringVar(&o.InitFrom, "init-from", "", "start from this model's weights and tokenizer (a GGUF `nanoserve train` wrote with the same shape): fine-tune with a fresh optimizer")
	fs.BoolVar(&o.FreezeInit, "freeze-init", false, "with --init-from and more --layers than that model: train only the new blocks (the others keep their weights; block expansion)")
	fs.IntVar(&o.BPEBytes, "bpe-bytes", 8<<20, "bytes of training text used to learn the tokenizer")
	fs.IntVar(&o.Batch, "batch", 16, "sequences per step")
	fs.IntVar(&o.Steps, "steps", 1000, "optimizer steps")
	fs.Float64Var(&o.LR, "lr", 3e-3, "peak learning rate")
	fs.Float64Var(&o.MinLR, "min-lr", 3e-4, "final learning rate of the cosine schedule")
	fs.IntVar(&o.Warmup, "warmup", 100, "linear warmup steps")
	fs.Float64Var(&o.WD, "weight-decay", 0.1, "AdamW weight decay (matrices only)")
	fs.Float64Var(&o.Clip, "clip", 1, "gradient clipping: maximum global L2 norm (0: off)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed (init, split, batches)")
	fs.IntVar(&o.Threads, "threads", tensor.PhysicalCores(), "worker threads")
	fs.IntVar(&o.EvalEvery, "eval-every", 100, "steps between held-out evaluations")
	fs.IntVar(&o.EvalTokens, "eval-tokens", 32768, "held-out tokens per evaluation during training")
	fs.IntVar(&o.FinalEvalTokens, "final-eval-tokens", 0, "held-out tokens of the final evaluation the release gate uses (0: all)")
	fs.Float64Var(&o.HeldOut, "held-out", 0.05, "fraction of documents held out")
	fs.StringVar(&o.Checkpoint, "checkpoint", "", "checkpoint file (written every --checkpoint-every steps)")
	fs.IntVar(&o.CheckpointEvery, "checkpoint-every", 200, "steps between checkpoints")
	fs.BoolVar(&o.Resume, "resume", false, "continue from --checkpoint if it exists")
	fs.IntVar(&o.StopAfter, "stop-after", 0, "stop after this step, checkpointed, as if interrupted (the schedule stays --steps long; a later run with --steps at most this step only evaluates and writes the model)")
}

// RegisterFlags adds nanoserve fim-eval's flags for the comparison to fs
// (all but the hooks and writers).
func (fc *FIMComparison) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&fc.Model, "model", "", "FIM-trained model (GGUF)")
	fs.StringVar(&fc.Other, "compare", "", "model to compare left to right (default: the built-in model)")
	fs.Var((*pathList)(&fc.Corpus), "corpus", "corpus the model was trained on (repeatable); its held-out split is evaluated")
	fs.Var((*pathList)(&fc.Exts), "ext", "file suffix to read (repeatable)")
	fs.Float64Var(&fc.HeldOut, "held-out", 0.05, "held-out fraction used in training")
	fs.Uint64Var(&fc.Seed, "seed", 1, "training seed (the split)")
	fs.IntVar(&fc.Cases, "cases", 1000, "cases (half single-line, half block body)")
	fs.Uint64Var(&fc.CaseSeed, "case-seed", 1, "seed of the cases")
	fs.IntVar(&fc.KNTokens, "kn-tokens", 4_000_000, "training tokens the trigram baseline counts")
	fs.IntVar(&fc.Threads, "threads", tensor.PhysicalCores(), "worker threads")
	fs.BoolVar(&fc.SPM, "spm-infill", false, "(a) lays the prompt out suffix first (llama-server's --spm-infill; a model trained suffix first reads it so anyway)")
	fs.BoolVar(&fc.Record, "record", false, "store the table in the FIM model's manifest (nanoserve.train.fim_eval; `inspect` shows it)")
}

// Check refuses a comparison that cannot run (before anything is read).
func (fc *FIMComparison) Check() error {
	if fc.Model == "" || len(fc.Corpus) == 0 {
		return errors.New("need --model FIM.gguf and --corpus PATH")
	}
	if fc.Cases < 2 {
		return fmt.Errorf("--cases %d: want at least 2", fc.Cases)
	}
	return nil
}

// pathList is a repeatable flag.
type pathList []string

func (s *pathList) String() string     { return strings.Join(*s, ",") }
func (s *pathList) Set(v string) error { *s = append(*s, v); return nil }
