package train

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"nanoserve/gguf"
	"nanoserve/kvcache"
	"nanoserve/llamacpp"
	"nanoserve/model"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

// Manifest describes how a model was trained; it is stored in the GGUF
// under "nanoserve.train.*" keys.
type Manifest struct {
	Corpus        string  // corpus description
	CorpusSHA256  string  // corpus hash (see LoadCorpus)
	Steps         int     // optimizer steps
	Seed          uint64  // training seed
	Tokens        int64   // training tokens seen
	TrainLoss     float64 // final train loss (nats/token, smoothed)
	HeldOutLoss   float64 // final held-out loss (nats/token)
	HeldOutBPB    float64 // held-out bits per byte
	BaselineBPB   float64 // KN trigram held-out bits per byte
	Command       string  // how to reproduce
	Hyperparams   string  // batch, lr, schedule, ...
	TokenizerDesc string
	FIMRate       float64 // fraction of training chunks that were FIM samples (0: none)
	FIMEval       string  // `nanoserve fim-eval --record`'s table (empty: not evaluated)
	// InitFrom describes the model this one was fine-tuned from (--init-from:
	// its manifest's command, steps and tokens; empty: trained from scratch).
	// Steps and Tokens count this run only.
	InitFrom string
}

// WriteGGUF writes a llama-architecture GGUF that package model serves:
// the weights (matrices as typ, F32 or F16; norm gains F32), the
// tokenizer and the manifest.
func WriteGGUF(path string, c Config, p []float32, v tokenizer.Vocab, typ tensor.DType, man Manifest) error {
	if typ != tensor.F32 && typ != tensor.F16 {
		return fmt.Errorf("train: unsupported weight type %s (want F32 or F16)", typ)
	}
	w := gguf.NewWriter()
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String("llama")},
		{Key: "general.name", Value: gguf.String("nanoserve-trained")},
		{Key: "general.file_type", Value: gguf.Uint32(map[tensor.DType]uint32{tensor.F32: 0, tensor.F16: 1}[typ])},
		{Key: "nanoserve.train.corpus", Value: gguf.String(man.Corpus)},
		{Key: "nanoserve.train.corpus_sha256", Value: gguf.String(man.CorpusSHA256)},
		{Key: "nanoserve.train.tokenizer", Value: gguf.String(man.TokenizerDesc)},
		{Key: "nanoserve.train.steps", Value: gguf.Uint64(uint64(man.Steps))},
		{Key: "nanoserve.train.seed", Value: gguf.Uint64(man.Seed)},
		{Key: "nanoserve.train.tokens", Value: gguf.Uint64(uint64(man.Tokens))},
		{Key: "nanoserve.train.hyperparameters", Value: gguf.String(man.Hyperparams)},
		{Key: "nanoserve.train.command", Value: gguf.String(man.Command)},
		{Key: "nanoserve.train.train_loss", Value: gguf.Float64(man.TrainLoss)},
		{Key: "nanoserve.train.heldout_loss", Value: gguf.Float64(man.HeldOutLoss)},
		{Key: "nanoserve.train.heldout_bpb", Value: gguf.Float64(man.HeldOutBPB)},
		{Key: "nanoserve.train.baseline_kn3_bpb", Value: gguf.Float64(man.BaselineBPB)},
		{Key: "nanoserve.train.fim_rate", Value: gguf.Float64(man.FIMRate)},
	}
	if man.InitFrom != "" {
		kv = append(kv, gguf.KV{Key: "nanoserve.train.init_from", Value: gguf.String(man.InitFrom)})
	}
	h := llamacpp.HParams{Arch: "llama", ContextLength: c.Ctx, EmbeddingLength: c.Dim, BlockCount: c.Layers,
		FeedForwardLength: c.Hidden, HeadCount: c.Heads, HeadCountKV: c.KVHeads, RMSNormEps: float64(c.NormEps),
		RopeFreqBase: float64(c.RopeTheta), RopeDim: c.HeadDim(), VocabSize: c.Vocab}
	kv = append(kv, h.KVs()...)
	vv := v
	vv.AddBOS = false // the training data has no BOS
	tks, err := llamacpp.VocabKVs(vv, len(v.Tokens), nil)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	kv = append(kv, tks...)
	for _, e := range kv {
		if err := w.AddKV(e.Key, e.Value); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	ts, _ := c.Layout()
	for _, t := range ts {
		data := p[t.Off : t.Off+t.Size()]
		dims := []uint64{uint64(t.Cols)}
		tt := tensor.F32
		if t.Rows > 1 || t.Decay {
			dims = append(dims, uint64(t.Rows))
			tt = typ
		}
		var raw []byte
		if tt == tensor.F32 {
			raw = make([]byte, 4*len(data))
			for i, x := range data {
				binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
			}
		} else {
			raw = make([]byte, 2*len(data))
			for i, x := range data {
				binary.LittleEndian.PutUint16(raw[2*i:], tensor.F32ToF16(x))
			}
		}
		if err := w.AddTensor(t.Name, tt, dims, raw); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := w.WriteFile(path); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// EvalModel returns the held-out bits per byte of a served model file
// (any format package model loads, with its own tokenizer) on docs, in
// windows of at most its context (ctx > 0: at most ctx), scoring about
// maxTokens tokens in windows spread over the whole split (≤ 0: all). It is how the release gate compares against a last
// known-good model whose tokenizer may differ.
func EvalModel(path string, docs []Doc, ctx, maxTokens, threads int) (float64, error) {
	m, err := model.Load(path, model.Options{Threads: threads})
	if err != nil {
		return 0, err
	}
	defer m.Close()
	if m.Tokenizer == nil {
		return 0, fmt.Errorf("train: model %s carries no tokenizer", path)
	}
	tk := m.Tokenizer
	if ctx <= 0 || ctx > m.ContextLen {
		ctx = m.ContextLen
	}
	sep := -1
	if id, ok := tk.EOS(); ok {
		sep = id
	}
	var toks []int32
	var nbytes float64
	for _, d := range docs {
		for _, id := range tk.Encode(d.Text, false) {
			toks = append(toks, int32(id))
		}
		if sep >= 0 {
			toks = append(toks, int32(sep))
		}
	}
	cache, err := m.NewCache(ctx)
	if err != nil {
		return 0, err
	}
	// Windows of ctx inputs and ctx targets, starting every ctx tokens:
	// the training evaluator's windows (newEvaluator), so a model with the
	// same tokenizer is scored on exactly the candidate's targets; capped
	// at maxTokens, n windows spread evenly over the stream, as there.
	all := (len(toks) - 1 + ctx - 1) / ctx
	n := all
	if maxTokens > 0 {
		n = min(all, max(1, maxTokens/ctx))
	}
	var nats float64
	for w := range n {
		start := (w * all / n) * ctx
		end := min(start+ctx+1, len(toks))
		win := toks[start:end]
		s := &kvcache.Seq{}
		if err := cache.Reserve(s, len(win)-1); err != nil {
			return 0, err
		}
		b := model.Batch{}
		for i := 0; i < len(win)-1; i++ {
			b.Tokens = append(b.Tokens, int(win[i]))
			b.Pos = append(b.Pos, i)
			b.Seq = append(b.Seq, s)
			b.Output = append(b.Output, true)
		}
		lg, err := m.Forward(b, cache)
		if err != nil {
			return 0, err
		}
		var run []int
		for i := 0; i < len(win)-1; i++ {
			row := lg[i*m.Vocab : (i+1)*m.Vocab]
			nats += nll(row, int(win[i+1]))
			if int(win[i+1]) == sep {
				nbytes += float64(len(tk.Decode(run))) + 1 // the separator counts as one byte
				run = run[:0]
				continue
			}
			run = append(run, int(win[i+1]))
		}
		nbytes += float64(len(tk.Decode(run)))
		cache.Release(s)
	}
	if nbytes == 0 {
		return 0, fmt.Errorf("train: no held-out text to evaluate %s on", path)
	}
	return nats / math.Ln2 / nbytes, nil
}

// nll is −log softmax(row)[target].
func nll(row []float32, target int) float64 {
	mx := row[0]
	for _, v := range row {
		mx = max(mx, v)
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v - mx))
	}
	return math.Log(s) - float64(row[target]-mx)
}

