package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/hfwrite"
	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// hybridModels are the gguf-archs fixtures of the hybrid architectures.
var hybridModels = []string{"qwen35", "lfm2"}

// TestHybridGoldens: for each hybrid fixture, the prompts' ids, the greedy
// ids, every top-10 logprob within 0.1 of llama.cpp's (F16 KV cache, as
// the goldens were made) and the chosen id's within 0.04 of the golden's
// independent float64 forward pass, with the prompt fed at once and in
// chunks of 7 (the recurrent state carried across Forward calls).
func TestHybridGoldens(t *testing.T) {
	for _, name := range hybridModels {
		t.Run(name, func(t *testing.T) {
			g, path := archPath(t, name, "F16")
			m := mustLoad(t, path, Options{Threads: 2})
			if !m.IsHybrid() || m.CacheLayers() != 1 {
				t.Fatalf("loaded as hybrid %v with %d attention layers, want 1", m.IsHybrid(), m.CacheLayers())
			}
			for _, chunk := range []int{0, 7} {
				checkLcppGoldenKV(t, m, g, 0.1, chunk == 0, true, chunk, tensor.F16)
			}
			checkRefF64(t, m, g, 0.04, tensor.F16)
		})
	}
}

// TestHybridParity: the cached forward (one token at a time, and in chunks
// of 5) equals the float64 full recompute (ForwardRef, whose recurrent
// mixers are written from the equations), and two sequences batched
// together equal each alone.
func TestHybridParity(t *testing.T) {
	for _, name := range hybridModels {
		t.Run(name, func(t *testing.T) {
			g, path := archPath(t, name, "F16")
			m := mustLoad(t, path, Options{Threads: 2})
			p := g.Prompts[0]
			toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
			checkCacheParity(t, m, toks, 5e-4)
			checkBatched(t, m, toks, g.Prompts[1].PromptIDs[:30], 0)
		})
	}
}

// TestHybridChunkInvariant: a sequence's logits are bit for bit the same
// whatever its prompt's split into Forward calls and whatever else shares
// the batch (batch invariance of the recurrent mixers).
func TestHybridChunkInvariant(t *testing.T) {
	for _, name := range hybridModels {
		t.Run(name, func(t *testing.T) {
			g, path := archPath(t, name, "F16")
			m := mustLoad(t, path, Options{Threads: 2})
			toks := g.Prompts[0].PromptIDs
			ref := runSeq(t, m, toks, 1)
			for _, chunk := range []int{0, 3, 16, 64} {
				if got := runSeq(t, m, toks, chunk); !slices.Equal(got, ref) {
					d, at := maxAbsDiff(got, ref)
					t.Errorf("chunk %d: logits differ from one token at a time by %g at %d", chunk, d, at)
				}
			}
		})
	}
}

