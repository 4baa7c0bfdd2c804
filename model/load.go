package model

// Loading: Load picks the loader by what path is (a directory: Hugging
// Face, load_hf.go; GGUF magic: load_gguf.go; else a llama2.c checkpoint,
// load_llama2c.go), then init validates the weights and derives what the
// forward pass needs. The loaders share the checks of weights.go.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
	if hasExt(path, ".gguf") {
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
			return nil, notGGUF(path)
		}
	}
	return tokenizer.Load(path)
}

// ErrVocabMismatch is wrapped when the tokenizer has more tokens than the
// model has embedding rows.
var ErrVocabMismatch = errors.New("model: tokenizer larger than the model's vocabulary")

// Options configure Load.
type Options struct {
	Tokenizer string       // tokenizer path (llama2.c tokenizer.bin, tokenizer.model, ...); overrides the model's own
	Threads   int          // workers for a new pool when Pool is nil (< 1: 1)
	Context   int          // configured context per sequence (picks LongRoPE factors as llama.cpp's n_ctx_seq does); 0: the trained context length
	Pool      *tensor.Pool // worker pool to share (one caller at a time: Forward calls on models sharing it must not overlap); nil: a new one with Threads workers

	// CopyWeights (CLI --no-mmap) copies the matrices the forward pass
	// multiplies by out of the file into anonymous memory advised for
	// transparent huge pages (as llama.cpp's --no-mmap reads them into
	// memory). MapWeights (CLI --mmap) leaves them in the plain file
	// mapping, paged in 4 KiB at a time on first use. Neither (the
	// default): the weights are held in 2 MiB pages the cheapest way the
	// kernel allows — the file mapping itself where the page cache gives
	// it huge pages, else the copy — see placeWeights (weightmem.go).
	// Where address translation is costly (a virtual machine with nested
	// paging) 4 KiB pages cost decode a large share of its speed (issue
	// 16, issue 36). Setting both is an error.
	CopyWeights bool
	MapWeights  bool
}

// NoMmapUsage and MmapUsage are the help of the --no-mmap and --mmap
// flags (Options.CopyWeights, Options.MapWeights).
const (
	NoMmapUsage = "copy the weight matrices out of the file into anonymous huge-page memory (costs a copy at load and\n" +
		"memory the page cache cannot reclaim; default: the file mapping in huge pages where the kernel gives them, else this copy)"
	MmapUsage = "leave the weights in the plain file mapping, paged in 4 KiB at a time on first use (least memory;\n" +
		"slower decode where 4 KiB page translation is costly, e.g. virtual machines)"
)

// Load reads the model at path: a Hugging Face directory, a GGUF file (by
// its magic) or else a llama2.c checkpoint.
func Load(path string, opts Options) (*Model, error) {
	if opts.CopyWeights && opts.MapWeights {
		return nil, errors.New("model: --mmap (Options.MapWeights) and --no-mmap (Options.CopyWeights) contradict each other: choose one")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	var m *Model
	switch {
	case fi.IsDir():
		m, err = loadHF(path, opts.Context)
	case fi.Size() == 0:
		err = fmt.Errorf("model: %s is empty (0 bytes): not a GGUF file, a llama2.c checkpoint or a Hugging Face directory", path)
	case gguf.IsFile(path):
		m, err = loadGGUF(path, opts.Context)
	case hasExt(path, ".gguf"):
		err = notGGUF(path)
	default:
		m, err = loadLlama2c(path)
		if err != nil {
			err = fmt.Errorf("%w; %s is not a GGUF file (no GGUF magic) nor a Hugging Face directory, so it was read as a llama2.c checkpoint", err, baseName(path))
		}
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
	if err := m.placeWeights(opts); err != nil {
		m.Close()
		return nil, err
	}
	// The kernels' layouts (4/5/8-bit types on amd64) now, not in the
	// first request; MatMul then reads only the packed copy, so the file
	// pages the packing read leave the resident set (page cache the
	// kernel may drop; a row lookup faults its page back in): after each
	// matrix, so the peak stays one matrix above the copies, and once
	// more at the end for the pages the next matrices' faults mapped
	// around them again (the kernel maps up to 64 KiB of cached pages
	// around a fault).
	maps := m.mappings()
	release := func(w *tensor.Mat) {
		if w.Repacked() {
			for _, mp := range maps {
				mp.ReleaseRange(w.Data)
			}
		}
	}
	for _, w := range m.matrices() {
		if w.Prepare() > 0 {
			release(w)
		}
	}
	for _, w := range m.matrices() {
		release(w)
	}
	return m, nil
}

func hasExt(path, ext string) bool { return strings.EqualFold(filepath.Ext(path), ext) }

// notGGUF is the error for a file named .gguf without the GGUF magic: it
// says what the file starts with instead of guessing another format.
func notGGUF(path string) error {
	head := make([]byte, 8)
	f, err := os.Open(path)
	if err == nil {
		n, _ := io.ReadFull(f, head)
		head = head[:n]
		f.Close()
	}
	if len(head) == 0 {
		return fmt.Errorf("model: %s is empty: not a GGUF file", path)
	}
	return fmt.Errorf("model: %s is named .gguf but is not a GGUF file: it starts with %q, not the magic \"GGUF\"", path, head)
}

// init validates the config and weights and precomputes RoPE frequencies.
func (m *Model) init() error {
	if err := m.Config.validate(); err != nil {
		return err
	}
	if err := m.w.check(&m.Config); err != nil {
		return err
	}
	// Every id the tokenizer can produce must have an embedding row. The
	// reverse is normal: Qwen2.5 pads its embedding past the tokenizer.
	if m.Tokenizer != nil && m.Tokenizer.Size() > m.Vocab {
		return fmt.Errorf("%w: the tokenizer has %d tokens but the model's embedding has %d rows (ids %d..%d would be out of range); is this the model's own tokenizer?",
			ErrVocabMismatch, m.Tokenizer.Size(), m.Vocab, m.Vocab, m.Tokenizer.Size()-1)
	}
	if !m.AttnGate { // Qwen3.5's attn_q holds query and gate rows: kept apart
		m.w.fuseQKV()
	}
	m.w.setKVLayers(&m.Config)
	m.invFreq = ropeFreqs(&m.Config, m.w.ropeFreqs)
	if (m.RopeThetaSWA > 0 || m.RopeDimSWA > 0) && m.SlidingWindow > 0 {
		// The windowed layers' own base (and, Gemma 4, rotated width),
		// without the global layers' factors or scaling.
		theta, dim := m.RopeThetaSWA, m.RopeDimSWA
		if theta == 0 {
			theta = m.RopeTheta
		}
		if dim == 0 {
			dim = m.RopeDim
		}
		m.invFreqSWA = ropeFreqsBase(dim, theta, nil, RopeScaling{})
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
