package train

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"nanoserve/gguf"
	"nanoserve/internal/progress"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

// ErrNotPromoted is returned (wrapped, with the reason) when the release
// gate keeps the previous model.
var ErrNotPromoted = errors.New("train: new model not promoted")

// Options configure Run.
type Options struct {
	Corpus  []string // files or directories
	Exts    []string // file name suffixes to read from directories (none: all)
	HeldOut float64  // fraction of documents held out (default 0.05)

	Shape Config // Vocab is the tokenizer size to train
	// FIMRate is the fraction of training chunks made fill-in-the-middle
	// samples (fim.go); > 0 also reserves the FIM tokens in the tokenizer.
	FIMRate float64
	// FIMWeight weighs the loss of a FIM sample's middle tokens (and the
	// end token after them) against every other token's 1 (0: 1). Middles
	// are a few percent of the tokens, yet they alone teach the model to
	// use the suffix.
	FIMWeight float64
	// FIMFirstWeight weighs the middle's first token — predicted at the
	// <|fim_middle|> marker, where the model must reach past the marker
	// to the end of the prefix — (0: FIMWeight).
	FIMFirstWeight float64
	// FIMSPMRate is the fraction of FIM samples laid out suffix first
	// (0: half; see FIMData.SPMRate).
	FIMSPMRate float64
	// FIMChunkTokens is the length of the chunks the documents are cut
	// into before some become FIM samples, in tokens (0: the context, so
	// a sample fills about 0.85 of a window). Shorter chunks pack several
	// samples, and several middles, into each window.
	FIMChunkTokens int
	// FIMLineStart is the fraction of rest-of-line middles that start
	// right after the indentation (FIMData.LineStart; 0: at a random
	// character, as the base run drew them).
	FIMLineStart float64
	// FIMBlockRate is the fraction of FIM middles drawn as block bodies
	// before the usual mix (FIMData.BlockRate; 0: the mix alone).
	FIMBlockRate float64
	// InitFrom starts from the weights and tokenizer of a model this
	// package wrote (ReadParams) instead of a fresh initialization: a
	// fine-tune, with a fresh optimizer and schedule. Not with Resume from
	// an existing checkpoint (the checkpoint wins).
	InitFrom string
	// FreezeInit trains only the blocks that growing added (the requested
	// shape has more layers than InitFrom's model; ReadParams): the
	// model's own weights stay as they are, so what it could do it still
	// does (LLaMA Pro's block expansion). The same flags resume it.
	FreezeInit bool
	BPEBytes   int // cap on text used to train the tokenizer (0: 8 MB)
	Batch      int // sequences per step
	Steps      int
	LR, MinLR  float64
	Warmup     int
	WD, Clip   float64
	Seed       uint64
	Threads    int

	EvalEvery  int // steps between held-out evaluations (0: only at the end)
	EvalTokens int // held-out tokens scored per evaluation (0: 32768)
	// FinalEvalTokens caps the final evaluation that the release gate
	// uses, model and baseline alike (0: the whole held-out split).
	FinalEvalTokens int

	Out             string       // promoted model path
	Prev            string       // last known-good model ("" : none; Out itself if it exists and Prev is "")
	WeightType      tensor.DType // F32 or F16
	Checkpoint      string       // checkpoint path ("" : none)
	CheckpointEvery int
	Resume          bool   // continue from Checkpoint if it exists
	StopAfter       int    // stop (after checkpointing) at this step, as if interrupted (0: never)
	Command         string // reproduction command for the manifest

	Log      io.Writer // progress and logs (nil: discard)
	Progress bool      // draw a progress line
}

// Report is what Run measured.
type Report struct {
	Config        Config
	Losses        []float64 // train loss per step
	HeldOutLoss   float64   // nats/token at the end
	HeldOutLoss0  float64   // nats/token before training (step 0 or resume point)
	HeldOutBPB    float64
	BaselineBPB   float64 // KN trigram on the same held-out tokens
	PrevBPB       float64 // last known-good model (NaN: none)
	TokensPerSec  float64
	Promoted      bool
	Reason        string
	CandidatePath string
	Vocab         tokenizer.Vocab
	Params        []float32
}

