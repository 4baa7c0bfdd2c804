package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"nanoserve/defaultmodel"
	"nanoserve/engine"
	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/tensor"
)

// modelFlags are the flags every command that loads a model shares.
type modelFlags struct {
	model     string // after load: the local path (a hub reference resolved)
	ref       string // the hub reference --model named, or ""
	revision  string
	tokenizer string
	threads   int
	ctxSize   int
	longCtx   bool // --allow-long-context
	kvType    string
	kv        tensor.DType // --kv-cache-type, parsed by load
	noMmap    bool         // --no-mmap: model.Options.CopyWeights
	mmap      bool         // --mmap: model.Options.MapWeights
}

func (mf *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&mf.model, "model", "", modelUsage)
	mf.registerRest(fs)
}

const modelUsage = "model: GGUF file, Hugging Face directory, llama2.c .bin, or a hub name REPO[:QUANT|:FILE]\n" +
	"pulled into the Hugging Face cache on first use (default: the built-in model)"

// registerRest registers every flag but --model (serve takes several).
func (mf *modelFlags) registerRest(fs *flag.FlagSet) {
	fs.StringVar(&mf.revision, "revision", "main", "hub revision (branch, tag or commit) for --model REPO[:QUANT]")
	fs.StringVar(&mf.tokenizer, "tokenizer", "", "tokenizer file or folder (overrides the model's own; needed for llama2.c checkpoints)")
	fs.IntVar(&mf.threads, "threads", tensor.PhysicalCores(), "worker threads")
	fs.BoolVar(&mf.noMmap, "no-mmap", false, model.NoMmapUsage)
	fs.BoolVar(&mf.mmap, "mmap", false, model.MmapUsage)
	fs.IntVar(&mf.ctxSize, "ctx-size", 0, "context length in tokens (0: the model's)")
	fs.BoolVar(&mf.longCtx, "allow-long-context", false, "allow a context longer than the model was trained for (warns)")
	fs.StringVar(&mf.kvType, "kv-cache-type", "f16", "KV cache element type: f32, f16 or q8_0 (q8_0 needs head_dim a multiple of 32)")
}

// load checks the numeric flags and opens the model the flags name. A
// context beyond the model's trained length needs --allow-long-context and
// warns on stderr.
func (mf *modelFlags) load() (*model.Model, error) {
	if err := mf.check(); err != nil {
		return nil, err
	}
	m, err := mf.open()
	if err != nil {
		return nil, err
	}
	if err := m.CheckKVType(mf.kv); err != nil {
		m.Close()
		return nil, fmt.Errorf("--kv-cache-type %s: %w", mf.kvType, err)
	}
	if mf.ctxSize > m.ContextLen {
		if !mf.longCtx {
			m.Close()
			return nil, fmt.Errorf("--ctx %d exceeds the %d positions the model was trained for; %w", mf.ctxSize, m.ContextLen, errLongCtx)
		}
		fmt.Fprintf(os.Stderr, "nanoserve: warning: --ctx %d exceeds the %d positions the model was trained for; expect degraded output past them\n",
			mf.ctxSize, m.ContextLen)
	}
	return m, nil
}

// check validates --threads and --ctx and parses --kv-cache-type into kv
// (before any model is loaded).
func (mf *modelFlags) check() error {
	if err := checkThreads(mf.threads); err != nil {
		return err
	}
	if mf.ctxSize < 0 {
		return errFlag("ctx", mf.ctxSize, "want a context length in tokens (0: the model's)")
	}
	if mf.kvType == "" {
		mf.kvType = "f16" // the flag's default
	}
	kv, err := kvcache.ParseType(mf.kvType)
	if err != nil {
		return errFlag("kv-cache-type", mf.kvType, "want f32, f16 or q8_0")
	}
	mf.kv = kv
	return nil
}

// checkThreads refuses a --threads below 1.
func checkThreads(n int) error {
	if n < 1 {
		return errFlag("threads", n, "want at least 1 worker thread")
	}
	return nil
}

func (mf *modelFlags) open() (*model.Model, error) {
	path, ref, err := modelPath(mf.model, mf.revision)
	if err != nil {
		return nil, err
	}
	if mf.model != "" {
		mf.model, mf.ref = path, ref
	}
	// The context per sequence also picks LongRoPE factors (llama.cpp n_ctx_seq).
	return model.Load(path, model.Options{Tokenizer: mf.tokenizer, Threads: mf.threads, Context: mf.ctxSize, CopyWeights: mf.noMmap, MapWeights: mf.mmap})
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// builtinModelPath locates the built-in model (package defaultmodel, trained
// by `nanoserve train`; see the README), used when --model is not given. A
// build without it (defaultmodel.ErrMissing) asks for --model instead.
var builtinModelPath = func() (string, error) {
	p, err := defaultmodel.Path()
	if errors.Is(err, defaultmodel.ErrMissing) {
		return "", errors.New("no --model given and this build has no built-in model")
	}
	return p, err
}

// modelPath is the local path of a model argument: "" names the built-in
// model, anything else is resolved (resolveModel: a path, or a hub
// reference, ref, from the cache or pulled).
func modelPath(arg, revision string) (path, ref string, err error) {
	if arg == "" {
		path, err = builtinModelPath()
		return path, "", err
	}
	return resolveModel(arg, revision)
}

// orBuiltin sets an empty model path to the built-in model's.
func orBuiltin(path *string) (err error) {
	if *path == "" {
		*path, err = builtinModelPath()
	}
	return err
}

// specFlags are the speculative-decoding flags of serve and generate.
type specFlags struct {
	mode  string
	k     int
	fixed bool
	draft string
}

func (sf *specFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.mode, "spec", "off", "speculative decoding: off, ngram (prompt lookup: propose what followed the\n"+
		"sequence's last tokens earlier in its prompt or output) or draft (a smaller model, --draft-model);\n"+
		"output is the same either way, only faster when proposals land")
	fs.IntVar(&sf.k, "spec-k", engine.DefaultSpecK, "most tokens proposed per sequence and step (adaptive below it unless --spec-fixed-k)")
	fs.BoolVar(&sf.fixed, "spec-fixed-k", false, "always propose --spec-k tokens (no back-off when proposals fail)")
	fs.StringVar(&sf.draft, "draft-model", "", "draft model for --spec draft: a local model file with the target's vocabulary\n"+
		"(same size, pieces and special ids; checked at load)")
}

// check validates the flags (before any model is loaded).
func (sf *specFlags) check() error { return engine.CheckSpecFlags(sf.mode, sf.k, sf.draft) }

// options builds the engine's speculation options for target m (loading
// the draft model, which the caller closes with the returned func).
func (sf *specFlags) options(mf *modelFlags, m *model.Model, cacheTokens int) (engine.SpecOptions, func(), error) {
	o := engine.SpecOptions{Mode: sf.mode, K: sf.k, Fixed: sf.fixed}
	if err := sf.check(); err != nil || sf.mode != engine.SpecDraft {
		return o, func() {}, err
	}
	d, closeDraft, err := engine.OpenDraft(sf.draft, model.Options{Tokenizer: mf.tokenizer, Threads: mf.threads, CopyWeights: mf.noMmap, MapWeights: mf.mmap}, m, cacheTokens)
	if err != nil {
		return o, func() {}, err
	}
	o.Proposer = d
	return o, closeDraft, nil
}

// printJSON writes v to standard output as indented JSON (the --json flags).
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
