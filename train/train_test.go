package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

func sharedDir(t testing.TB) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "shared", "README.md")); err == nil {
			return filepath.Join(dir, "shared")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("shared/ test data not found")
		}
		dir = parent
	}
}

// TestOverfit memorises one small batch.
func TestOverfit(t *testing.T) {
	c := Config{Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 64, Vocab: 32, Ctx: 16, RopeTheta: 10000, NormEps: 1e-5}
	p := InitParams(c, 1)
	n, err := NewNet(c, p, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	rng := rand.New(rand.NewPCG(2, 3))
	b := 4
	seq := randTokens(rng, b*(c.Ctx+1), c.Vocab)
	in, tg := make([]int, b*c.Ctx), make([]int, b*c.Ctx)
	for i := range b {
		copy(in[i*c.Ctx:], seq[i*(c.Ctx+1):i*(c.Ctx+1)+c.Ctx])
		copy(tg[i*c.Ctx:], seq[i*(c.Ctx+1)+1:(i+1)*(c.Ctx+1)])
	}
	ts, _ := c.Layout()
	opt := NewAdamW(len(p), 0)
	var loss float64
	for step := range 300 {
		n.Forward(in, b, c.Ctx)
		s, cnt := n.Loss(tg, nil)
		loss = s / cnt
		if step == 0 && math.Abs(loss-math.Log(float64(c.Vocab))) > 0.2 {
			t.Errorf("initial loss %.3f, want ≈ ln V = %.3f", loss, math.Log(float64(c.Vocab)))
		}
		clear(n.G)
		n.Backward(tg, nil, cnt)
		ClipGrad(n.G, 1)
		opt.Update(p, n.G, 1e-2, ts)
	}
	if loss > 0.05 {
		t.Errorf("loss after 300 steps on one batch: %.4f, want ≈ 0", loss)
	}
}

// TestServeParity exports a model and serves it with package model: the
// logits through the KV cache (prefill, then one token at a time) match
// the training forward, and greedy generation agrees.
func TestServeParity(t *testing.T) {
	texts := []string{"func main() {\n\tfmt.Println(\"hi\")\n}\n", "package main\n\nimport \"fmt\"\n"}
	v, err := tokenizer.TrainBPE(texts, tokenizer.TrainOptions{VocabSize: 300, Special: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 48, Vocab: len(v.Tokens), Ctx: 24, RopeTheta: 10000, NormEps: 1e-5}
	p := InitParams(c, 9)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range p { // larger weights: sharper, well-separated logits
		p[i] = p[i]*20 + float32(0.02*rng.NormFloat64())
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := WriteGGUF(path, c, p, v, tensor.F32, Manifest{Corpus: "test"}); err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(path, model.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	n, _ := NewNet(c, p, 2)
	defer n.Close()

	toks := m.Tokenizer.Encode(texts[0], false)[:10]
	ref := slices.Clone(mustForward(t, n, toks, 1, len(toks)))
	cache, _ := m.NewCache(c.Ctx)
	s := &kvcache.Seq{}
	cache.Reserve(s, len(toks))
	split := 6
	b := model.Batch{}
	for i := range split {
		b.Tokens, b.Pos, b.Seq, b.Output = append(b.Tokens, toks[i]), append(b.Pos, i), append(b.Seq, s), append(b.Output, true)
	}
	got, err := m.Forward(b, cache)
	if err != nil {
		t.Fatal(err)
	}
	got = slices.Clone(got)
	for i := split; i < len(toks); i++ {
		lg, err := m.Forward(model.Batch{Tokens: []int{toks[i]}, Pos: []int{i}, Seq: []*kvcache.Seq{s}, Output: []bool{true}}, cache)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, lg...)
	}
	worst := 0.0
	for i := range ref {
		worst = max(worst, math.Abs(float64(ref[i]-got[i])))
	}
	if worst > 1e-4 {
		t.Errorf("served logits differ from training forward by %g", worst)
	}

	// greedy generation: training forward (full recompute) vs served (cache)
	seq := slices.Clone(toks[:3])
	cache.Release(s)
	s = &kvcache.Seq{}
	cache.Reserve(s, c.Ctx)
	var served []int
	b = model.Batch{}
	for i, id := range seq {
		b.Tokens, b.Pos, b.Seq, b.Output = append(b.Tokens, id), append(b.Pos, i), append(b.Seq, s), append(b.Output, i == len(seq)-1)
	}
	lg, _ := m.Forward(b, cache)
	for len(seq) < c.Ctx {
		want := argmax(mustForward(t, n, seq, 1, len(seq))[(len(seq)-1)*c.Vocab:])
		next := argmax(lg)
		served = append(served, next)
		if next != want {
			t.Fatalf("greedy step %d: served %d, training forward %d", len(seq), next, want)
		}
		seq = append(seq, next)
		if len(seq) == c.Ctx {
			break
		}
		lg, _ = m.Forward(model.Batch{Tokens: []int{next}, Pos: []int{len(seq) - 1}, Seq: []*kvcache.Seq{s}, Output: []bool{true}}, cache)
	}
	if len(served) == 0 {
		t.Fatal("nothing generated")
	}
}

func argmax[T Float](v []T) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func shakespeareOptions(t *testing.T, dir string) Options {
	return Options{
		Corpus: []string{filepath.Join(sharedDir(t), "corpus", "tinyshakespeare.txt")},
		Shape:  Config{Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 64, Vocab: 320, Ctx: 32},
		Batch:  8, Steps: 40, LR: 3e-3, MinLR: 3e-4, Warmup: 5, WD: 0.1, Clip: 1, Seed: 42, Threads: 2,
		EvalTokens: 4096, FinalEvalTokens: 8192, BPEBytes: 200_000,
		Out: filepath.Join(dir, "m.gguf"), Checkpoint: filepath.Join(dir, "ck"), WeightType: tensor.F16,
	}
}

// TestShakespeare trains briefly on Tiny Shakespeare: held-out loss drops,
// the model beats... at least is gated; a second identical run gives the
// identical curve, and stopping + resuming from a checkpoint too.
func TestShakespeare(t *testing.T) {
	dir := t.TempDir()
	o := shakespeareOptions(t, dir)
	rep, err := Run(o)
	if err != nil && !errors.Is(err, ErrNotPromoted) {
		t.Fatal(err)
	}
	t.Logf("held-out loss %.3f -> %.3f, %.3f bits/byte (KN3 baseline %.3f), %.0f tok/s; %s",
		rep.HeldOutLoss0, rep.HeldOutLoss, rep.HeldOutBPB, rep.BaselineBPB, rep.TokensPerSec, rep.Reason)
	if !(rep.HeldOutLoss < rep.HeldOutLoss0-0.5) {
		t.Errorf("held-out loss did not drop: %.3f -> %.3f", rep.HeldOutLoss0, rep.HeldOutLoss)
	}
	// 40 steps cannot beat the trigram: the gate keeps nothing at Out.
	if rep.Promoted || !errors.Is(err, ErrNotPromoted) {
		t.Errorf("undertrained model promoted (err %v)", err)
	}
	if _, err := os.Stat(o.Out); err == nil {
		t.Error("rejected model written to --out")
	}
	if _, err := os.Stat(rep.CandidatePath); err != nil {
		t.Errorf("candidate not kept: %v", err)
	}
	if len(rep.Losses) != o.Steps {
		t.Fatalf("%d losses for %d steps", len(rep.Losses), o.Steps)
	}

	// Resume: stop half way (checkpointing), continue: the same curve.
	dir2 := t.TempDir()
	o2 := shakespeareOptions(t, dir2)
	o2.StopAfter = 20
	if _, err := Run(o2); err != nil {
		t.Fatal(err)
	}
	o2.StopAfter, o2.Resume = 0, true
	rep2, err := Run(o2)
	if err != nil && !errors.Is(err, ErrNotPromoted) {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Losses, rep2.Losses) {
		t.Errorf("resumed curve differs:\n%v\n%v", rep.Losses, rep2.Losses)
	}
	if !slices.Equal(rep.Params, rep2.Params) {
		t.Error("resumed run ends with different parameters")
	}

	// A last known-good model at --out is evaluated, and kept when the new
	// model does not beat it.
	os.Rename(rep.CandidatePath, o.Out)
	before, _ := os.ReadFile(o.Out)
	o3 := shakespeareOptions(t, dir)
	o3.Steps, o3.Checkpoint = 5, ""
	rep3, err := Run(o3)
	if !errors.Is(err, ErrNotPromoted) || math.IsNaN(rep3.PrevBPB) {
		t.Fatalf("err %v, previous model's bits/byte %v", err, rep3.PrevBPB)
	}
	if d := rep3.PrevBPB - rep.HeldOutBPB; math.Abs(d) > 0.002 { // the same windows; F16 weights
		t.Errorf("served evaluation of the previous model %.4f, training evaluation %.4f", rep3.PrevBPB, rep.HeldOutBPB)
	}
	man, ok, err := ReadManifest(o.Out)
	if err != nil || !ok || man.Steps != o.Steps || man.Seed != o.Seed || man.CorpusSHA256 == "" || man.BaselineBPB != rep.BaselineBPB {
		t.Errorf("manifest %+v, %v, %v", man, ok, err)
	}
	after, _ := os.ReadFile(o.Out)
	if !slices.Equal(before, after) {
		t.Error("last known-good model replaced")
	}

	// A fine-tune from that model starts where it ended (its weights and
	// tokenizer, F16-rounded), not from a fresh initialization, and says so
	// in its manifest.
	o4 := shakespeareOptions(t, t.TempDir())
	o4.Steps, o4.Checkpoint, o4.InitFrom, o4.Prev = 5, "", o.Out, o.Out
	o4.Shape.Vocab = 999 // the model's own tokenizer is used
	rep4, err := Run(o4)
	if err != nil && !errors.Is(err, ErrNotPromoted) {
		t.Fatal(err)
	}
	if d := rep4.HeldOutLoss0 - rep.HeldOutLoss; math.Abs(d) > 0.1 {
		t.Errorf("fine-tune starts at held-out loss %.4f; the model it starts from ends at %.4f (fresh: %.4f)", rep4.HeldOutLoss0, rep.HeldOutLoss, rep.HeldOutLoss0)
	}
	if !slices.Equal(rep4.Vocab.Tokens, rep.Vocab.Tokens) {
		t.Error("fine-tune trained its own tokenizer")
	}
	cand := rep4.CandidatePath
	if rep4.Promoted {
		cand = o4.Out
	}
	// The manifest names the model it came from by a portable path (here a
	// temporary file: its base name), never the machine's absolute path.
	if man, _, _ := ReadManifest(cand); !strings.Contains(man.InitFrom, filepath.Base(o.Out)) || strings.Contains(man.InitFrom, o.Out) || !strings.Contains(man.InitFrom, "40 steps") {
		t.Errorf("fine-tune's manifest init_from %q", man.InitFrom)
	}
	o4.Shape.Dim = 48
	if _, err := Run(o4); err == nil || !strings.Contains(err.Error(), "token_embd.weight") {
		t.Errorf("fine-tune with another shape: %v", err)
	}

	// Grown by two blocks and trained with the rest frozen: it starts as
	// exactly the model it grew from (the new blocks add zero), its old
	// blocks, embeddings and head end untouched, the new ones trained.
	o5 := shakespeareOptions(t, t.TempDir())
	o5.Steps, o5.Checkpoint, o5.InitFrom, o5.Prev, o5.FreezeInit = 5, "", o.Out, o.Out, true
	src := o5.Shape.Layers
	o5.Shape.Layers += 2
	rep5, err := Run(o5)
	if err != nil && !errors.Is(err, ErrNotPromoted) {
		t.Fatal(err)
	}
	if d := rep5.HeldOutLoss0 - rep4.HeldOutLoss0; math.Abs(d) > 1e-5 {
		t.Errorf("grown model starts at held-out loss %.6f, the model it grew from %.6f", rep5.HeldOutLoss0, rep4.HeldOutLoss0)
	}
	from, _ := GrowLayers(src, o5.Shape.Layers)
	init, _, newLayers, err := ReadParams(o.Out, rep5.Config)
	if err != nil || len(newLayers) != 2 {
		t.Fatalf("ReadParams grown: new layers %v, %v", newLayers, err)
	}
	ts, _ := rep5.Config.Layout()
	for _, tn := range ts {
		var l int
		var rest string
		isNew := false
		if k, _ := fmt.Sscanf(tn.Name, "blk.%d.%s", &l, &rest); k == 2 {
			isNew = from[l] < 0
		}
		moved := !slices.Equal(init[tn.Off:tn.Off+tn.Size()], rep5.Params[tn.Off:tn.Off+tn.Size()])
		if moved != isNew {
			t.Errorf("%s: new block %v, trained %v", tn.Name, isNew, moved)
		}
	}
	cand = rep5.CandidatePath
	if rep5.Promoted {
		cand = o5.Out
	}
	if man, _, _ := ReadManifest(cand); !strings.Contains(man.InitFrom, "grown to") {
		t.Errorf("grown model's manifest init_from %q", man.InitFrom)
	}
	// Stopped part way (--stop-after) and written by a resume whose --steps
	// the checkpoint has reached: its manifest still tells the lineage and
	// the steps trained.
	d6 := t.TempDir()
	o6 := shakespeareOptions(t, d6)
	o6.InitFrom, o6.Prev, o6.FreezeInit = o.Out, o.Out, true
	o6.Shape.Layers = src + 2
	o6.Steps, o6.StopAfter, o6.Checkpoint, o6.Resume = 10, 4, filepath.Join(d6, "ck"), true
	if _, err := Run(o6); err != nil {
		t.Fatal(err)
	}
	o6.Steps, o6.StopAfter = 1, 0
	rep6, err := Run(o6)
	if err != nil && !errors.Is(err, ErrNotPromoted) {
		t.Fatal(err)
	}
	cand = rep6.CandidatePath
	if rep6.Promoted {
		cand = o6.Out
	}
	if man, _, _ := ReadManifest(cand); man.Steps != 4 || !strings.Contains(man.InitFrom, "grown to") {
		t.Errorf("resumed past --steps: manifest steps %d, init_from %q", man.Steps, man.InitFrom)
	}

	o5.Shape.Layers = src
	if _, err := Run(o5); err == nil || !strings.Contains(err.Error(), "nothing to train") {
		t.Errorf("freezing without growing: %v", err)
	}
}

func TestGrowLayers(t *testing.T) {
	for _, c := range []struct {
		src, dst int
		want     []int
	}{
		{4, 4, []int{0, 1, 2, 3}},
		{4, 6, []int{0, 1, -2, 2, 3, -4}},
		{4, 5, []int{0, 1, 2, 3, -4}},
		{4, 8, []int{0, -1, 1, -2, 2, -3, 3, -4}},
		{3, 5, []int{0, 1, -2, 2, -3}},
		{1, 3, []int{0, -1, -1}},
	} {
		if got, err := GrowLayers(c.src, c.dst); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("GrowLayers(%d, %d) = %v, %v; want %v", c.src, c.dst, got, err, c.want)
		}
	}
	if _, err := GrowLayers(4, 3); err == nil {
		t.Error("shrinking: no error")
	}
}

func TestGate(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		bpb, base, prev float64
		ok              bool
	}{
		{1.5, 2, nan, true}, {2.5, 2, nan, false}, {2, 2, nan, false},
		{1.5, 2, 1.4, false}, {1.3, 2, 1.4, true}, {nan, 2, nan, false},
	} {
		if ok, why := Gate(c.bpb, c.base, c.prev); ok != c.ok || why == "" {
			t.Errorf("Gate(%v, %v, %v) = %v, %q", c.bpb, c.base, c.prev, ok, why)
		}
	}
}

// TestKN3 checks the baseline is a distribution and prefers seen continuations.
func TestKN3(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	toks := make([]int32, 2000)
	for i := range toks {
		toks[i] = int32(rng.IntN(7))
		if i > 0 && toks[i-1] == 3 {
			toks[i] = 4
		}
	}
	m := NewKN3(toks, 9)
	for _, ctx := range [][2]int32{{-1, -1}, {-1, 3}, {1, 3}, {8, 8}, {2, 5}} {
		var s float64
		for w := range int32(9) {
			s += m.Prob(ctx[0], ctx[1], w)
		}
		if math.Abs(s-1) > 1e-9 {
			t.Errorf("context %v: probabilities sum to %v", ctx, s)
		}
	}
	if p := m.Prob(1, 3, 4); p < 0.9 {
		t.Errorf("P(4 | 1 3) = %v, want ≈ 1", p)
	}
}
