package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"

	"nanoserve/defaultmodel"
	"nanoserve/model"
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
	fs.IntVar(&mf.threads, "threads", defaultThreads(), "worker threads")
	fs.IntVar(&mf.ctxSize, "ctx-size", 0, "context length in tokens (0: the model's)")
	fs.BoolVar(&mf.longCtx, "allow-long-context", false, "allow a context longer than the model was trained for (warns)")
}

// load checks the numeric flags and opens the model the flags name. A
// context beyond the model's trained length needs --allow-long-context and
// warns on stderr.
func (mf *modelFlags) load() (*model.Model, error) {
	if mf.threads < 1 {
		return nil, errFlag("threads", mf.threads, "want at least 1 worker thread")
	}
	if mf.ctxSize < 0 {
		return nil, errFlag("ctx", mf.ctxSize, "want a context length in tokens (0: the model's)")
	}
	m, err := mf.open()
	if err != nil {
		return nil, err
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

func (mf *modelFlags) open() (*model.Model, error) {
	path := mf.model
	if path == "" {
		p, err := builtinModelPath()
		if err != nil {
			return nil, err
		}
		path = p
	} else {
		p, ref, err := resolveModel(path, mf.revision)
		if err != nil {
			return nil, err
		}
		path, mf.model, mf.ref = p, p, ref
	}
	// The context per sequence also picks LongRoPE factors (llama.cpp n_ctx_seq).
	return model.Load(path, model.Options{Tokenizer: mf.tokenizer, Threads: mf.threads, Context: mf.ctxSize})
}

// defaultThreads is the number of physical cores when Linux tells us, else
// the number of logical CPUs.
func defaultThreads() int {
	n := runtime.NumCPU()
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return n
	}
	cores := map[string]bool{}
	var phys, core string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if phys != "" || core != "" {
				cores[phys+"/"+core] = true
			}
			phys, core = "", ""
			continue
		}
		switch strings.TrimSpace(k) {
		case "physical id":
			phys = strings.TrimSpace(v)
		case "core id":
			core = strings.TrimSpace(v)
		}
	}
	if len(cores) > 0 && len(cores) <= n {
		return len(cores)
	}
	return n
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
