package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/tensor"
)

// Options select what Run measures. Zero values take the defaults noted.
type Options struct {
	Prompts   []int // pp tests: prompt lengths (nil: 128, 512; empty non-nil: none)
	Gens      []int // tg tests: decode lengths (nil: 128; empty non-nil: none)
	Reps      int   // timed repetitions after one warm-up (≤ 0: 3)
	Batch     int   // prefill tokens per Forward call (≤ 0: 512, the engine's chunk)
	Depths    []int // depth sweep: context depths (nil: 0, 128, 512, 1024; empty: off)
	GenLens   []int // generated-length sweep checkpoints (nil: 32, 64, 128, 256; empty: off)
	SweepGen  int   // decode tokens per depth-sweep point (≤ 0: 32)
	SweepReps int   // repetitions per sweep point (≤ 0: 2)
	Seed      uint64
	KVType    tensor.DType // KV cache element type (zero: F32)

	// Bandwidth probe: BandwidthBytes of buffer (0: 1 GiB; < 0: no probe).
	BandwidthBytes int64
	Threads        int // threads of the probes' second measurement (≤ 0: the model's pool)
	// NoPeak skips the compute-peak probe (ProbePeak); PeakDur is the
	// length of one of its passes (≤ 0: 20 ms).
	NoPeak  bool
	PeakDur time.Duration

	Progress io.Writer // one line per finished test; nil: silent

	smallProbe bool // tests: probe BandwidthBytes as given, without the 4×L3 floor
}

func (o *Options) defaults(m *model.Model) {
	if o.Prompts == nil {
		o.Prompts = []int{128, 512}
	}
	if o.Gens == nil {
		o.Gens = []int{128}
	}
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if o.Batch <= 0 {
		o.Batch = 512
	}
	if o.Depths == nil {
		o.Depths = []int{0, 128, 512, 1024}
	}
	if o.GenLens == nil {
		o.GenLens = []int{32, 64, 128, 256}
	}
	if o.SweepGen <= 0 {
		o.SweepGen = 32
	}
	if o.SweepReps <= 0 {
		o.SweepReps = 2
	}
	if o.BandwidthBytes == 0 {
		o.BandwidthBytes = 1 << 30
	}
	if o.Threads <= 0 {
		o.Threads = m.Pool().Threads()
	}
}

// Stats summarises repeated measurements: mean and sample standard
// deviation (n−1; 0 for a single sample), and the samples themselves.
type Stats struct {
	Mean    float64   `json:"mean"`
	SD      float64   `json:"sd"`
	Samples []float64 `json:"samples"`
}

