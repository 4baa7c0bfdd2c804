package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"nanoserve/bench"
	"nanoserve/kvcache"
)

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

func runBench(args []string) error {
	if len(args) > 0 && args[0] == "serve" {
		return runBenchServe(args[1:])
	}
	fs := newFlags("bench")
	modelPath := fs.String("model", "", "model to measure: GGUF file, Hugging Face directory or llama2.c .bin")
	tokPath := fs.String("tokenizer", "", "tokenizer (only needed to load llama2.c checkpoints)")
	synth := fs.String("synthetic", "", "measure a seeded random-weight model of a standard shape: "+strings.Join(bench.ShapeNames(), ", "))
	typ := fs.String("type", "f16", "weight type of the synthetic model: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q6_k, q4_k_s, q4_k_m, q5_k_s, q5_k_m")
	seed := fs.Uint64("seed", 1, "seed of the synthetic weights and of the random prompt tokens")
	cacheDir := fs.String("cache-dir", "", "where synthetic models are kept (default "+bench.CacheDir()+")")
	prompts := fs.String("p", "128,512", "prompt lengths to prefill (pp tests), comma-separated")
	gens := fs.String("n", "128", "decode lengths (tg tests), comma-separated")
	reps := fs.Int("r", 3, "timed repetitions of each test, after one warm-up")
	threads := fs.Int("threads", defaultThreads(), "worker threads")
	noMmap := fs.Bool("no-mmap", false, noMmapUsage)
	batch := fs.Int("batch", 512, "prefill tokens per forward call")
	depths := fs.String("depths", "0,128,512,1024", "decode-rate sweep: context depths (\"none\": off)")
	genLens := fs.String("gen-lens", "32,64,128,256", "decode-rate sweep: generated lengths (\"none\": off)")
	sweepN := fs.Int("sweep-n", 32, "tokens decoded at each depth of the depth sweep")
	sweepR := fs.Int("sweep-r", 2, "repetitions of each sweep point, after one warm-up")
	bwMiB := fs.Int64("bw-mib", 1024, "bandwidth probe buffer in MiB (at least 4× L3 is used; 0: no probe)")
	peak := fs.Bool("peak", true, "probe the float32 FMA and int8 multiply-add peaks and report prefill as a share of them (--peak=false: skip)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	kvType := fs.String("kv-cache-type", "f16", "KV cache element type: f32, f16 or q8_0")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if (*modelPath == "") == (*synth == "") {
		return bench.ErrNoModel
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"r", *reps}, {"threads", *threads}, {"batch", *batch}, {"sweep-n", *sweepN}, {"sweep-r", *sweepR}} {
		if c.v < 1 {
			return errFlag(c.name, c.v, "want at least 1")
		}
	}
	if *bwMiB < 0 {
		return errFlag("bw-mib", *bwMiB, "want a size in MiB (0: no probe)")
	}
	kv, err := kvcache.ParseType(*kvType)
	if err != nil {
		return errFlag("kv-cache-type", *kvType, "want f32, f16 or q8_0")
	}
	opts := bench.Options{KVType: kv, Reps: *reps, Batch: *batch, SweepGen: *sweepN, SweepReps: *sweepR, Seed: *seed,
		Threads: *threads, BandwidthBytes: *bwMiB << 20, NoPeak: !*peak, Progress: os.Stderr}
	if *bwMiB <= 0 {
		opts.BandwidthBytes = -1
	}
	if opts.Prompts, err = intList("p", *prompts); err != nil {
		return err
	}
	if opts.Gens, err = intList("n", *gens); err != nil {
		return err
	}
	if opts.Depths, err = intList("depths", *depths); err != nil {
		return err
	}
	if opts.GenLens, err = intList("gen-lens", *genLens); err != nil {
		return err
	}

	res, err := bench.Measure(bench.Target{Path: *modelPath, Tokenizer: *tokPath, Synthetic: *synth, Type: *typ, Seed: *seed,
		CacheDir: *cacheDir, Threads: *threads, NoMmap: *noMmap, Log: os.Stderr}, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(res)
	}
	return bench.WriteMarkdown(os.Stdout, res)
}

// runBenchServe is `nanoserve bench serve`: load a running OpenAI-compatible
// server and measure it from the client (package bench, RunServe).
func runBenchServe(args []string) error {
	fs := newFlags("bench serve")
	var o bench.ServeOptions
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
	promptFile := fs.String("prompts", "", "JSONL prompt file: {\"prompt\": ..., \"system\": ..., \"suffix\": ... (/infill), \"max_tokens\": N} per line (default: synthetic prompts)")
	fs.IntVar(&o.Warmup, "warmup", 1, "untimed requests first")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "per-request time limit (0: none)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"num-prompts", o.NumPrompts}, {"concurrency", o.Concurrency}, {"input-len", o.InputLen}, {"output-len", o.OutputLen},
		{"shared-prefix-len", o.SharedPrefixLen}, {"warmup", o.Warmup}} {
		if c.v < 0 {
			return errFlag(c.name, c.v, "want 0 or more")
		}
	}
	if o.RequestRate < 0 || o.RequestRate != o.RequestRate {
		return errFlag("request-rate", o.RequestRate, "want requests per second (0: all at once)")
	}
	if *promptFile != "" {
		f, err := os.Open(*promptFile)
		if err != nil {
			return err
		}
		o.Prompts, err = bench.LoadPrompts(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *promptFile, err)
		}
	}
	o.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := bench.RunServe(ctx, o)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(res)
	}
	return bench.WriteServeMarkdown(os.Stdout, res)
}
