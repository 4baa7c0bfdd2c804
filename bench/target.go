package bench

// What `nanoserve bench` measures: a model file, or a synthetic model of a
// standard shape written (once, cached) for the purpose.

import (
	"fmt"
	"io"
	"time"

	"nanoserve/model"
)

// Target is the model a bench run measures: Path, or (when Synthetic
// names a shape) a seeded random-weight model of that shape and weight
// mix, written to CacheDir unless already there.
type Target struct {
	Path      string
	Tokenizer string // only needed to load llama2.c checkpoints
	Synthetic string // a ShapeNames entry ("" : Path)
	Type      string // the synthetic model's weight mix (ParseMix)
	Seed      uint64 // the synthetic model's weights
	CacheDir  string // where synthetic models are kept ("" : CacheDir())
	Threads   int
	NoMmap    bool      // model.Options.CopyWeights
	Mmap      bool      // model.Options.MapWeights
	Log       io.Writer // a line on the synthetic file written or reused
}

// Measure loads the target and runs the benchmark (Run) on it; the
// result's model info records the load time and, for a synthetic model,
// its shape, mix, seed and the time its file took to write.
func Measure(t Target, opts Options) (*Result, error) {
	path := t.Path
	var genMs float64
	var shape Shape
	var mix Mix
	var err error
	if t.Synthetic != "" {
		if shape, err = LookupShape(t.Synthetic); err != nil {
			return nil, err
		}
		if mix, err = ParseMix(t.Type); err != nil {
			return nil, err
		}
		t0 := time.Now()
		p, created, err := SyntheticFile(t.CacheDir, shape, mix, t.Seed, t.Threads)
		if err != nil {
			return nil, err
		}
		if created {
			genMs = float64(time.Since(t0).Microseconds()) / 1e3
			fmt.Fprintf(t.Log, "wrote %s in %.1f s\n", p, genMs/1e3)
		} else {
			fmt.Fprintf(t.Log, "using cached %s\n", p)
		}
		path = p
	}
	t0 := time.Now()
	m, err := model.Load(path, model.Options{Tokenizer: t.Tokenizer, Threads: t.Threads, CopyWeights: t.NoMmap, MapWeights: t.Mmap})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	info := Describe(m, path)
	info.LoadMs = float64(time.Since(t0).Microseconds()) / 1e3
	info.GenerateMs = genMs
	if t.Synthetic != "" {
		info.Synthetic, info.Type, info.Seed = shape.Name, mix.Name, t.Seed
	}
	return Run(m, info, opts)
}
