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
	"nanoserve/internal/mmap"
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

	// CopyWeights copies the matrices the forward pass multiplies by out
	// of the file mapping into anonymous memory advised for transparent
	// huge pages (as llama.cpp's --no-mmap reads them into memory). Where
	// address translation of 4 KiB file pages is costly — a virtual
	// machine with shadow or nested paging — streaming the weights runs
	// several times faster (TinyLlama Q8_0 on a 2-vCPU PVM guest: decode
	// 3× per CPU-second, issue 16); the cost is a copy at load and memory
	// the page cache can no longer reclaim.
	CopyWeights bool
}

// NoMmapUsage is the help of the --no-mmap flag that sets Options.CopyWeights.
const NoMmapUsage = "copy the weight matrices out of the file mapping into anonymous huge-page memory\n" +
	"(faster decode where 4 KiB page translation is costly, e.g. some virtual machines; costs a copy at load)"

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
	if opts.CopyWeights {
		if err := m.copyWeights(); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// copyWeights moves the data of every matrix the forward pass multiplies
// by (Options.CopyWeights) into one anonymous huge-page arena, each
// matrix 64-byte aligned; the embedding table is left in place (Forward
// reads one row per token) unless it is the tied output matrix.
func (m *Model) copyWeights() error {
	var mats []*tensor.Mat
	seen := map[*tensor.Mat]bool{}
	add := func(ws ...*tensor.Mat) {
		for _, w := range ws {
			if w != nil && len(w.Data) > 0 && !seen[w] {
				seen[w] = true
				mats = append(mats, w)
			}
		}
	}
	for l := range m.w.layers {
		lw := &m.w.layers[l]
		if lw.wqkv != nil {
			add(lw.wqkv) // wq, wk, wv are its rows, or unused
		} else {
			add(lw.wq, lw.wk, lw.wv)
		}
		add(lw.wo, lw.wGate, lw.wUp, lw.wDown, lw.router, lw.plGate, lw.plProj)
		add(lw.expGate...)
		add(lw.expUp...)
		add(lw.expDown...)
	}
	add(m.w.output, m.w.perLayerProj)
	size := 0
	for _, w := range mats {
		size += (len(w.Data) + 63) &^ 63
	}
	arena, err := mmap.Anon(size)
	if err != nil {
		return fmt.Errorf("model: copying the weights: %w", err)
	}
	buf, off := arena.Bytes(), 0
	for _, w := range mats {
		n := len(w.Data)
		copy(buf[off:off+n], w.Data)
		w.Data = buf[off : off+n : off+n]
		off += (n + 63) &^ 63
	}
	m.closers = append(m.closers, arena)
	return nil
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