// ReadManifest returns the training manifest of a GGUF file written by
// WriteGGUF; ok is false when the file has none (a model trained
// elsewhere). For `nanoserve inspect`.
func ReadManifest(path string) (man Manifest, ok bool, err error) {
	f, err := gguf.Open(path)
	if err != nil {
		return Manifest{}, false, fmt.Errorf("train: %w", err)
	}
	defer f.Close()
	const p = "nanoserve.train."
	if man.Corpus, err = f.String(p + "corpus"); err != nil {
		return Manifest{}, false, nil
	}
	str := func(k string) string { s, _ := f.String(p + k); return s }
	num := func(k string) uint64 { v, _ := f.Uint(p + k); return v }
	flt := func(k string) float64 { v, _ := f.Float(p + k); return v }
	man.CorpusSHA256, man.TokenizerDesc = str("corpus_sha256"), str("tokenizer")
	man.Hyperparams, man.Command = str("hyperparameters"), str("command")
	man.Steps, man.Seed, man.Tokens = int(num("steps")), num("seed"), int64(num("tokens"))
	man.TrainLoss, man.HeldOutLoss = flt("train_loss"), flt("heldout_loss")
	man.HeldOutBPB, man.BaselineBPB = flt("heldout_bpb"), flt("baseline_kn3_bpb")
	man.FIMRate = flt("fim_rate")
	man.FIMEval = str("fim_eval")
	man.InitFrom = str("init_from")
	return man, true, nil
}