func (o *Options) defaults() {
	if o.HeldOut == 0 {
		o.HeldOut = 0.05
	}
	if o.BPEBytes == 0 {
		o.BPEBytes = 8 << 20
	}
	if o.EvalTokens == 0 {
		o.EvalTokens = 32768
	}
	if o.Threads <= 0 {
		o.Threads = 1
	}
	if o.Shape.RopeTheta == 0 {
		o.Shape.RopeTheta = 10000
	}
	if o.Shape.NormEps == 0 {
		o.Shape.NormEps = 1e-5
	}
	if o.Shape.KVHeads == 0 {
		o.Shape.KVHeads = o.Shape.Heads
	}
	if o.WeightType == 0 {
		o.WeightType = tensor.F32
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Run trains a model as the options say, evaluates it against the KN
// trigram baseline (and the last known-good model), and writes it to Out
// only if it beats both; otherwise the candidate stays at Out+".candidate"
// and Run returns the report with an error wrapping ErrNotPromoted.
func Run(o Options) (*Report, error) {
	o.defaults()
	if o.Batch <= 0 || o.Steps <= 0 || o.LR <= 0 {
		return nil, fmt.Errorf("train: batch %d, steps %d and learning rate %g must be positive", o.Batch, o.Steps, o.LR)
	}
	r := &runState{o: o, logf: func(format string, args ...any) { fmt.Fprintf(o.Log, format+"\n", args...) }}
	if err := r.loadCorpus(); err != nil {
		return nil, err
	}
	if err := r.initFrom(); err != nil {
		return nil, err
	}
	if err := r.tokenize(); err != nil {
		return nil, err
	}
	if err := r.setup(); err != nil {
		return nil, err
	}
	defer r.net.Close()
	stopped, err := r.train()
	if err != nil {
		return nil, err
	}
	if stopped {
		return r.rep, nil
	}
	r.evaluate()
	if o.Out == "" {
		return r.rep, nil
	}
	return r.release()
}

// runState is one Run between its phases: loadCorpus (corpus and
// checkpoint), initFrom (the starting model and its lineage), tokenize
// (tokenizer and token streams), setup (parameters, optimizer, network),
// train (the step loop), evaluate (final held-out score and the KN
// baseline) and release (write the candidate, gate, promote). Each phase
// fills the fields the later ones read.
type runState struct {
	o    Options
	logf func(format string, args ...any)

	corpus *Corpus
	ck     *checkpoint // resumed from (nil: a fresh run)

	initParams []float32 // InitFrom's weights (nil: fresh init or resumed)
	initDesc   string    // InitFrom's lineage for the manifest
	newLayers  []int     // blocks growing added (InitFrom)

	vocab     tokenizer.Vocab
	tk        *tokenizer.Tokenizer
	cfg       Config
	trainToks []int32
	heldToks  []int32
	starts    []int  // FIM: windows start at chunk starts (nil: anywhere)
	middle    []bool // FIM: which tokens are middles (weighed by FIMWeight)
	tbytes    []int

	params []float32
	opt    *AdamW
	start  int // first step (a resumed run's checkpoint step)
	losses []float64
	net    *Net[float32]
	ts     []Tensor
	frozen []Tensor // not updated (FreezeInit); their gradients are dropped before clipping

	ev     *evaluator
	rep    *Report
	smooth float64   // smoothed train loss
	tstart time.Time // the step loop's start
}

// loadCorpus reads the corpus and, when resuming, the checkpoint made from it.
func (r *runState) loadCorpus() error {
	o := &r.o
	corpus, err := LoadCorpus(o.Corpus, o.Exts, o.HeldOut, o.Seed)
	if err != nil {
		return err
	}
	r.corpus = corpus
	r.logf("corpus: %s, sha256 %s", corpus.Desc, corpus.SHA256[:16])

	if o.Resume && o.Checkpoint != "" {
		ck, err := loadCheckpoint(o.Checkpoint)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if ck != nil && ck.CorpusSHA256 != corpus.SHA256 {
			return fmt.Errorf("train: checkpoint %s was made from a different corpus", o.Checkpoint)
		}
		r.ck = ck
	}
	return nil
}

// initFrom reads the model a fine-tune starts from (its weights, or on
// resume only which blocks are new), describes its lineage, and checks
// FreezeInit has blocks to train.
func (r *runState) initFrom() error {
	o := &r.o
	var err error
	if o.InitFrom != "" {
		if r.ck == nil {
			if r.initParams, r.vocab, r.newLayers, err = ReadParams(o.InitFrom, o.Shape); err != nil {
				return err
			}
			r.logf("initialized from %s", o.InitFrom)
		} else { // resumed: the same flags say which blocks are new
			src, err := modelLayers(o.InitFrom)
			if err != nil {
				return err
			}
			from, err := GrowLayers(src, o.Shape.Layers)
			if err != nil {
				return fmt.Errorf("train: init from %s: %v", o.InitFrom, err)
			}
			r.newLayers = newBlocks(from)
		}
		// The manifest's lineage, the same whether this run started the
		// fine-tune or resumed it.
		if man, ok, _ := ReadManifest(o.InitFrom); ok {
			r.initDesc = fmt.Sprintf("%s (%d steps, %d tokens, held-out %.4f bits/byte): %s", o.InitFrom, man.Steps, man.Tokens, man.HeldOutBPB, man.Command)
			if man.InitFrom != "" {
				r.initDesc += "; which was fine-tuned from " + man.InitFrom
			}
		} else {
			r.initDesc = o.InitFrom
		}
		if r.newLayers != nil {
			r.initDesc += fmt.Sprintf("; grown to %d layers (new blocks %v", o.Shape.Layers, r.newLayers)
			if o.FreezeInit {
				r.initDesc += ", the only ones trained"
			}
			r.initDesc += ")"
		}
	}
	if o.FreezeInit {
		if o.InitFrom == "" {
			return errors.New("train: freezing the initial weights needs a model to start from (--init-from)")
		}
		if r.newLayers == nil {
			return fmt.Errorf("train: freezing the initial weights leaves nothing to train: %s already has %d layers (ask for more with --layers)", o.InitFrom, o.Shape.Layers)
		}
	}
	return nil
}

// tokenize settles the tokenizer (the checkpoint's, InitFrom's, or one
// trained on the corpus) and the model's shape, and cuts both splits into
// tokens (with FIM samples in the training split).
func (r *runState) tokenize() error {
	o, corpus := &r.o, r.corpus
	var err error
	switch {
	case r.ck != nil:
		r.vocab = r.ck.Vocab
	case r.initParams != nil: // vocab is the model's own, read above
	default:
		t0 := time.Now()
		special := []string{"<|endoftext|>"}
		if o.FIMRate > 0 {
			special = append(special, FIMSpecial...)
		}
		r.vocab, err = tokenizer.TrainBPE(bpeSample(corpus.Train, o.BPEBytes, o.Seed), tokenizer.TrainOptions{
			VocabSize: o.Shape.Vocab, Special: special})
		if err != nil {
			return fmt.Errorf("train: tokenizer: %w", err)
		}
		r.logf("tokenizer: %d tokens (%d merges) in %v", len(r.vocab.Tokens), len(r.vocab.Merges), time.Since(t0).Round(time.Millisecond))
	}
	tk, err := tokenizer.FromVocab(r.vocab)
	if err != nil {
		return fmt.Errorf("train: tokenizer: %w", err)
	}
	r.tk = tk
	r.vocab = *tk.Vocab() // with the FIM token ids found
	cfg := o.Shape
	cfg.Vocab = len(r.vocab.Tokens)
	if r.ck != nil {
		if r.ck.Config != cfg {
			return fmt.Errorf("train: checkpoint shape %+v differs from the requested %+v", r.ck.Config, cfg)
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	r.cfg = cfg
	eos := r.vocab.EOS.ID
	t0 := time.Now()
	if o.FIMRate > 0 {
		chunk := cfg.Ctx
		if o.FIMChunkTokens > 0 {
			chunk = min(o.FIMChunkTokens, cfg.Ctx)
		}
		cb := FIMChunkBytes(tk, corpus.Train, chunk)
		r.trainToks, r.starts, r.middle, err = FIMTokens(tk, corpus.Train, FIMData{Rate: o.FIMRate, ChunkBytes: cb, Seed: o.Seed, SPMRate: o.FIMSPMRate, LineStart: o.FIMLineStart, BlockRate: o.FIMBlockRate}, eos)
		if err != nil {
			return err
		}
		nm := 0
		for _, m := range r.middle {
			if m {
				nm++
			}
		}
		r.logf("fill in the middle: %.2f of %d chunks of %d bytes; middles are %.1f%% of the tokens, weighed %g", o.FIMRate, len(r.starts), cb,
			100*float64(nm)/float64(len(r.middle)), max(o.FIMWeight, 1))
	} else {
		r.trainToks = Tokens(tk, corpus.Train, eos)
	}
	r.heldToks = Tokens(tk, corpus.HeldOut, eos)
	r.tbytes = TokenBytes(r.vocab)
	r.logf("tokens: %d train, %d held out (%.2f bytes/token) in %v", len(r.trainToks), len(r.heldToks),
		float64(corpus.Bytes)/float64(len(r.trainToks)+len(r.heldToks)), time.Since(t0).Round(time.Millisecond))
	T := cfg.Ctx
	if len(r.trainToks) < T+2 {
		return fmt.Errorf("train: training split has %d tokens, fewer than one context of %d", len(r.trainToks), T)
	}
	if len(r.heldToks) < 2 {
		return errors.New("train: held-out split is empty")
	}
	r.starts = slices.DeleteFunc(r.starts, func(s int) bool { return s > len(r.trainToks)-T-1 })
	return nil
}

// setup makes the parameters (the checkpoint's, InitFrom's or fresh), the
// optimizer and the network, and scores the held-out split before the
// first step. The caller closes r.net.
func (r *runState) setup() error {
	o, cfg := &r.o, r.cfg
	r.opt = NewAdamW(0, o.WD)
	if ck := r.ck; ck != nil {
		r.params, r.opt.M, r.opt.V, r.opt.Step = ck.Params, ck.M, ck.V, ck.Step
		r.start, r.losses = ck.Step, ck.Losses
		r.logf("resumed from %s at step %d", o.Checkpoint, r.start)
	} else {
		r.params = r.initParams
		if r.params == nil {
			r.params = InitParams(cfg, o.Seed)
		}
		r.opt = NewAdamW(len(r.params), o.WD)
	}
	net, err := NewNet(cfg, r.params, o.Threads)
	if err != nil {
		return err
	}
	r.net = net
	r.ts, _ = cfg.Layout()
	if o.FreezeInit {
		r.ts, r.frozen = splitTrainable(r.ts, r.newLayers)
		net.TrainOnly(r.newLayers)
		r.logf("training only the new blocks %v", r.newLayers)
	}
	r.logf("model: dim %d, %d layers, %d/%d heads, ffn %d, vocab %d, ctx %d: %d parameters",
		cfg.Dim, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.Hidden, cfg.Vocab, cfg.Ctx, len(r.params))

	r.ev = newEvaluator(r.heldToks, r.tbytes, cfg.Ctx, o.Batch, o.EvalTokens)
	r.rep = &Report{Config: cfg, PrevBPB: math.NaN()}
	r.rep.HeldOutLoss0, _ = r.ev.eval(net)
	r.logf("step %d: held-out loss %.4f", r.start, r.rep.HeldOutLoss0)
	return nil
}

// train runs the steps from r.start to Steps: sample a batch of windows,
// forward, loss, backward, clip, AdamW update; it evaluates every
// EvalEvery steps and checkpoints every CheckpointEvery. stopped reports
// a stop at StopAfter (checkpointed, the report filled).
func (r *runState) train() (stopped bool, err error) {
	o, cfg, net, rep := &r.o, r.cfg, r.net, r.rep
	T, trainToks, starts, middle := cfg.Ctx, r.trainToks, r.starts, r.middle
	sched := Schedule{LR: o.LR, MinLR: o.MinLR, Warmup: o.Warmup, Steps: o.Steps}
	in := make([]int, o.Batch*T)
	tg := make([]int, o.Batch*T)
	var wt []float32 // loss weights (nil: all 1)
	wMid, wFirst := max(o.FIMWeight, 1), o.FIMFirstWeight
	if wFirst <= 0 {
		wFirst = wMid
	}
	midID := r.tk.FIM().Mid.ID
	if (wMid != 1 || wFirst != 1) && middle != nil {
		wt = make([]float32, o.Batch*T)
	}
	r.tstart = time.Now()
	var meter *progress.Meter // the bar on a terminal, log lines elsewhere (package progress, as hub downloads)
	if o.Progress {
		meter = progress.New(o.Log, "train", int64(o.Steps), int64(r.start), progress.Options{Unit: progress.Steps, Terminal: progress.IsTerminal(o.Log)})
		defer meter.Close()
	}
	r.smooth = math.NaN()
	for step := r.start; step < o.Steps; step++ {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(step)+1))
		for b := range o.Batch {
			off := rng.IntN(len(trainToks) - T)
			if len(starts) > 0 {
				off = starts[rng.IntN(len(starts))]
			}
			for i := range T {
				in[b*T+i] = int(trainToks[off+i])
				tg[b*T+i] = int(trainToks[off+i+1])
			}
			if wt != nil {
				fimWeights(wt[b*T:(b+1)*T], in[b*T:(b+1)*T], middle[off+1:off+T+1], midID, wMid, wFirst)
			}
		}
		if _, err := net.Forward(in, o.Batch, T); err != nil {
			return false, err
		}
		sum, cnt := net.Loss(tg, wt)
		loss := sum / cnt
		clear(net.G)
		net.Backward(tg, wt, cnt)
		for _, t := range r.frozen {
			clear(net.G[t.Off : t.Off+t.Size()])
		}
		ClipGrad(net.G, o.Clip)
		lr := sched.At(step)
		r.opt.Update(r.params, net.G, lr, r.ts)
		r.losses = append(r.losses, loss)
		if math.IsNaN(r.smooth) {
			r.smooth = loss
		} else {
			r.smooth = 0.95*r.smooth + 0.05*loss
		}
		done := step + 1
		el := time.Since(r.tstart).Seconds()
		tps := float64((done-r.start)*o.Batch*T) / el
		if meter != nil {
			meter.Status(fmt.Sprintf("loss %.4f lr %.2e %.0f tok/s", r.smooth, lr, tps))
			meter.Set(int64(done))
		}
		if o.EvalEvery > 0 && done%o.EvalEvery == 0 && done < o.Steps {
			hl, bpb := r.ev.eval(net)
			if meter != nil {
				meter.Break()
			}
			r.logf("step %d: train loss %.4f, held-out loss %.4f (%.4f bits/byte), %.0f tok/s", done, r.smooth, hl, bpb, tps)
		}
		if o.Checkpoint != "" && o.CheckpointEvery > 0 && done%o.CheckpointEvery == 0 || done == o.StopAfter {
			if o.Checkpoint != "" {
				c := &checkpoint{Config: cfg, Vocab: r.vocab, CorpusSHA256: r.corpus.SHA256, Step: done, Losses: r.losses,
					Params: r.params, M: r.opt.M, V: r.opt.V}
				if err := c.save(o.Checkpoint); err != nil {
					return false, err
				}
			}
		}
		if done == o.StopAfter {
			if meter != nil {
				meter.Close()
			}
			rep.Losses, rep.Params, rep.Vocab = r.losses, r.params, r.vocab
			return true, nil
		}
	}
	if meter != nil {
		meter.Close()
	}
	return false, nil
}

// evaluate fills the report after the last step: throughput, the final
// held-out score (over FinalEvalTokens) and the KN trigram baseline's.
func (r *runState) evaluate() {
	o, rep, T := &r.o, r.rep, r.cfg.Ctx
	el := time.Since(r.tstart).Seconds()
	ran := max(o.Steps-r.start, 0) // a checkpoint past --steps is only evaluated
	if ran > 0 {
		rep.TokensPerSec = float64(ran*o.Batch*T) / el
	}
	rep.Losses, rep.Params, rep.Vocab = r.losses, r.params, r.vocab
	if o.FinalEvalTokens != o.EvalTokens {
		r.ev = newEvaluator(r.heldToks, r.tbytes, T, o.Batch, o.FinalEvalTokens)
	}
	rep.HeldOutLoss, rep.HeldOutBPB = r.ev.eval(r.net)
	r.logf("final evaluation on %d held-out tokens", min(len(r.ev.starts)*T, len(r.heldToks)-1))
	r.logf("trained %d steps in %.0fs (%.0f tokens/s): held-out loss %.4f, %.4f bits/byte", ran, el, rep.TokensPerSec, rep.HeldOutLoss, rep.HeldOutBPB)

	kn := NewKN3(r.trainToks, r.cfg.Vocab)
	rep.BaselineBPB = r.ev.evalKN(kn)
	r.logf("baseline (interpolated Kneser-Ney trigram, same tokens): %.4f bits/byte", rep.BaselineBPB)
}

// release writes the candidate with its manifest, scores the last
// known-good model, and promotes the candidate to Out if the gate passes.
func (r *runState) release() (*Report, error) {
	o, rep, T, vocab, start := &r.o, r.rep, r.cfg.Ctx, r.vocab, r.start
	man := Manifest{
		Corpus: portable(r.corpus.Desc), CorpusSHA256: r.corpus.SHA256, Steps: max(o.Steps, start), Seed: o.Seed,
		Tokens: int64(max(o.Steps, start)) * int64(o.Batch*T), TrainLoss: r.smooth, HeldOutLoss: rep.HeldOutLoss,
		HeldOutBPB: rep.HeldOutBPB, BaselineBPB: rep.BaselineBPB, Command: portable(o.Command),
		Hyperparams: fmt.Sprintf("batch %d, ctx %d, steps %d, lr %g→%g, warmup %d + cosine, weight decay %g, clip %g, AdamW(0.9, 0.95)%s",
			o.Batch, T, o.Steps, o.LR, o.MinLR, o.Warmup, o.WD, o.Clip, fimDesc(*o)),
		FIMRate:       o.FIMRate,
		InitFrom:      portable(r.initDesc),
		TokenizerDesc: fmt.Sprintf("byte-level BPE, %d tokens, pre-tokenizer %s, trained on ≤ %d bytes of the train split", len(vocab.Tokens), vocab.Pre, o.BPEBytes),
	}
	if o.FIMRate > 0 {
		// Mostly suffix-first samples: servers prompt the model that way.
		vocab.FIM.SuffixFirst = o.FIMSPMRate > 0.5
	}
	cand := o.Out + ".candidate"
	if err := WriteGGUF(cand, r.cfg, r.params, vocab, o.WeightType, man); err != nil {
		return nil, err
	}
	rep.CandidatePath = cand
	prev := o.Prev
	if prev == "" {
		if _, err := os.Stat(o.Out); err == nil {
			prev = o.Out
		}
	}
	if prev != "" {
		pb, err := EvalModel(prev, r.corpus.HeldOut, T, o.FinalEvalTokens, o.Threads)
		if err != nil {
			r.logf("last known-good model %s could not be evaluated (%v); comparing with the baseline only", prev, err)
		} else {
			rep.PrevBPB = pb
			r.logf("last known-good %s: %.4f bits/byte", prev, pb)
		}
	}
	ok, reason := Gate(rep.HeldOutBPB, rep.BaselineBPB, rep.PrevBPB)
	rep.Reason = reason
	if !ok {
		r.logf("release gate: NOT promoted: %s; kept %s, candidate left at %s", rep.Reason, orNone(prev), cand)
		return rep, fmt.Errorf("%w: %s", ErrNotPromoted, rep.Reason)
	}
	if err := os.Rename(cand, o.Out); err != nil {
		return nil, fmt.Errorf("train: promote: %w", err)
	}
	rep.Promoted = true
	r.logf("release gate: promoted %s: %s", o.Out, rep.Reason)
	return rep, nil
}

// fimWeights sets the loss weights w of one window: in are its inputs and
// mid flags its targets (mid[i]: target i is a FIM middle's token or its
// end token). The target predicted at <|fim_middle|> (id midID) — the
// middle's first token — weighs wFirst, the middle's other tokens wMid,
// every other token 1.
func fimWeights(w []float32, in []int, mid []bool, midID int, wMid, wFirst float64) {
	for i := range w {
		switch {
		case in[i] == midID:
			w[i] = float32(wFirst)
		case mid[i]:
			w[i] = float32(wMid)
		default:
			w[i] = 1
		}
	}
}

// fimDesc is the FIM part of the manifest's hyperparameters.
func fimDesc(o Options) string {
	if o.FIMRate == 0 {
		return ""
	}
	spm := o.FIMSPMRate
	if spm == 0 {
		spm = 0.5
	}
	chunk := ""
	if o.FIMChunkTokens > 0 {
		chunk = fmt.Sprintf(", chunks of %d tokens", o.FIMChunkTokens)
	}
	if o.FIMLineStart > 0 {
		chunk += fmt.Sprintf(", %g of rest-of-line middles from the indentation", o.FIMLineStart)
	}
	if o.FIMBlockRate > 0 {
		chunk += fmt.Sprintf(", %g of middles block bodies first", o.FIMBlockRate)
	}
	if o.FIMFirstWeight > 0 {
		chunk += fmt.Sprintf(", first middle token's weight %g", o.FIMFirstWeight)
	}
	return fmt.Sprintf(", FIM rate %g (SPM %g of them), middle loss weight %g%s", o.FIMRate, spm, max(o.FIMWeight, 1), chunk)
}

// Gate is the release rule: a new model (held-out bits per byte bpb) is
// promoted only if it beats the named baseline and, when one exists
// (prev is not NaN), the last known-good model. reason says why, either way.
func Gate(bpb, baseline, prev float64) (ok bool, reason string) {
	switch {
	case !(bpb < baseline):
		return false, fmt.Sprintf("held-out %.4f bits/byte does not beat the KN trigram baseline's %.4f", bpb, baseline)
	case !math.IsNaN(prev) && !(bpb < prev):
		return false, fmt.Sprintf("held-out %.4f bits/byte does not beat the last known-good model's %.4f", bpb, prev)
	}
	reason = fmt.Sprintf("held-out %.4f bits/byte beats the KN trigram baseline's %.4f", bpb, baseline)
	if !math.IsNaN(prev) {
		reason += fmt.Sprintf(" and the last known-good model's %.4f", prev)
	}
	return true, reason
}

func orNone(s string) string {
	if s == "" {
		return "nothing (no previous model)"
	}
	return s
}

// evaluator scores fixed held-out windows: consecutive windows of T+1
// tokens (stride T) from the start of the held-out stream, at most maxTok
// targets, so every evaluation sees the same tokens.
type evaluator struct {
	toks   []int32
	bytes  []int
	t, b   int
	starts []int
}

func newEvaluator(toks []int32, bytes []int, t, b, maxTok int) *evaluator {
	e := &evaluator{toks: toks, bytes: bytes, t: t, b: b}
	all := (len(toks) - 1 + t - 1) / t // windows covering the whole stream
	n := all
	if maxTok > 0 {
		n = min(all, max(1, maxTok/t))
	}
	// n windows spread evenly over the stream (all of it when n == all), so
	// a capped evaluation samples every part of the held-out split rather
	// than its first documents.
	for i := range n {
		e.starts = append(e.starts, (i*all/n)*t)
	}
	return e
}

// window returns the inputs and targets of window w (targets −1 past the end).
func (e *evaluator) window(w int, in, tg []int) {
	s := e.starts[w]
	for i := range e.t {
		if s+i+1 < len(e.toks) {
			in[i], tg[i] = int(e.toks[s+i]), int(e.toks[s+i+1])
		} else {
			in[i], tg[i] = int(e.toks[len(e.toks)-1]), -1
		}
	}
}

// eval returns the mean held-out loss (nats/token) and bits per byte.
func (e *evaluator) eval(n *Net[float32]) (float64, float64) {
	in := make([]int, e.b*e.t)
	tg := make([]int, e.b*e.t)
	var nats, cnt float64
	var nbytes int
	for w0 := 0; w0 < len(e.starts); w0 += e.b {
		nb := min(e.b, len(e.starts)-w0)
		for j := range nb {
			e.window(w0+j, in[j*e.t:(j+1)*e.t], tg[j*e.t:(j+1)*e.t])
		}
		if _, err := n.Forward(in[:nb*e.t], nb, e.t); err != nil {
			return math.NaN(), math.NaN()
		}
		s, c := n.Loss(tg[:nb*e.t], nil)
		nats += s
		cnt += c
		for _, t := range tg[:nb*e.t] {
			if t >= 0 {
				nbytes += e.bytes[t]
			}
		}
	}
	return nats / cnt, nats / math.Ln2 / float64(nbytes)
}

// evalKN returns the KN trigram's bits per byte on the same targets, with
// the same in-window context the transformer sees (at most two tokens).
func (e *evaluator) evalKN(m *KN3) float64 {
	in := make([]int, e.t)
	tg := make([]int, e.t)
	var bits float64
	var nbytes int
	for w := range e.starts {
		e.window(w, in, tg)
		for i := range e.t {
			if tg[i] < 0 {
				continue
			}
			u := int32(-1)
			if i > 0 {
				u = int32(in[i-1])
			}
			bits -= math.Log2(m.Prob(u, int32(in[i]), int32(tg[i])))
			nbytes += e.bytes[tg[i]]
		}
	}
	return bits / float64(nbytes)
}

// splitTrainable splits ts into the tensors of the layers in train and the
// rest.
func splitTrainable(ts []Tensor, train []int) (trainable, frozen []Tensor) {
	for _, t := range ts {
		var l int
		var rest string
		if k, _ := fmt.Sscanf(t.Name, "blk.%d.%s", &l, &rest); k == 2 && slices.Contains(train, l) {
			trainable = append(trainable, t)
		} else {
			frozen = append(frozen, t)
		}
	}
	return trainable, frozen
}

// modelLayers is the block count of the GGUF model at path.
func modelLayers(path string) (int, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return 0, fmt.Errorf("train: %w", err)
	}
	defer f.Close()
	n, err := f.Uint("llama.block_count")
	if err != nil {
		return 0, fmt.Errorf("train: %s: %w", path, err)
	}
	return int(n), nil
}
