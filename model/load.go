package model

// Loading: Load picks the loader by what path is (a directory: Hugging
// Face, load_hf.go; GGUF magic: load_gguf.go; else a llama2.c checkpoint,
// load_llama2c.go), then init validates the weights and derives what the
// forward pass needs. The loaders share the checks of weights.go.

import (
	"fmt"
	"os"
	"slices"

	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

// LoadTokenizer reads a tokenizer: from a GGUF file's metadata
// (llamacpp.LoadTokenizer), anything else with
// tokenizer.Load (tokenizer.json, tokenizer.model, llama2.c tokenizer.bin,
// GPT-2 vocabulary files, or a directory holding them).
func LoadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	if gguf.IsFile(path) {
		tk, err := llamacpp.LoadTokenizer(path)
		if err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		return tk, nil
	}
	return tokenizer.Load(path)
}

// Options configure Load.
type Options struct {
	Tokenizer string       // tokenizer path (llama2.c tokenizer.bin, tokenizer.model, ...); overrides the model's own
	Threads   int          // workers for a new pool when Pool is nil (< 1: 1)
	Context   int          // configured context per sequence (picks LongRoPE factors as llama.cpp's n_ctx_seq does); 0: the trained context length
	Pool      *tensor.Pool // worker pool to share (one caller at a time: Forward calls on models sharing it must not overlap); nil: a new one with Threads workers
}

// Load reads the model at path: a Hugging Face directory, a GGUF file (by
// its magic) or else a llama2.c checkpoint.
func Load(path string, opts Options) (*Model, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	var m *Model
	switch {
	case fi.IsDir():
		m, err = loadHF(path, opts.Context)
	case gguf.IsFile(path):
		m, err = loadGGUF(path, opts.Context)
	default:
		m, err = loadLlama2c(path)
	}
	if err != nil {
		return nil, err
	}
	if opts.Tokenizer != "" {
		tk, err := LoadTokenizer(opts.Tokenizer)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.Tokenizer = tk
	}
	m.pool = opts.Pool
	if m.pool == nil {
		m.pool = tensor.NewPool(opts.Threads)
		m.ownPool = true
	}
	if err := m.init(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// init validates the config and weights and precomputes RoPE frequencies.
func (m *Model) init() error {
	if err := m.Config.validate(); err != nil {
		return err
	}
	if err := m.w.check(&m.Config); err != nil {
		return err
	}
	m.w.fuseQKV()
	m.invFreq = ropeFreqs(&m.Config, m.w.ropeFreqs)
	if m.RopeThetaSWA > 0 && m.SlidingWindow > 0 {
		m.invFreqSWA = ropeFreqsBase(&m.Config, m.RopeThetaSWA, nil, RopeScaling{})
	}
	// End of generation: the file's own ids (generation_config.json) and
	// the tokenizer's end-of-generation set, ids within the vocabulary.
	if m.Tokenizer != nil {
		m.Gen.EOG = append(m.Gen.EOG, m.Tokenizer.EOG()...)
		// llama2.c's run.c ends a sample when the model emits BOS, which
		// its training data uses to delimit documents.
		if bos, ok := m.Tokenizer.BOS(); ok && m.Format == "llama2c" {
			m.Gen.EOG = append(m.Gen.EOG, bos)
		}
	}
	m.Gen.EOG = slices.DeleteFunc(m.Gen.EOG, func(id int) bool { return id < 0 || id >= m.Vocab })
	slices.Sort(m.Gen.EOG)
	m.Gen.EOG = slices.Compact(m.Gen.EOG)
	return nil
}