// ReadParams reads back the parameters and tokenizer of a model WriteGGUF
// wrote (F16 matrices widened to F32; c.Vocab is the file's own vocabulary
// size): what `train --init-from` starts from. Every tensor of c's layout
// must be there with its shape, and the RoPE base must match; the context
// length may differ (RoPE has no parameters), so a fine-tune may lengthen
// it.
//
// c may have more layers than the file (block expansion, as LLaMA Pro
// grows a trained model): the new blocks are spread evenly among the old
// ones (GrowLayers), each a copy of the block before it with its two
// residual outputs, attn_output and ffn_down, zeroed, so the grown model
// computes exactly what the file's model computes until training moves
// them. newLayers lists the new blocks' indices in c (nil when none).
func ReadParams(path string, c Config) (p []float32, v tokenizer.Vocab, newLayers []int, err error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, tokenizer.Vocab{}, nil, fmt.Errorf("train: %w", err)
	}
	defer f.Close()
	fail := func(format string, a ...any) ([]float32, tokenizer.Vocab, []int, error) {
		return nil, tokenizer.Vocab{}, nil, fmt.Errorf("train: init from %s: "+format, append([]any{path}, a...)...)
	}
	if th, err := f.Float("llama.rope.freq_base"); err == nil && float32(th) != float32(c.RopeTheta) {
		return fail("RoPE base %g, the requested shape has %g", th, c.RopeTheta)
	}
	v, err = llamacpp.ReadVocab(f)
	if err != nil {
		return fail("%v", err)
	}
	src := c.Layers
	if n, err := f.Uint("llama.block_count"); err == nil {
		src = int(n)
	}
	from, err := GrowLayers(src, c.Layers)
	if err != nil {
		return fail("%v", err)
	}
	newLayers = newBlocks(from)
	c.Vocab = len(v.Tokens)
	ts, n := c.Layout()
	p = make([]float32, n)
	for _, t := range ts {
		name, zero := t.Name, false
		var l int
		var rest string
		if k, _ := fmt.Sscanf(t.Name, "blk.%d.%s", &l, &rest); k == 2 {
			s := from[l]
			if s < 0 { // a new block: the one before it, its outputs zeroed
				s = -s - 1
				zero = rest == "attn_output.weight" || rest == "ffn_down.weight"
			}
			name = fmt.Sprintf("blk.%d.%s", s, rest)
		}
		ti, ok := f.Tensor(name)
		if !ok {
			return fail("no tensor %s (is it a model `nanoserve train` wrote with this shape?)", name)
		}
		if ti.Cols() != t.Cols || ti.Rows() != t.Rows {
			return fail("tensor %s is %d×%d, the requested shape needs %d×%d", name, ti.Rows(), ti.Cols(), t.Rows, t.Cols)
		}
		if ti.Type != tensor.F32 && ti.Type != tensor.F16 {
			return fail("tensor %s is %s; want F32 or F16", name, ti.Type)
		}
		if !zero {
			tensor.DequantizeRow(p[t.Off:t.Off+t.Size()], ti.Type, ti.Data)
		}
	}
	return p, v, newLayers, nil
}

// GrowLayers maps the dst layers of a grown model to the src layers of the
// model it grows from: from[t] = s when layer t is the file's layer s, and
// -(s+1) when t is a new block copied from layer s. The dst−src new blocks
// are spread evenly, each after a run of old ones (4 → 6: 0 1 new 2 3 new).
func GrowLayers(src, dst int) ([]int, error) {
	switch {
	case src <= 0:
		return nil, fmt.Errorf("the model has %d layers", src)
	case dst < src:
		return nil, fmt.Errorf("the model has %d layers, more than the requested %d", src, dst)
	}
	n := dst - src
	from := make([]int, 0, dst)
	next := 0 // new blocks placed
	for s := range src {
		from = append(from, s)
		// new block i goes after old layer ⌈(i+1)·src/n⌉−1
		for next < n && ((next+1)*src+n-1)/n-1 == s {
			from = append(from, -(s + 1))
			next++
		}
	}
	return from, nil
}

// newBlocks lists the layers of a GrowLayers map that are new blocks (nil:
// none).
func newBlocks(from []int) []int {
	var out []int
	for t, s := range from {
		if s < 0 {
			out = append(out, t)
		}
	}
	return out
}

// KeyFIMEval holds the fill-in-the-middle evaluation of a trained model
// (`nanoserve fim-eval --record`): a Markdown table, with the cases and
// the systems compared in its first line.
const KeyFIMEval = "nanoserve.train.fim_eval"

// RecordFIMEval stores table under KeyFIMEval in the GGUF at path,
// replacing an earlier evaluation; every other key and tensor is copied
// unchanged. The file is rewritten through a temporary file renamed into
// place, so a failure leaves the original intact.
func RecordFIMEval(path, table string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	defer f.Close()
	if _, err := f.String("nanoserve.train.corpus"); err != nil {
		return fmt.Errorf("train: %s has no nanoserve training manifest to record the evaluation in", path)
	}
	w := gguf.NewWriter()
	if err := w.AddFile(f, KeyFIMEval); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := w.AddKV(KeyFIMEval, gguf.String(portable(table))); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := w.WriteFile(path); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}