func newStats(xs []float64) Stats {
	s := Stats{Samples: xs}
	if len(xs) == 0 {
		return s
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var v float64
		for _, x := range xs {
			v += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(v / float64(len(xs)-1))
	}
	return s
}

// Test is one pp or tg measurement.
type Test struct {
	Name    string `json:"name"` // "pp512", "tg128", "tg32@d512"
	Kind    string `json:"kind"` // "pp" or "tg"
	NPrompt int    `json:"n_prompt"`
	NGen    int    `json:"n_gen"`
	Depth   int    `json:"depth"` // tokens in the cache before the timed part
	Reps    int    `json:"reps"`

	TokS Stats `json:"tok_s"` // tokens per second
	// LatencyMs is the prefill time (pp) or the time per decoded token (tg).
	LatencyMs Stats `json:"latency_ms"`

	// Decode only: weight bytes streamed per second at the mean rate, that
	// as a share of the probed Threads-worker bandwidth, and the KV-cache
	// bytes a step reads at this depth (mean over the run).
	WeightGBps    float64 `json:"weight_gbps,omitempty"`
	BandwidthFrac float64 `json:"bandwidth_frac,omitempty"`
	KVBytes       int64   `json:"kv_bytes_per_token,omitempty"`
	// The tg tests of Options.Gens, with the probe on: the mean rate of
	// a read of the model's own weights interleaved with the test's
	// decode steps (pairedRead), and the decode's weight GB/s as a share
	// of it.
	ReadGBps float64 `json:"paired_read_gbps,omitempty"`
	ReadFrac float64 `json:"paired_read_frac,omitempty"`

	// Prefill only: the arithmetic of one prompt (prefillOps: matrix
	// products at 2 ops per weight, attention's 4·ctx·q_dim per layer and
	// position) split into float ops and int8 ops (quantized weights'
	// integer dots), the rate achieved in 1e9 ops/s, and the share of the
	// probed Threads-worker peaks: time at peak (float at the FMA peak,
	// int8 at the int8 peak) / measured time.
	FloatOps float64 `json:"float_ops,omitempty"`
	Int8Ops  float64 `json:"int8_ops,omitempty"`
	GOps     float64 `json:"gops,omitempty"`
	PeakFrac float64 `json:"peak_frac,omitempty"`

	// Hand-offs (tensor.PoolStats over the timed repetitions): jobs
	// handed to the worker pool per token, and the share of the test's
	// time the caller spent waiting at the end-of-job barrier; of the
	// jobs, the share that had to wake a parked worker, and the share of
	// the background workers' places in them that workers took (1: every
	// worker joined every job; low when the cores are busy elsewhere).
	Dispatches   float64 `json:"dispatches_per_token,omitempty"`
	PoolWaitFrac float64 `json:"pool_wait_frac,omitempty"`
	PoolWakeFrac float64 `json:"pool_wake_frac,omitempty"`
	PoolJoinFrac float64 `json:"pool_join_frac,omitempty"`

	Skipped string `json:"skipped,omitempty"` // why it was not run
}

// GenPoint is one checkpoint of the generated-length sweep.
type GenPoint struct {
	NGen int `json:"n_gen"`
	// CumTokS: NGen / time to decode tokens 1..NGen from an empty cache.
	CumTokS Stats `json:"cum_tok_s"`
	// WindowTokS: rate over the tokens since the previous checkpoint.
	WindowTokS Stats `json:"window_tok_s"`
}

// ModelInfo describes what was measured.
type ModelInfo struct {
	Path      string `json:"path"`
	Synthetic string `json:"synthetic,omitempty"` // shape name
	Type      string `json:"type"`                // mix name, or the matrix types by share of bytes
	Seed      uint64 `json:"seed,omitempty"`
	Arch      string `json:"arch"`
	Dim       int    `json:"dim"`
	Layers    int    `json:"layers"`
	Heads     int    `json:"heads"`
	KVHeads   int    `json:"kv_heads"`
	FFN       int    `json:"ffn"`
	Vocab     int    `json:"vocab"`
	Ctx       int    `json:"ctx"`
	Tied      bool   `json:"tied"`
	Params    int64  `json:"params"`
	// WeightBytes: all tensors. DecodeBytes: what one decode step reads
	// (every matrix but the embeddings, one row of each embedding, and a
	// tied embedding once more in full as the output matrix, plus vectors).
	WeightBytes int64   `json:"weight_bytes"`
	DecodeBytes int64   `json:"decode_bytes_per_token"`
	FileBytes   int64   `json:"file_bytes"`
	LoadMs      float64 `json:"load_ms"`
	GenerateMs  float64 `json:"generate_ms,omitempty"` // writing the synthetic file (0: cached)
	KVType      string  `json:"kv_cache_type"`         // Options.KVType, set by Run
	// Weights: where the weights are held and their memory, as the run
	// ended (model.WeightMemory; set by Run).
	Weights model.WeightMemory `json:"weights"`
}

// System describes the machine at measurement time.
type System struct {
	OS        string     `json:"os"`
	Arch      string     `json:"arch"`
	CPU       string     `json:"cpu"`
	NumCPU    int        `json:"num_cpu"`
	Threads   int        `json:"threads"`
	GoVersion string     `json:"go_version"`
	LoadStart [3]float64 `json:"loadavg_start"` // /proc/loadavg when Run started
	LoadEnd   [3]float64 `json:"loadavg_end"`
	Start     time.Time  `json:"start"`
}

// Result is everything Run measured; it marshals to the --json output.
type Result struct {
	Model      ModelInfo  `json:"model"`
	System     System     `json:"system"`
	Bandwidth  *Bandwidth `json:"bandwidth,omitempty"`
	TgLimit    float64    `json:"tg_limit_tok_s,omitempty"` // Bandwidth.GBpsN / DecodeBytes
	Peak       *Peak      `json:"peak,omitempty"`           // compute-peak probe (nil: not run)
	Tests      []Test     `json:"tests"`
	DepthSweep []Test     `json:"depth_sweep,omitempty"`
	GenSweep   []GenPoint `json:"gen_sweep,omitempty"`
	PeakRSS    int64      `json:"peak_rss_bytes"`
	RSSNote    string     `json:"peak_rss_note,omitempty"`
	Seconds    float64    `json:"seconds"`
}

// runner holds the state of one Run.
type runner struct {
	m     *model.Model
	cache *kvcache.Cache
	opts  *Options
	rng   rng
	res   *Result

	toks []int
	pos  []int
	seqs []*kvcache.Seq

	pair *pairedRead // nil: no paired read (no probe)
}

// decodeBytes computes ModelInfo's byte counts from the tensor list.
func decodeBytes(m *model.Model) (params, weight, decode int64, types map[tensor.DType]int64) {
	types = map[tensor.DType]int64{}
	tied := true
	for _, t := range m.Tensors {
		if t.Name == "output.weight" {
			tied = false
		}
	}
	for _, t := range m.Tensors {
		if len(t.Shape) == 0 {
			continue
		}
		cols := t.Shape[len(t.Shape)-1]
		rows := int64(1)
		for _, d := range t.Shape[:len(t.Shape)-1] {
			rows *= int64(d)
		}
		rb, err := t.Type.RowBytes(cols)
		if err != nil {
			continue
		}
		b := rows * int64(rb)
		params += rows * int64(cols)
		weight += b
		if len(t.Shape) >= 2 {
			types[t.Type] += b
		}
		switch {
		case strings.Contains(t.Name, "_exps.") && m.Experts > 0:
			decode += b * int64(m.ExpertsUsed) / int64(m.Experts) // only the chosen experts are read
		case t.Name == "token_embd.weight" || t.Name == "position_embd.weight":
			decode += int64(rb)
			if t.Name == "token_embd.weight" && tied {
				decode += b
			}
		default:
			decode += b
		}
	}
	return
}

// Describe fills the ModelInfo of a loaded model.
func Describe(m *model.Model, path string) ModelInfo {
	params, weight, dec, types := decodeBytes(m)
	info := ModelInfo{Path: path, Type: typeSummary(types), Arch: m.Arch, Dim: m.Dim, Layers: m.Layers,
		Heads: m.Heads, KVHeads: m.KVHeads, FFN: m.HiddenDim, Vocab: m.Vocab, Ctx: m.ContextLen, Tied: m.Tied,
		Params: params, WeightBytes: weight, DecodeBytes: dec}
	if fi, err := os.Stat(path); err == nil {
		info.FileBytes = fi.Size()
	}
	return info
}

// Run measures m. info describes it (Describe, plus what the caller knows,
// e.g. the synthetic shape); Run fills the rest of the Result.
func Run(m *model.Model, info ModelInfo, opts Options) (*Result, error) {
	o := opts
	o.defaults(m)
	for _, l := range [][]int{o.Prompts, o.Gens, o.Depths, o.GenLens} {
		for _, n := range l {
			if n < 0 {
				return nil, fmt.Errorf("bench: negative token count %d", n)
			}
		}
	}
	t0 := time.Now()
	res := &Result{Model: info, System: systemInfo(m.Pool().Threads())}
	res.Model.KVType = strings.ToLower(o.KVType.String())
	res.System.Start = t0
	res.System.LoadStart = loadAvg()

	if o.BandwidthBytes > 0 {
		probeFn := Probe
		if o.smallProbe {
			probeFn = probe
		}
		bw, err := probeFn(o.BandwidthBytes, o.Threads, 5)
		if err != nil {
			return nil, err
		}
		res.Bandwidth = &bw
		if info.DecodeBytes > 0 {
			res.TgLimit = bw.GBpsN * 1e9 / float64(info.DecodeBytes)
		}
		o.logf("bandwidth: %.1f GB/s (1 thread), %.1f GB/s (%d threads), buffer %d MiB", bw.GBps1, bw.GBpsN, bw.Threads, bw.BufferBytes>>20)
		runtime.GC()
		debug.FreeOSMemory()
	}
	if !o.NoPeak {
		p := ProbePeak(o.Threads, 10, o.PeakDur)
		res.Peak = &p
		if p.Measured {
			o.logf("peak: FMA %.1f / %.1f GFLOP/s, int8 %.1f / %.1f GOP/s (1 / %d threads)", p.FMA1, p.FMAN, p.Int8_1, p.Int8N, p.Threads)
			if p.FMA512N > 0 {
				o.logf("peak: FMA ymm %.1f / %.1f, zmm %.1f / %.1f GFLOP/s; float kernels %s", p.FMA256_1, p.FMA256N, p.FMA512_1, p.FMA512N, tensor.FloatKernels())
			}
		} else {
			o.logf("peak: %s", p.Kernel)
		}
	}
	// Peak RSS should cover the model and the run, not the probe buffer.
	res.RSSNote = resetPeakRSS()

	// One sequence at a time: the cache needs the longest sequence a test
	// builds.
	need := 1
	for _, p := range o.Prompts {
		need = max(need, p)
	}
	for _, n := range o.Gens {
		need = max(need, n)
	}
	if len(o.Depths) > 0 {
		need = max(need, slices.Max(o.Depths)+o.SweepGen)
	}
	if len(o.GenLens) > 0 {
		need = max(need, slices.Max(o.GenLens))
	}
	hard := hardContext(m)
	if hard > 0 {
		need = min(need, hard)
	}
	cache, err := m.NewCacheType(need, o.KVType)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r := &runner{m: m, cache: cache, opts: &o, rng: newRNG(o.Seed ^ 0x746f6b656e73), res: res}
	if o.BandwidthBytes > 0 && info.DecodeBytes > 0 {
		r.pair = newPairedRead(m.WeightData(), o.Threads)
	}
	fits := func(n int) string {
		if hard > 0 && n > hard {
			return fmt.Sprintf("needs %d positions, the model has %d (learned positions)", n, hard)
		}
		return ""
	}

	for _, p := range o.Prompts {
		if p == 0 {
			continue
		}
		t := Test{Name: fmt.Sprintf("pp%d", p), Kind: "pp", NPrompt: p, Reps: o.Reps}
		if t.Skipped = fits(p); t.Skipped == "" {
			if err := r.pp(&t); err != nil {
				return nil, err
			}
			t.FloatOps, t.Int8Ops = prefillOps(m, p, o.Batch)
		}
		res.Tests = append(res.Tests, t)
		o.logTest(&t)
	}
	for _, n := range o.Gens {
		if n == 0 {
			continue
		}
		t := Test{Name: fmt.Sprintf("tg%d", n), Kind: "tg", NGen: n, Reps: o.Reps}
		if t.Skipped = fits(n); t.Skipped == "" {
			if err := r.tgDepths([]*Test{&t}, r.pair); err != nil {
				return nil, err
			}
		}
		res.Tests = append(res.Tests, t)
		o.logTest(&t)
	}
	if len(o.Depths) > 0 {
		ds := slices.Clone(o.Depths)
		slices.Sort(ds)
		ds = slices.Compact(ds)
		var run []*Test
		res.DepthSweep = make([]Test, len(ds))
		for i, d := range ds {
			t := &res.DepthSweep[i]
			*t = Test{Name: fmt.Sprintf("tg%d@d%d", o.SweepGen, d), Kind: "tg", NGen: o.SweepGen, Depth: d, Reps: o.SweepReps}
			if t.Skipped = fits(d + o.SweepGen); t.Skipped == "" {
				run = append(run, t)
			}
		}
		if err := r.tgDepths(run, nil); err != nil {
			return nil, err
		}
		for i := range res.DepthSweep {
			o.logTest(&res.DepthSweep[i])
		}
	}
	if len(o.GenLens) > 0 {
		ls := slices.Clone(o.GenLens)
		slices.Sort(ls)
		ls = slices.Compact(ls)
		if ls[0] == 0 {
			ls = ls[1:]
		}
		if hard > 0 {
			ls = slices.DeleteFunc(ls, func(n int) bool { return n > hard })
		}
		if len(ls) > 0 {
			pts, err := r.genSweep(ls)
			if err != nil {
				return nil, err
			}
			res.GenSweep = pts
			for _, p := range pts {
				o.logf("gen sweep: %d tokens: %.2f tok/s cumulative, %.2f tok/s in window", p.NGen, p.CumTokS.Mean, p.WindowTokS.Mean)
			}
		}
	}
	res.prefillShares()
	res.PeakRSS = peakRSS()
	res.Model.Weights = m.WeightMemory()
	res.System.LoadEnd = loadAvg()
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}

// hardContext is the position limit Forward enforces (GPT-2's learned
// positions), or 0 if positions are unbounded (RoPE).
func hardContext(m *model.Model) int {
	if m.Arch == model.ArchGPT2 {
		return m.ContextLen
	}
	return 0
}

func (o *Options) logf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

func (o *Options) logTest(t *Test) {
	if t.Skipped != "" {
		o.logf("%s: skipped: %s", t.Name, t.Skipped)
		return
	}
	if t.Dispatches > 0 {
		o.logf("%s: %.2f ± %.2f tok/s (%.1f pool dispatches per token, %.1f%% of the time waiting at their barriers, %.0f%% waking a worker, %.0f%% of worker places taken)",
			t.Name, t.TokS.Mean, t.TokS.SD, t.Dispatches, 100*t.PoolWaitFrac, 100*t.PoolWakeFrac, 100*t.PoolJoinFrac)
		return
	}
	o.logf("%s: %.2f ± %.2f tok/s", t.Name, t.TokS.Mean, t.TokS.SD)
}

// handoffs fills t's pool counters: st over the timed part (wall seconds)
// that processed tokens tokens.
func handoffs(t *Test, st tensor.PoolStats, threads, tokens int, wall float64) {
	if tokens > 0 && wall > 0 {
		t.Dispatches = float64(st.Dispatches) / float64(tokens)
		t.PoolWaitFrac = st.Wait.Seconds() / wall
	}
	if st.Dispatches > 0 {
		t.PoolWakeFrac = float64(st.Wakes) / float64(st.Dispatches)
		t.PoolJoinFrac = float64(st.Joins) / float64(st.Dispatches*uint64(max(threads-1, 1)))
	}
}

// randomTokens fills r.toks with n random ids.
func (r *runner) randomTokens(n int) []int {
	r.toks = r.toks[:0]
	for range n {
		r.toks = append(r.toks, int(r.rng.next()%uint64(r.m.Vocab)))
	}
	return r.toks
}

// forward runs toks at positions pos0.. of seq (rewinding it to pos0 if
// it is longer), in chunks of at most Batch tokens, as the engine does.
func (r *runner) forward(seq *kvcache.Seq, toks []int, pos0 int) error {
	if seq.Len > pos0 {
		r.cache.Truncate(seq, pos0)
	}
	for len(toks) > 0 {
		n := min(len(toks), r.opts.Batch)
		if err := r.cache.Reserve(seq, pos0+n-seq.Len); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		r.pos, r.seqs = r.pos[:0], r.seqs[:0]
		for i := range n {
			r.pos = append(r.pos, pos0+i)
			r.seqs = append(r.seqs, seq)
		}
		if _, err := r.m.Forward(model.Batch{Tokens: toks[:n], Pos: r.pos, Seq: r.seqs}, r.cache); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		toks, pos0 = toks[n:], pos0+n
	}
	return nil
}

// pp times a prefill of t.NPrompt tokens into a fresh sequence.
func (r *runner) pp(t *Test) error {
	var rates, lat []float64
	var wall float64
	for rep := range r.opts.Reps + 1 {
		if rep == 1 {
			r.m.Pool().ResetStats()
		}
		seq := &kvcache.Seq{}
		toks := r.randomTokens(t.NPrompt)
		if err := r.cache.Reserve(seq, t.NPrompt); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		start := time.Now()
		err := r.forward(seq, toks, 0)
		dt := time.Since(start).Seconds()
		r.cache.Release(seq)
		if err != nil {
			return err
		}
		if rep > 0 { // rep 0 warms up
			rates = append(rates, float64(t.NPrompt)/dt)
			lat = append(lat, dt*1e3)
			wall += dt
		}
	}
	t.TokS, t.LatencyMs = newStats(rates), newStats(lat)
	handoffs(t, r.m.Pool().Stats(), r.m.Pool().Threads(), t.NPrompt*r.opts.Reps, wall)
	return nil
}

// decode runs n single-token steps at positions pos0.. of seq and returns
// the time after each step, from the start. With pair non-nil, pair
// reads pairTokens tokens' worth of weights after every pairEvery steps,
// outside the returned times.
func (r *runner) decode(seq *kvcache.Seq, n, pos0 int, stamps []time.Duration, pair *pairedRead) ([]time.Duration, error) {
	if seq.Len > pos0 {
		r.cache.Truncate(seq, pos0)
	}
	if seq.Len < pos0 {
		// A hybrid model's recurrent state cannot be rewound: Truncate
		// went back to the snapshot below (or to 0); recompute the rest,
		// untimed.
		if err := r.forward(seq, r.randomTokens(pos0-seq.Len), seq.Len); err != nil {
			return nil, err
		}
	}
	// Hybrid models: the next rewind to pos0 restores this copy of the
	// state (a no-op for attention-only models).
	r.cache.Snapshot(seq)
	if err := r.cache.Reserve(seq, pos0+n-seq.Len); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	toks := r.randomTokens(n)
	stamps = stamps[:0]
	one := [1]*kvcache.Seq{seq}
	var tok, pos [1]int
	var paused time.Duration
	start := time.Now()
	for i := range n {
		tok[0], pos[0] = toks[i], pos0+i
		if _, err := r.m.Forward(model.Batch{Tokens: tok[:], Pos: pos[:], Seq: one[:]}, r.cache); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		stamps = append(stamps, time.Since(start)-paused)
		if pair != nil && (i+1)%pairEvery == 0 && i+1 < n {
			t0 := time.Now()
			pair.read(pairTokens * r.res.Model.DecodeBytes)
			paused += time.Since(t0)
		}
	}
	return stamps, nil
}

// tgDepths measures decode tests in increasing Depth order on one
// sequence: it is prefilled (untimed) up to each test's depth, then
// decodes NGen tokens, rewound Reps+1 times (the first warms up). With
// pair non-nil the timed repetitions are interleaved with its reads
// (Test.ReadGBps).
func (r *runner) tgDepths(tests []*Test, pair *pairedRead) error {
	seq := &kvcache.Seq{}
	defer r.cache.Release(seq)
	var stamps []time.Duration
	for _, t := range tests {
		if seq.Len > t.Depth {
			r.cache.Truncate(seq, t.Depth)
		}
		if seq.Len < t.Depth {
			if err := r.forward(seq, r.randomTokens(t.Depth-seq.Len), seq.Len); err != nil {
				return err
			}
		}
		var rates, lat []float64
		var wall float64
		for rep := range t.Reps + 1 {
			var p *pairedRead
			if rep > 0 {
				p = pair
			}
			if rep == 1 {
				r.m.Pool().ResetStats()
				if pair != nil {
					pair.reset()
				}
			}
			var err error
			if stamps, err = r.decode(seq, t.NGen, t.Depth, stamps, p); err != nil {
				return err
			}
			if rep > 0 {
				dt := stamps[len(stamps)-1].Seconds()
				rates = append(rates, float64(t.NGen)/dt)
				lat = append(lat, dt*1e3/float64(t.NGen))
				wall += dt
			}
		}
		t.TokS, t.LatencyMs = newStats(rates), newStats(lat)
		handoffs(t, r.m.Pool().Stats(), r.m.Pool().Threads(), t.NGen*t.Reps, wall)
		r.bandwidth(t)
		if pair != nil {
			if t.ReadGBps = pair.gbps(); t.ReadGBps > 0 {
				t.ReadFrac = t.WeightGBps / t.ReadGBps
			}
		}
	}
	return nil
}

// bandwidth fills a decode test's weight GB/s and bandwidth share.
func (r *runner) bandwidth(t *Test) {
	t.KVBytes = r.m.KVBytesPerToken(r.opts.KVType) * int64(t.Depth+t.NGen/2)
	t.WeightGBps = float64(r.res.Model.DecodeBytes) * t.TokS.Mean / 1e9
	if bw := r.res.Bandwidth; bw != nil && bw.GBpsN > 0 {
		t.BandwidthFrac = t.WeightGBps / bw.GBpsN
	}
}

// genSweep decodes max(lens) tokens from an empty cache SweepReps times
// (after a warm-up) and reports the rate at each checkpoint.
func (r *runner) genSweep(lens []int) ([]GenPoint, error) {
	n := slices.Max(lens)
	seq := &kvcache.Seq{}
	defer r.cache.Release(seq)
	cum := make([][]float64, len(lens))
	win := make([][]float64, len(lens))
	var stamps []time.Duration
	for rep := range r.opts.SweepReps + 1 {
		var err error
		if stamps, err = r.decode(seq, n, 0, stamps, nil); err != nil {
			return nil, err
		}
		if rep == 0 {
			continue
		}
		prevN, prevT := 0, 0.0
		for i, l := range lens {
			tl := stamps[l-1].Seconds()
			cum[i] = append(cum[i], float64(l)/tl)
			win[i] = append(win[i], float64(l-prevN)/(tl-prevT))
			prevN, prevT = l, tl
		}
	}
	pts := make([]GenPoint, len(lens))
	for i, l := range lens {
		pts[i] = GenPoint{NGen: l, CumTokS: newStats(cum[i]), WindowTokS: newStats(win[i])}
	}
	return pts, nil
}

// ErrNoModel is returned by the CLI helpers when neither a model nor a
// synthetic shape is given.
var ErrNoModel = errors.New("bench: no model (give --model PATH or --synthetic NAME)")
