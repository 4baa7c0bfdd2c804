package bench

// The command-line face of the benchmarks: nanoserve bench's flags (Flags:
// a Target and its Options) and bench serve's (ServeFlags).

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/tensor"
)

// Flags binds nanoserve bench's flags: what to measure (Target) and how
// (Options), filled in by Check.
type Flags struct {
	Target  Target
	Options Options

	prompts, gens, depths, genLens, kvType string
	bwMiB                                  int64
	peak                                   bool
}

// RegisterFlags adds bench's flags to fs.
func (f *Flags) RegisterFlags(fs *flag.FlagSet) {
	t, o := &f.Target, &f.Options
	fs.StringVar(&t.Path, "model", "", "model to measure: GGUF file, Hugging Face directory or llama2.c .bin")
	fs.StringVar(&t.Tokenizer, "tokenizer", "", "tokenizer (only needed to load llama2.c checkpoints)")
	fs.StringVar(&t.Synthetic, "synthetic", "", "measure a seeded random-weight model of a standard shape: "+strings.Join(ShapeNames(), ", "))
	fs.StringVar(&t.Type, "type", "f16", "weight type of the synthetic model: "+strings.Join(MixNames(), ", "))
	fs.Uint64Var(&t.Seed, "seed", 1, "seed of the synthetic weights and of the random prompt tokens")
	fs.StringVar(&t.CacheDir, "cache-dir", "", "where synthetic models are kept (default "+CacheDir()+")")
	fs.StringVar(&f.prompts, "p", "128,512", "prompt lengths to prefill (pp tests), comma-separated")
	fs.StringVar(&f.gens, "n", "128", "decode lengths (tg tests), comma-separated")
	fs.IntVar(&o.Reps, "r", 3, "timed repetitions of each test, after one warm-up")
	fs.IntVar(&t.Threads, "threads", tensor.PhysicalCores(), "worker threads")
	fs.BoolVar(&t.NoMmap, "no-mmap", false, model.NoMmapUsage)
	fs.BoolVar(&t.Mmap, "mmap", false, model.MmapUsage)
	fs.IntVar(&o.Batch, "batch", 512, "prefill tokens per forward call")
	fs.StringVar(&f.depths, "depths", "0,128,512,1024", "decode-rate sweep: context depths (\"none\": off)")
	fs.StringVar(&f.genLens, "gen-lens", "32,64,128,256", "decode-rate sweep: generated lengths (\"none\": off)")
	fs.IntVar(&o.SweepGen, "sweep-n", 32, "tokens decoded at each depth of the depth sweep")
	fs.IntVar(&o.SweepReps, "sweep-r", 2, "repetitions of each sweep point, after one warm-up")
	fs.Int64Var(&f.bwMiB, "bw-mib", 1024, "bandwidth probe buffer in MiB (at least 4× L3 is used; 0: no probe)")
	fs.BoolVar(&f.peak, "peak", true, "probe the float32 FMA and int8 multiply-add peaks and report prefill as a share of them (--peak=false: skip)")
	fs.StringVar(&f.kvType, "kv-cache-type", "f16", "KV cache element type: f32, f16 or q8_0")
}

// Check validates the flags (before any model is loaded) and fills in
// Options from them; errors name the flag.
func (f *Flags) Check() error {
	t, o := &f.Target, &f.Options
	if (t.Path == "") == (t.Synthetic == "") {
		return ErrNoModel
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"r", o.Reps}, {"threads", t.Threads}, {"batch", o.Batch}, {"sweep-n", o.SweepGen}, {"sweep-r", o.SweepReps}} {
		if c.v < 1 {
			return fmt.Errorf("--%s %d: want at least 1", c.name, c.v)
		}
	}
	if f.bwMiB < 0 {
		return fmt.Errorf("--bw-mib %d: want a size in MiB (0: no probe)", f.bwMiB)
	}
	kv, err := kvcache.ParseType(f.kvType)
	if err != nil {
		return fmt.Errorf("--kv-cache-type %s: want f32, f16 or q8_0", f.kvType)
	}
	o.KVType, o.Seed, o.Threads, o.NoPeak, o.BandwidthBytes = kv, t.Seed, t.Threads, !f.peak, f.bwMiB<<20
	if f.bwMiB <= 0 {
		o.BandwidthBytes = -1
	}
	for _, l := range []struct {
		name string
		s    string
		to   *[]int
	}{{"p", f.prompts, &o.Prompts}, {"n", f.gens, &o.Gens}, {"depths", f.depths, &o.Depths}, {"gen-lens", f.genLens, &o.GenLens}} {
		if *l.to, err = intList(l.name, l.s); err != nil {
			return err
		}
	}
	return nil
}