// TestHybridStates: the cache's state pool — a restart at position 0
// zeroes the state (the same logits as a fresh sequence), a rewind to
// another position is refused, Truncate below Len forgets everything,
// Match attaches nothing, Fork copies the state, Release returns the slot.
func TestHybridStates(t *testing.T) {
	g, path := archPath(t, "qwen35", "F16")
	m := mustLoad(t, path, Options{Threads: 2})
	toks := g.Prompts[0].PromptIDs[:20]
	c, err := m.NewCacheSeqs(256, tensor.F32, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c.StateBytes() != 2*m.StateBytes() || c.Bytes() <= c.StateBytes() {
		t.Fatalf("state bytes %d, want 2 × %d inside Bytes %d", c.StateBytes(), m.StateBytes(), c.Bytes())
	}
	run := func(s *kvcache.Seq, from int, ts []int) []float32 {
		t.Helper()
		b := Batch{}
		for i, tok := range ts {
			b.Tokens, b.Pos, b.Seq = append(b.Tokens, tok), append(b.Pos, from+i), append(b.Seq, s)
		}
		lg, err := m.Forward(b, c)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(lg)
	}
	a := &kvcache.Seq{}
	if err := c.Reserve(a, 64); err != nil {
		t.Fatal(err)
	}
	want := run(a, 0, toks)
	if got := run(a, 0, toks); !slices.Equal(got, want) { // restart at 0
		t.Error("a restart at position 0 did not start from a zero state")
	}
	if _, err := m.Forward(Batch{Tokens: toks[:1], Pos: []int{5}, Seq: []*kvcache.Seq{a}}, c); err == nil {
		t.Error("a rewind to position 5 of 20 was accepted")
	}
	// Fork: the copy continues exactly as the original.
	f := &kvcache.Seq{}
	c.Fork(f, a)
	if f.Len != a.Len || !c.HasState(f) {
		t.Fatalf("fork: Len %d, state %v", f.Len, c.HasState(f))
	}
	c.Truncate(f, f.Len)
	if err := c.Reserve(f, 8); err != nil {
		t.Fatal(err)
	}
	c.Truncate(a, a.Len)
	next := []int{toks[3], toks[4]}
	if x, y := run(f, 20, next), run(a, 20, next); !slices.Equal(x, y) {
		t.Error("the fork's logits differ from the original's")
	}
	// No third slot: Reserve fails and changes nothing, Fork leaves it empty.
	e := &kvcache.Seq{}
	if err := c.Reserve(e, 4); err == nil || len(e.Blocks) != 0 {
		t.Errorf("Reserve without a free state slot: %v, %d blocks", err, len(e.Blocks))
	}
	c.Fork(e, a)
	if e.Len != 0 || len(e.Blocks) != 0 || c.HasState(e) {
		t.Errorf("Fork without a free slot: Len %d, %d blocks", e.Len, len(e.Blocks))
	}
	// Truncate below Len forgets every position; Match finds nothing.
	c.Commit(a, append(slices.Clone(toks), next...))
	if n := c.Truncate(a, 10); n != 0 || a.Len != 0 || len(a.Blocks) != 0 {
		t.Errorf("Truncate(10) kept %d positions, %d blocks", n, len(a.Blocks))
	}
	c.Release(a)
	c.Release(f)
	s := &kvcache.Seq{}
	if n := c.Match(s, toks, len(toks)); n != 0 {
		t.Errorf("Match attached %d positions to a hybrid sequence", n)
	}
	if c.FreeStates() != 2 || len(c.UsedStates()) != 0 {
		t.Errorf("after releasing everything: %d free states, used %v", c.FreeStates(), c.UsedStates())
	}
	if err := c.Check(); err != nil {
		t.Error(err)
	}
}

// TestDeltaRuleChunked: the chunked (WY) form of the gated delta rule
// equals the recurrent form and the float64 reference, output by output
// and in the final state, for chunk sizes that do and do not divide the
// sequence, from a non-zero initial state.
func TestDeltaRuleChunked(t *testing.T) {
	const L, d = 37, 16
	rng := newTestRand(7)
	q, k, v := make([]float64, L*d), make([]float64, L*d), make([]float64, L*d)
	g, b := make([]float64, L), make([]float64, L)
	for i := range q {
		q[i], k[i], v[i] = rng.norm(), rng.norm(), rng.norm()
	}
	for t := range L {
		refL2Norm(q[t*d:(t+1)*d], 1e-6)
		refL2Norm(k[t*d:(t+1)*d], 1e-6)
		g[t] = -0.05 - 0.5*rng.unif()
		b[t] = rng.unif()
	}
	S0 := make([]float64, d*d)
	for i := range S0 {
		S0[i] = 0.1 * rng.norm()
	}
	Sref := slices.Clone(S0)
	ref := deltaRuleRef64(q, k, v, g, b, Sref, L, d)

	// float32 recurrent form (the forward's deltaStep).
	f32 := func(x []float64) []float32 {
		o := make([]float32, len(x))
		for i, e := range x {
			o[i] = float32(e)
		}
		return o
	}
	S := f32(S0)
	rec := make([]float32, L*d)
	q32, k32, v32 := f32(q), f32(k), f32(v)
	for t := range L {
		deltaStep(rec[t*d:(t+1)*d], S, q32[t*d:(t+1)*d], k32[t*d:(t+1)*d], v32[t*d:(t+1)*d], float32(math.Exp(g[t])), float32(b[t]))
	}
	worst := 0.0
	for i := range ref {
		worst = max(worst, math.Abs(float64(rec[i])-ref[i]))
	}
	if worst > 1e-5 {
		t.Errorf("recurrent float32 vs float64: %g", worst)
	}
	for _, cs := range []int{1, 4, 8, 37, 64} {
		Sc := slices.Clone(S0)
		got := deltaRuleChunked(q, k, v, g, b, Sc, L, d, cs)
		w := 0.0
		for i := range ref {
			w = max(w, math.Abs(got[i]-ref[i]))
		}
		ws := 0.0
		for i := range Sref {
			ws = max(ws, math.Abs(Sc[i]-Sref[i]))
		}
		if w > 1e-10 || ws > 1e-10 {
			t.Errorf("chunk %d: outputs differ by %g, final state by %g", cs, w, ws)
		}
	}
}

// testRand is a small deterministic generator for the tests.
type testRand struct{ s uint64 }

func newTestRand(seed uint64) *testRand { return &testRand{seed*2654435761 + 1} }

func (r *testRand) unif() float64 {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return float64(r.s>>11) / (1 << 53)
}

func (r *testRand) norm() float64 {
	u1, u2 := r.unif(), r.unif()
	return math.Sqrt(-2*math.Log(u1+1e-300)) * math.Cos(2*math.Pi*u2)
}

// qwen35MoEFixture writes a qwen35moe GGUF made from the qwen35 fixture:
// the same metadata under qwen35moe.*, the same attention and delta-net
// weights, and in place of each dense FFN a mixture of 4 experts (2 used,
// width 32) with a shared expert (width 48) and its gate, random F16
// (router and gates F32), as llama.cpp's converter names them.
func qwen35MoEFixture(t *testing.T) string {
	t.Helper()
	_, path := archPath(t, "qwen35", "F16")
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		key, v := kv.Key, kv.Value
		switch {
		case key == "general.architecture":
			v = gguf.String("qwen35moe")
		case key == "qwen35.feed_forward_length":
			continue
		case strings.HasPrefix(key, "qwen35."):
			key = "qwen35moe." + strings.TrimPrefix(key, "qwen35.")
		}
		if err := w.AddKV(key, v); err != nil {
			t.Fatal(err)
		}
	}
	const E, used, eh, sh = 4, 2, 32, 48
	for k, v := range map[string]uint32{"expert_count": E, "expert_used_count": used, "expert_feed_forward_length": eh, "expert_shared_feed_forward_length": sh} {
		if err := w.AddKV("qwen35moe."+k, gguf.Uint32(v)); err != nil {
			t.Fatal(err)
		}
	}
	rng := newTestRand(35)
	f16 := func(n int, scale float64) []byte {
		b := make([]byte, 2*n)
		for i := range n {
			binary.LittleEndian.PutUint16(b[2*i:], tensor.F32ToF16(float32(scale*rng.norm())))
		}
		return b
	}
	f32 := func(n int, scale float64) []byte {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(scale * rng.norm())
		}
		return tensor.F32Bytes(v)
	}
	const dim = 64
	for _, ti := range f.Tensors {
		if strings.Contains(ti.Name, ".ffn_gate.") || strings.Contains(ti.Name, ".ffn_up.") || strings.Contains(ti.Name, ".ffn_down.") {
			continue
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data); err != nil {
			t.Fatal(err)
		}
	}
	for l := range 4 {
		p := fmt.Sprintf("blk.%d.", l)
		for _, x := range []struct {
			name string
			t    tensor.DType
			dims []uint64
			data []byte
		}{
			{"ffn_gate_inp.weight", tensor.F32, []uint64{dim, E}, f32(dim*E, 0.3)},
			{"ffn_gate_exps.weight", tensor.F16, []uint64{dim, eh, E}, f16(dim*eh*E, 0.15)},
			{"ffn_up_exps.weight", tensor.F16, []uint64{dim, eh, E}, f16(dim*eh*E, 0.15)},
			{"ffn_down_exps.weight", tensor.F16, []uint64{eh, dim, E}, f16(eh*dim*E, 0.15)},
			{"ffn_gate_inp_shexp.weight", tensor.F32, []uint64{dim}, f32(dim, 0.3)},
			{"ffn_gate_shexp.weight", tensor.F16, []uint64{dim, sh}, f16(dim*sh, 0.15)},
			{"ffn_up_shexp.weight", tensor.F16, []uint64{dim, sh}, f16(dim*sh, 0.15)},
			{"ffn_down_shexp.weight", tensor.F16, []uint64{sh, dim}, f16(sh*dim, 0.15)},
		} {
			if err := w.AddTensor(p+x.name, x.t, x.dims, x.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := filepath.Join(t.TempDir(), "qwen35moe-F16.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQwen35MoE: a qwen35moe file (experts and a gated shared expert
// beside the delta nets) loads with its shapes, and its cached forward
// (token by token, in chunks) equals the float64 reference, bit for bit
// whatever the chunking and batching. No llama.cpp golden exists for this
// architecture here (the fixture is made from qwen35's by the test).
func TestQwen35MoE(t *testing.T) {
	m := mustLoad(t, qwen35MoEFixture(t), Options{Threads: 2})
	if m.Arch != ArchQwen35MoE || m.Experts != 4 || m.ExpertsUsed != 2 || m.ExpertHiddenDim != 32 || m.SharedExpertHiddenDim != 48 || !m.IsHybrid() {
		t.Fatalf("config %+v", m.Config)
	}
	g, _ := archPath(t, "qwen35", "F16")
	toks := append(slices.Clone(g.Prompts[0].PromptIDs), g.Prompts[0].GeneratedIDs...)
	checkCacheParity(t, m, toks, 5e-4)
	checkBatched(t, m, toks, g.Prompts[1].PromptIDs[:30], 0)
	ref := runSeq(t, m, toks, 1)
	if got := runSeq(t, m, toks, 16); !slices.Equal(got, ref) {
		t.Error("chunks of 16 differ from one token at a time")
	}
}

// TestLFM2HF: the lfm2 fixture as a Hugging Face checkpoint (written by
// hfwrite from transformers' names: operator_norm, conv.conv as a
// (dim, 1, L) Conv1d kernel, feed_forward.w1/w3/w2, embedding_norm,
// layer_types) loads with the GGUF's config and gives its logits bit for
// bit.
func TestLFM2HF(t *testing.T) {
	g, path := archPath(t, "lfm2", "F16")
	dir := filepath.Join(t.TempDir(), "lfm2")
	if err := hfwrite.LFM2FromGGUF(path, dir); err != nil {
		t.Fatal(err)
	}
	mg := mustLoad(t, path, Options{Threads: 2})
	mh := mustLoad(t, dir, Options{Threads: 2})
	a, b := mg.Config, mh.Config
	if a.Arch != b.Arch || a.HiddenDim != b.HiddenDim || a.KVHeads != b.KVHeads || a.ConvKernel != b.ConvKernel ||
		!slices.Equal(a.Recurrent, b.Recurrent) || a.NormEps != b.NormEps || a.RopeTheta != b.RopeTheta || a.Tied != b.Tied || a.RopeDim != b.RopeDim {
		t.Fatalf("configs differ:\n gguf %+v\n   hf %+v", a, b)
	}
	p := g.Prompts[0]
	toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
	if lg, lh := runSeq(t, mg, toks, 0), runSeq(t, mh, toks, 0); !slices.Equal(lg, lh) {
		d, at := maxAbsDiff(lg, lh)
		t.Errorf("Hugging Face logits differ from the GGUF's by %g at %d", d, at)
	}
}

// TestLFM2MoEHF: bench's synthetic lfm2moe file (tiny-lfm2moe: a dense
// leading layer, 8 σ-gated experts with a selection bias) as a Hugging
// Face checkpoint (hfwrite from modeling_lfm2_moe.py's names:
// feed_forward.gate, feed_forward.expert_bias, per-expert
// feed_forward.experts.E.w1/w3/w2, num_dense_layers) loads with the GGUF's
// config and gives its logits bit for bit over 300 tokens. The settings
// llama.cpp's graph does not run are refused by name; use_expert_bias
// false loads without the bias tensor and routes by σ alone; a missing
// bias is an error otherwise; rope_parameters' base is read.
func TestLFM2MoEHF(t *testing.T) {
	path := mustSynthetic(t, "tiny-lfm2moe", "f16", 1, "")
	write := func(t *testing.T, fields map[string]any, drop func(string) bool) string {
		return writeHFEdited(t, hfwrite.LFM2FromGGUF, path, "lfm2moe", fields, drop)
	}
	mg := mustLoad(t, path, Options{Threads: 2})
	mh := mustLoad(t, write(t, nil, nil), Options{Threads: 2})
	a, b := mg.Config, mh.Config
	if a.Arch != ArchLFM2MoE || a.Arch != b.Arch || a.Dim != b.Dim || a.Layers != b.Layers || a.Heads != b.Heads || a.KVHeads != b.KVHeads ||
		a.HeadDim != b.HeadDim || a.HiddenDim != b.HiddenDim || a.Experts != b.Experts || a.ExpertsUsed != b.ExpertsUsed ||
		a.ExpertHiddenDim != b.ExpertHiddenDim || a.DenseLead != b.DenseLead || a.ExpertGating != b.ExpertGating || a.RouterSelBias != b.RouterSelBias ||
		a.ConvKernel != b.ConvKernel || !slices.Equal(a.Recurrent, b.Recurrent) || a.NormEps != b.NormEps || a.RopeTheta != b.RopeTheta ||
		a.RopeDim != b.RopeDim || a.RopeNeox != b.RopeNeox || a.Tied != b.Tied || a.QKNorm != b.QKNorm || a.Vocab != b.Vocab ||
		a.DenseLead == 0 || a.HiddenDim == a.ExpertHiddenDim || !b.RouterSelBias || b.ExpertGating != GatingSigmoid {
		t.Fatalf("configs differ:\n gguf %+v\n   hf %+v", a, b)
	}
	toks, lg := checkSameLogits(t, mg, mh)

	isBias := func(n string) bool { return strings.HasSuffix(n, ".feed_forward.expert_bias") }
	for _, bad := range []struct {
		fields map[string]any
		drop   func(string) bool
		want   string
	}{
		{fields: map[string]any{"norm_topk_prob": false}, want: "norm_topk_prob false"},
		{fields: map[string]any{"routed_scaling_factor": 2.5}, want: "routed_scaling_factor 2.5"},
		{fields: map[string]any{"conv_bias": true}, want: "conv_bias true"},
		{drop: isBias, want: "missing tensor model.layers.1.feed_forward.expert_bias"},
	} {
		_, err := Load(write(t, bad.fields, bad.drop), Options{Threads: 2})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("config %v, dropped bias %v: err %v, want one naming %q", bad.fields, bad.drop != nil, err, bad.want)
		}
	}

	mn := mustLoad(t, write(t, map[string]any{"use_expert_bias": false}, isBias), Options{Threads: 2})
	if mn.Config.RouterSelBias || slices.ContainsFunc(mn.w.layers, func(l layerWeights) bool { return l.routerSelB != nil }) {
		t.Errorf("use_expert_bias false: RouterSelBias %v, selection biases read", mn.Config.RouterSelBias)
	}
	if ln := runSeq(t, mn, toks, 0); slices.Equal(lg, ln) {
		t.Errorf("use_expert_bias false: the logits are the biased routing's")
	}
	mr := mustLoad(t, write(t, map[string]any{"rope_theta": nil, "rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 5e5}}, nil), Options{Threads: 2})
	if mr.Config.RopeTheta != 5e5 {
		t.Errorf("rope_parameters.rope_theta 5e5: RopeTheta %g", mr.Config.RopeTheta)
	}
}

// TestQwen35HF: the qwen35 fixture as a Hugging Face checkpoint (hfwrite:
// transformers' names, 1 + w norms, A_log, value heads grouped by key
// head), plain and in the vision-language layout (text_config,
// model.language_model.), loads with the GGUF's config and gives its
// logits bit for bit (ssm_a made representable as a float32 A_log first:
// exactHFSSMA).
func TestQwen35HF(t *testing.T) {
	g, path := archPath(t, "qwen35", "F16")
	path = exactHFSSMA(t, path)
	mg := mustLoad(t, path, Options{Threads: 2})
	p := g.Prompts[0]
	toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
	lg := runSeq(t, mg, toks, 0)
	for _, vl := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("qwen35-", vl))
		if err := hfwrite.Qwen35FromGGUF(path, dir, vl); err != nil {
			t.Fatal(err)
		}
		mh := mustLoad(t, dir, Options{Threads: 2})
		a, b := mg.Config, mh.Config
		if a.Arch != b.Arch || a.HiddenDim != b.HiddenDim || a.KVHeads != b.KVHeads || a.HeadDim != b.HeadDim || a.ConvKernel != b.ConvKernel ||
			a.SSMKHeads != b.SSMKHeads || a.SSMVHeads != b.SSMVHeads || a.SSMHeadDim != b.SSMHeadDim || !slices.Equal(a.Recurrent, b.Recurrent) ||
			a.NormEps != b.NormEps || a.RopeTheta != b.RopeTheta || a.RopeDim != b.RopeDim || a.Tied != b.Tied || !b.AttnGate || !b.QKNorm {
			t.Fatalf("vl %v: configs differ:\n gguf %+v\n   hf %+v", vl, a, b)
		}
		if lh := runSeq(t, mh, toks, 0); !slices.Equal(lg, lh) {
			d, at := maxAbsDiff(lg, lh)
			t.Errorf("vl %v: Hugging Face logits differ from the GGUF's by %g at %d", vl, d, at)
		}
	}
}

// exactHFSSMA writes a copy of the Qwen3.5 GGUF at path whose ssm_a values
// survive the Hugging Face round trip: hfwrite stores A_log =
// float32(log(−a)) and the loader rebuilds a = float32(−exp(A_log)), which
// is not onto the float32s: where |A_log| > 1 consecutive float32 A_logs
// are further apart (relative to a) than a's own ulp, so some a (4 of the
// fixture's 12, e.g. −0.1550293) come back 1 ulp off, and that alone moves
// the logits by up to ~1e-4 after 95 tokens of delta-net state. Each a is
// replaced by its round trip, a value a float32 A_log gives exactly, so
// the two loads must agree bit for bit (every other weight is the GGUF's
// own bytes: value heads, experts and norms come back exactly).
func exactHFSSMA(t *testing.T, path string) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, e := range f.KV {
		if err := w.AddKV(e.Key, e.Value); err != nil {
			t.Fatal(err)
		}
	}
	for _, ti := range f.Tensors {
		data := ti.Data
		if strings.HasSuffix(ti.Name, ".ssm_a") {
			if ti.Type != tensor.F32 {
				t.Fatalf("%s is %s, want F32", ti.Name, ti.Type)
			}
			data = make([]byte, len(ti.Data))
			for i := 0; i+4 <= len(data); i += 4 {
				a := math.Float32frombits(binary.LittleEndian.Uint32(ti.Data[i:]))
				a = float32(-math.Exp(float64(float32(math.Log(-float64(a)))))) // hfwrite's A_log, the loader's −exp
				binary.LittleEndian.PutUint32(data[i:], math.Float32bits(a))
			}
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "exact-ssm_a.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// rewriteGGUF writes a copy of the GGUF at path with metadata key edits
// (a nil value drops the key) and without the tensor drop ("" keeps all).
func rewriteGGUF(t *testing.T, path string, kv map[string]*gguf.Value, drop string) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, e := range f.KV {
		v := e.Value
		if nv, ok := kv[e.Key]; ok {
			if nv == nil {
				continue
			}
			v = *nv
		}
		if err := w.AddKV(e.Key, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, ti := range f.Tensors {
		if ti.Name == drop {
			continue
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "bad.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHybridBadFiles: inconsistent hybrid hyperparameters and missing
// recurrent tensors are load errors naming the problem, never a panic.
func TestHybridBadFiles(t *testing.T) {
	_, q := archPath(t, "qwen35", "F16")
	_, l := archPath(t, "lfm2", "F16")
	u32 := func(x uint32) *gguf.Value { v := gguf.Uint32(x); return &v }
	flags := func(b ...bool) *gguf.Value {
		v := gguf.NewArray(b)
		return &v
	}
	for _, c := range []struct {
		name, path string
		kv         map[string]*gguf.Value
		drop, want string
	}{
		{"inner size", q, map[string]*gguf.Value{"qwen35.ssm.inner_size": u32(48)}, "", "inner_size"},
		{"value heads not a multiple of key heads", q, map[string]*gguf.Value{"qwen35.ssm.time_step_rank": u32(3), "qwen35.ssm.inner_size": u32(48)}, "", "multiple"},
		{"conv width", q, map[string]*gguf.Value{"qwen35.ssm.conv_kernel": u32(1)}, "", "convolution width"},
		{"no attention layer", q, map[string]*gguf.Value{"qwen35.attention.recurrent_layers": flags(true, true, true, true)}, "", "attention layer"},
		{"pattern length", q, map[string]*gguf.Value{"qwen35.attention.recurrent_layers": flags(true, false)}, "", "recurrent_layers"},
		{"missing ssm_a", q, nil, "blk.1.ssm_a", "blk.1.ssm_a"},
		{"missing conv", l, nil, "blk.0.shortconv.conv.weight", "shortconv.conv"},
		{"missing l_cache", l, map[string]*gguf.Value{"lfm2.shortconv.l_cache": nil}, "", "l_cache"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(rewriteGGUF(t, c.path, c.kv, c.drop), Options{Threads: 1})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "model: ") {
				t.Errorf("err %v, want a model: error mentioning %q", err, c.want)
			}
		})
	}
}

// TestQwen35NextN: a file whose block_count includes a multi-token
// prediction block (nextn_predict_layers, recurrent_layers over all
// blocks; its tensors are not read) runs the trunk: the fixture's logits.
func TestQwen35NextN(t *testing.T) {
	g, path := archPath(t, "qwen35", "F16")
	flags := gguf.NewArray([]bool{true, true, true, false, false})
	five, one := gguf.Uint32(5), gguf.Uint32(1)
	nextn := rewriteGGUF(t, path, map[string]*gguf.Value{"qwen35.block_count": &five, "qwen35.attention.recurrent_layers": &flags}, "")
	// rewriteGGUF only edits keys; add nextn_predict_layers by a second pass.
	f, err := gguf.Open(nextn)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	if err := w.AddFile(f); err != nil {
		t.Fatal(err)
	}
	if err := w.AddKV("qwen35.nextn_predict_layers", one); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "nextn.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	f.Close()
	m, m0 := mustLoad(t, out, Options{Threads: 2}), mustLoad(t, path, Options{Threads: 2})
	if m.Layers != 4 || !slices.Equal(m.Recurrent, m0.Recurrent) {
		t.Fatalf("layers %d, pattern %v", m.Layers, m.Recurrent)
	}
	toks := g.Prompts[0].PromptIDs
	if !slices.Equal(runSeq(t, m, toks, 0), runSeq(t, m0, toks, 0)) {
		t.Error("logits differ from the file without the extra block")
	}
}

// TestHybridDeltaChunked: the forward pass with the chunked delta rule
// (deltaChunk, chunks of 4, 16 and 64 over the whole prompt and over
// steps of 7 tokens) against the recurrent one on the qwen35 fixture: the
// logits of every position within 1e-5 relative to their largest (seen:
// 2e-6; the two forms round differently) and llama.cpp's goldens hold.
// The log shows the steps changing the chunked form's bits, which is why
// the forward pass keeps the recurrent form.
func TestHybridDeltaChunked(t *testing.T) {
	g, path := archPath(t, "qwen35", "F16")
	m := mustLoad(t, path, Options{Threads: 2})
	p := g.Prompts[3]
	toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
	ref := runSeq(t, m, toks, 0)
	scale := 0.0
	for _, x := range ref {
		scale = math.Max(scale, math.Abs(float64(x)))
	}
	defer func(c int) { deltaChunk = c }(deltaChunk)
	for _, c := range []int{4, 16, 64} {
		deltaChunk = c
		var whole []float32
		for _, step := range []int{0, 7} {
			got := runSeq(t, m, toks, step)
			d, at := maxAbsDiff(got, ref)
			t.Logf("chunk %d, steps of %d (%d tokens): logits within %.2g of the recurrent form's (largest %.3g)", c, step, len(toks), d, scale)
			if d > 1e-5*scale {
				t.Errorf("chunk %d, steps of %d: logits off the recurrent form's by %g at %d", c, step, d, at)
			}
			if whole == nil {
				whole = got
			} else if d, _ := maxAbsDiff(got, whole); d != 0 {
				t.Logf("chunk %d: steps of %d change the logits by %.2g (not batch invariant)", c, step, d)
			}
		}
		checkLcppGoldenKV(t, m, g, 0.1, false, true, 0, tensor.F16)
	}
}

// TestCausalConv4: the width-4 convolution is bit for bit the generic one,
// outputs and the shifted window, over whole and partial channel ranges
// and several tokens.
func TestCausalConv4(t *testing.T) {
	rng := newTestRand(3)
	const ch = 40
	kernel := make([]float32, ch*4)
	for i := range kernel {
		kernel[i] = float32(rng.norm())
	}
	for _, r := range [][2]int{{0, ch}, {8, 24}, {39, 40}} {
		lo, hi := r[0], r[1]
		st1, st2 := make([]float32, 3*ch), make([]float32, 3*ch)
		for range 5 {
			x := make([]float32, ch)
			for i := range x {
				x[i] = float32(rng.norm())
			}
			o1, o2 := make([]float32, ch), make([]float32, ch)
			causalConv4(o1, x, st1, kernel, ch, lo, hi)
			causalConvGeneric(o2, x, st2, kernel, ch, 4, lo, hi)
			if !slices.Equal(o1, o2) || !slices.Equal(st1, st2) {
				t.Fatalf("channels [%d, %d): width-4 %v / %v, generic %v / %v", lo, hi, o1, st1, o2, st2)
			}
		}
	}
}