// intList parses "128,512" (empty or "none": an empty, non-nil list).
func intList(name, s string) ([]int, error) {
	out := []int{}
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("-%s: %q is not a list of non-negative integers", name, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// ServeFlags binds nanoserve bench serve's flags: the ServeOptions, whose
// prompts Check reads from the --prompts file.
type ServeFlags struct {
	ServeOptions
	promptFile string
}

// RegisterFlags adds bench serve's flags to fs.
func (f *ServeFlags) RegisterFlags(fs *flag.FlagSet) {
	o := &f.ServeOptions
	fs.StringVar(&o.BaseURL, "base-url", "http://127.0.0.1:8080", "the server to measure")
	fs.StringVar(&o.Endpoint, "endpoint", "/v1/completions", "/v1/completions, /v1/chat/completions or /infill (llama-server's fill-in-the-middle: input_prefix/input_suffix)")
	fs.StringVar(&o.Model, "model", "", "the request's \"model\" field (default: omitted; our server then uses its model)")
	fs.StringVar(&o.APIKey, "api-key", os.Getenv("NANOSERVE_API_KEY"), "bearer token (default: $NANOSERVE_API_KEY)")
	fs.IntVar(&o.NumPrompts, "num-prompts", 0, "timed requests (0: 100, or the prompt file's count)")
	fs.IntVar(&o.Concurrency, "concurrency", 0, "most requests in flight at once (0: no limit)")
	fs.Float64Var(&o.RequestRate, "request-rate", 0, "Poisson arrivals per second, seeded (0: all requests at once)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the synthetic prompts and the arrival times")
	fs.IntVar(&o.InputLen, "input-len", 32, "words per synthetic prompt (about a token each on real vocabularies; the report counts the server's tokens)")
	fs.IntVar(&o.OutputLen, "output-len", 128, "max_tokens of every request (with --ignore-eos: exactly this many)")
	fs.IntVar(&o.SharedPrefixLen, "shared-prefix-len", 0, "words of one system prompt every request shares (many users, one long system prompt; 0: none)")
	fs.BoolVar(&o.IgnoreEOS, "ignore-eos", true, "send ignore_eos so every request produces --output-len tokens")
	fs.StringVar(&f.promptFile, "prompts", "", "JSONL prompt file: {\"prompt\": ..., \"system\": ..., \"suffix\": ... (/infill), \"max_tokens\": N} per line (default: synthetic prompts)")
	fs.IntVar(&o.Warmup, "warmup", 1, "untimed requests first")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "per-request time limit (0: none)")
}

// Check validates the flags and reads the --prompts file; errors name the
// flag (or the file).
func (f *ServeFlags) Check() error {
	o := &f.ServeOptions
	for _, c := range []struct {
		name string
		v    int
	}{{"num-prompts", o.NumPrompts}, {"concurrency", o.Concurrency}, {"input-len", o.InputLen}, {"output-len", o.OutputLen},
		{"shared-prefix-len", o.SharedPrefixLen}, {"warmup", o.Warmup}} {
		if c.v < 0 {
			return fmt.Errorf("--%s %d: want 0 or more", c.name, c.v)
		}
	}
	if o.RequestRate < 0 || o.RequestRate != o.RequestRate {
		return fmt.Errorf("--request-rate %v: want requests per second (0: all at once)", o.RequestRate)
	}
	if f.promptFile == "" {
		return nil
	}
	r, err := os.Open(f.promptFile)
	if err != nil {
		return err
	}
	defer r.Close()
	if o.Prompts, err = LoadPrompts(r); err != nil {
		return fmt.Errorf("%s: %w", f.promptFile, err)
	}
	return nil
}
