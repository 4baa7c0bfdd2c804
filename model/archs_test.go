package model

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/archfix"
	"nanoserve/internal/testshared"
	"nanoserve/kvcache"
	"nanoserve/tensor"
)

// archModels are the gguf-archs fixtures (../shared/testdata/gguf-archs):
// one per architecture block set.
var archModels = []string{"qwen3", "qwen3moe", "mixtral", "gemma2", "gemma3", "phi3", "llama3", "smollm3", "gpt-oss", "gemma4"}

func archPath(t *testing.T, name, quant string) (*lcppGolden, string) {
	g := readLcppGolden(t, testshared.Path(t, "testdata/gguf-archs/"+name+"/"+name+"-"+quant+".json"))
	return g, testshared.Path(t, "testdata/gguf-archs/"+name+"/"+g.GGUFFile)
}

// top10Tol is the bound on every top-10 logprob against llama.cpp: the
// issue's 0.1, except for gemma2 and qwen3moe, where llama.cpp itself is
// further than that from the exact answer. Decision (issue 12): we do not
// copy llama.cpp's F16 activations; we stay with the exact float64
// reference and prove the rest is llama.cpp's rounding (TestLcppRoundings).
// Measured, top-10 ids, worst over the goldens:
//
//	                      gemma2  qwen3moe  (others)
//	ours (F16 KV) − lcpp   0.318     0.174   ≤ 0.069
//	exact f64 ref − lcpp   0.387     0.162   ≤ 0.061
//	ours − exact f64 ref   0.084     0.040
//	lcpp-rounded − lcpp    0.032     0.015   ≤ 0.024
//
// and on the chosen ids llama.cpp is 0.062 (gemma2) and 0.064 (qwen3moe)
// from ref_f64_logprob, we 0.026 and 0.012 (checked ≤ 0.04 below). The
// worst entries: gemma2 prompt 1 step 3 id 28476 (llama.cpp −3.888, exact
// −4.275, ours −4.206, llama.cpp-rounded −3.877), mostly its F16 matmul
// inputs; qwen3moe prompt 0 step 14 id 21544 (llama.cpp −5.055, exact
// −4.899, ours −4.881, llama.cpp-rounded −5.051), from flash attention's
// F16 V accumulator (not a router near-tie: forcing the runner-up expert
// at the nearest ties moved it no closer). The exceptions keep a margin
// over what we measure and fail the test beyond it.
//
// gemma4 (issue 31) is the third exception: llama.cpp is 0.254 from the
// exact reference (prompt 3 step 4 id 15605: llama.cpp −4.339, exact
// −4.085), we 0.275 from llama.cpp and 0.018 from exact on the chosen
// ids; with llama.cpp's roundings the reference comes within 0.059 of it
// (the F16 GELU table in the per-layer input gate alone moved that from
// 0.099), see lcppModelTolOf.
var top10Tol = map[string]float64{"qwen3": 0.1, "mixtral": 0.1, "gemma3": 0.1, "phi3": 0.1, "llama3": 0.1, "smollm3": 0.1, "gpt-oss": 0.1,
	"gemma2": 0.35, "qwen3moe": 0.2, "gemma4": 0.3}

// goldenKVgptOSS is the KV cache TestArchGoldens runs gpt-oss over: F32.
// Over an F16 cache the rounded keys and values alone (ForwardRefKV(F16)
// gives the same, to 1e-4) flip one router choice at prompt 2 step 21
// (chosen id 10053: −2.046 against the exact −2.132 and llama.cpp's
// −2.124; top-10 0.48 off there), a near-tie our F16 cache meets and
// llama.cpp's own roundings do not. Over F32 we equal the exact reference
// and it is within 0.062 of llama.cpp.
const goldenKVgptOSS = tensor.F32

// TestArchGoldens feeds each golden's prompt and generated ids through an
// F16 KV cache (llama.cpp's, with which the goldens were made) and checks
// every step's top-10 logprobs within 0.1 of llama.cpp's (top10Tol), the
// chosen id's within 0.04 of the float64 reference's (ref_f64_logprob),
// and the greedy ids.
func TestArchGoldens(t *testing.T) {
	for _, name := range archModels {
		t.Run(name, func(t *testing.T) {
			g, path := archPath(t, name, "F16")
			m := mustLoad(t, path, Options{Threads: 2})
			kv := tensor.F16
			if name == "gpt-oss" {
				kv = goldenKVgptOSS
			}
			checkLcppGoldenKV(t, m, g, top10Tol[name], true, true, 0, kv)
			checkRefF64(t, m, g, 0.04, kv)
		})
	}
}

// checkRefF64 compares each step's chosen-id logprob with the golden's
// independent float64 forward pass.
func checkRefF64(t *testing.T, m *Model, g *lcppGolden, tol float64, kv tensor.DType) float64 {
	t.Helper()
	worst := 0.0
	for k, p := range g.Prompts {
		toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
		logits := runSeqKV(t, m, toks, 0, kv)
		P := len(p.PromptIDs)
		for j, s := range p.Steps {
			if s.RefF64 == nil {
				continue
			}
			lp := testshared.LogSoftmax(logits[(P-1+j)*m.Vocab : (P+j)*m.Vocab])
			d := math.Abs(lp[s.ID] - *s.RefF64)
			worst = max(worst, d)
			if d > tol {
				t.Errorf("prompt %d step %d id %d: logprob %.4f, float64 reference %.4f", k, j, s.ID, lp[s.ID], *s.RefF64)
			}
		}
	}
	t.Logf("%s, %s KV cache: worst difference from ref_f64_logprob %.4f", g.Model, kv, worst)
	return worst
}

// TestArchParity: for every architecture fixture, the cached forward (one
// token at a time and in chunks) equals the full recompute, two sequences
// batched equal each alone, and a sequence that reuses a cached prefix
// (prefix caching, or re-admission after preemption) and runs past the
// sliding window gives the logits of a fresh run.
func TestArchParity(t *testing.T) {
	for _, name := range archModels {
		t.Run(name, func(t *testing.T) {
			g, path := archPath(t, name, "F16")
			m := mustLoad(t, path, Options{Threads: 2})
			p := g.Prompts[0]
			toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
			if m.SlidingWindow > 0 && len(toks) <= 2*m.SlidingWindow {
				t.Fatalf("%d tokens do not cross the window %d twice", len(toks), m.SlidingWindow)
			}
			// float32 against the float64 reference. gemma2's random
			// weights amplify rounding most (logits up to ±30, and its
			// llama.cpp logprobs are the furthest from ours too).
			tol := 5e-4
			if name == "gemma2" {
				tol = 2e-3
			}
			checkCacheParity(t, m, toks, tol)
			q := g.Prompts[1].PromptIDs[:min(len(toks)/2, len(g.Prompts[1].PromptIDs))]
			checkBatched(t, m, toks, q, tol/2)
			checkPrefixReuse(t, m, toks, tol/2)
		})
	}
}

// checkPrefixReuse runs toks, commits its blocks, then runs it again in a
// new sequence that attaches the cached prefix and computes only the rest;
// the recomputed positions' logits must equal a fresh run's.
func checkPrefixReuse(t *testing.T, m *Model, toks []int, tol float64) {
	t.Helper()
	ref := runSeq(t, m, toks, 0)
	c, err := m.NewCache(4 * len(toks))
	if err != nil {
		t.Fatal(err)
	}
	run := func(s *kvcache.Seq, from int) []float32 {
		b := Batch{}
		for p := from; p < len(toks); p++ {
			b.Tokens, b.Pos, b.Seq, b.Output = append(b.Tokens, toks[p]), append(b.Pos, p), append(b.Seq, s), append(b.Output, true)
		}
		lg, err := m.Forward(b, c)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(lg)
	}
	a := &kvcache.Seq{}
	if err := c.Reserve(a, len(toks)); err != nil {
		t.Fatal(err)
	}
	run(a, 0)
	c.Commit(a, toks)
	c.Release(a) // preempted: its blocks stay cached
	s := &kvcache.Seq{}
	got := c.Match(s, toks, len(toks)-1)
	if got == 0 {
		t.Fatalf("no cached prefix matched (block size %d, %d tokens)", c.BlockSize, len(toks))
	}
	if err := c.Reserve(s, len(toks)); err != nil {
		t.Fatal(err)
	}
	lg := run(s, got)
	if d, at := maxAbsDiff(lg, ref[got*m.Vocab:]); d > tol {
		t.Errorf("after reusing %d cached positions, logits differ from a fresh run by %g at %d", got, d, at)
	}
	if err := c.Check(); err != nil {
		t.Error(err)
	}
}

// routes runs toks one position at a time and returns, per position, the
// experts every layer chose (layers × used ids, in choice order), the
// smallest gap over the layers between the last chosen and the first
// unchosen router probability, and the logits.
func routes(t *testing.T, m *Model, toks []int) ([][]int, []float32, []float32) {
	t.Helper()
	var cur []int
	var out [][]int
	var gaps []float32
	gap := float32(1)
	m.moe.trace = func(sel []int, probs []float32) {
		cur = append(cur, sel...)
		gap = min(gap, routerGap(sel, probs))
	}
	defer func() { m.moe.trace = nil }()
	c, err := m.NewCache(len(toks))
	if err != nil {
		t.Fatal(err)
	}
	s := &kvcache.Seq{}
	if err := c.Reserve(s, len(toks)); err != nil {
		t.Fatal(err)
	}
	var logits []float32
	for p, tok := range toks {
		cur, gap = nil, 1
		lg, err := m.Forward(Batch{Tokens: []int{tok}, Pos: []int{p}, Seq: []*kvcache.Seq{s}}, c)
		if err != nil {
			t.Fatal(err)
		}
		logits = append(logits, lg...)
		out = append(out, cur)
		gaps = append(gaps, gap)
	}
	return out, gaps, logits
}

// routerGap is one token's router margin: its last chosen expert's
// probability (or logit) p[chosen[len-1]] minus the largest among the
// experts not chosen.
func routerGap(chosen []int, p []float32) float32 {
	gap, last := float32(math.Inf(1)), p[chosen[len(chosen)-1]]
	for e, v := range p {
		if !slices.Contains(chosen, e) {
			gap = min(gap, last-v)
		}
	}
	return gap
}

// sameSets reports whether each layer chose the same experts (as sets).
func sameSets(a, b []int, used int) bool {
	for i := 0; i+used <= len(a); i += used {
		x, y := slices.Clone(a[i:i+used]), slices.Clone(b[i:i+used])
		slices.Sort(x)
		slices.Sort(y)
		if !slices.Equal(x, y) {
			return false
		}
	}
	return len(a) == len(b)
}

// nearTie is the router-probability gap below which llama.cpp's different
// rounding (F16 KV cache, F16 activations) may well pick other experts.
const nearTie = 2e-3

// TestQwen3MoEQ8: the Q8_0 file's prompt ids are exact and, on every step
// before the first position where some layer's router picks different
// experts than the F16 model, the top-10 logprobs are within 1.0 of
// llama.cpp's Q8_0 run. Where the choices first differ and how many greedy
// ids agree are logged.
func TestQwen3MoEQ8(t *testing.T) {
	g, path := archPath(t, "qwen3moe", "Q8_0")
	_, path16 := archPath(t, "qwen3moe", "F16")
	m := mustLoad(t, path, Options{Threads: 2})
	m16 := mustLoad(t, path16, Options{Threads: 2})
	worst, checked, over, agree, total := 0.0, 0, 0, 0, 0
	for k, p := range g.Prompts {
		ids := m.Tokenizer.Encode(p.Prompt, false)
		if bos, ok := m.Tokenizer.BOS(); ok && m.Tokenizer.AddBOS() {
			ids = append([]int{bos}, ids...)
		}
		if !slices.Equal(ids, p.PromptIDs) {
			t.Errorf("prompt %d: ids %v, llama.cpp %v", k, ids, p.PromptIDs)
		}
		toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
		r8, gap8, logits := routes(t, m, toks)
		r16, gap16, _ := routes(t, m16, toks)
		first, tie := len(toks), len(toks)
		for pos := range toks {
			if !sameSets(r8[pos], r16[pos], m.ExpertsUsed) {
				first = pos
				break
			}
		}
		for pos := range toks {
			if min(gap8[pos], gap16[pos]) < nearTie {
				tie = pos
				break
			}
		}
		P := len(p.PromptIDs)
		greedy := true
		for j, s := range p.Steps {
			lg := logits[(P-1+j)*m.Vocab : (P+j)*m.Vocab]
			if greedy && testshared.Argmax(lg) == s.ID {
				agree++
			} else {
				greedy = false
			}
			total++
			if P-1+j >= first {
				continue
			}
			lp := testshared.LogSoftmax(lg)
			for _, e := range s.Top {
				d := math.Abs(lp[int(e[0])] - e[1])
				worst = max(worst, d)
				checked++
				if d > 1.0 {
					over++
					t.Logf("over 1.0: prompt %d step %d (position %d) id %d: logprob %.4f, llama.cpp %.4f", k, j, P-1+j, int(e[0]), lp[int(e[0])], e[1])
				}
			}
		}
		t.Logf("prompt %d: router choices first differ from F16 at position %d, first within %g of a tie at %d, of %d (prompt %d tokens)", k, first, nearTie, tie, len(toks), P)
	}
	t.Logf("qwen3moe Q8_0: %d logprobs checked, %d over 1.0, worst %.4f; greedy ids agree with llama.cpp for %d/%d steps before the first divergence", checked, over, worst, agree, total)
	// llama.cpp's own routing is not observable and flips on near-ties
	// earlier than ours (F16 KV cache, F16 activations); a step where it
	// did shows as an outlier. Require 95% of the logprobs in bound.
	if checked < 100 || over*20 > checked {
		t.Errorf("%d of %d logprobs over 1.0 (need ≥ 100 checked, ≤ 5%% over)", over, checked)
	}
}

// lcppModelTol bounds the float64 reference with llama.cpp's roundings
// (lcppRounding) against llama.cpp's goldens, every top-10 logprob, every
// architecture (measured worst 0.032, gemma2).
const lcppModelTol = 0.05

// lcppModelTolOf is lcppModelTol, but 0.07 for gemma4, where the modelled
// roundings leave 0.059 (prompt 0 step 13 id 21412: −3.886 vs llama.cpp's
// −3.827); some rounding of its graph is not modelled yet.
func lcppModelTolOf(name string) float64 {
	if name == "gemma4" {
		return 0.07
	}
	return lcppModelTol
}

// TestLcppRoundings proves top10Tol's exceptions are llama.cpp's own
// roundings, not a convention we get wrong. For every architecture the
// float64 reference rounding as llama.cpp's CPU backend does
// (lcppRounding: F16 KV cache, F16 matmul inputs, F16 queries, flash
// attention's F16 V accumulator, the F16 GELU table) must come within
// lcppModelTol of llama.cpp's top-10 logprobs. For an exception
// (top10Tol > 0.1) the exact float64 reference must also be more than 0.1
// from llama.cpp (else the exception is not needed: tighten it), while our
// production forward (F16 KV cache) stays within 0.1 of that exact
// reference on the same ids. Each rounding switched off alone is logged
// for the exceptions (numbers in DESIGN.md "llama.cpp's own roundings").
func TestLcppRoundings(t *testing.T) {
	for _, name := range archModels {
		t.Run(name, func(t *testing.T) {
			g, path := archPath(t, name, "F16")
			m := mustLoad(t, path, Options{Threads: 2})
			ref := func(r refRounding) [][]float32 {
				var out [][]float32
				for _, p := range g.Prompts {
					lg, err := m.forwardRef(append(slices.Clone(p.PromptIDs), p.GeneratedIDs...), r)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, lg)
				}
				return out
			}
			exact, modelled := ref(refRounding{kv: tensor.F32}), ref(lcppRounding)
			we := top10Worst(g, m.Vocab, exact, nil)
			wm := top10Worst(g, m.Vocab, modelled, nil)
			t.Logf("%s: top-10 from llama.cpp: exact float64 reference %s; with llama.cpp's roundings %s", name, we, wm)
			if wm.d > lcppModelTolOf(name) {
				t.Errorf("the reference with llama.cpp's roundings is %s from llama.cpp, want ≤ %g", wm, lcppModelTolOf(name))
			}
			if top10Tol[name] <= 0.1 {
				return
			}
			if we.d <= 0.1 {
				t.Errorf("exact reference within %.4f of llama.cpp: top10Tol's exception %g is not needed", we.d, top10Tol[name])
			}
			var prod [][]float32
			for _, p := range g.Prompts {
				prod = append(prod, runSeqKV(t, m, append(slices.Clone(p.PromptIDs), p.GeneratedIDs...), 0, tensor.F16))
			}
			if w := top10Worst(g, m.Vocab, prod, exact); w.d > 0.1 {
				t.Errorf("production forward (F16 KV) %s from the exact reference, want ≤ 0.1", w)
			} else {
				t.Logf("%s: production forward (F16 KV) from the exact reference %s", name, w)
			}
			for _, off := range []string{"kv", "matIn16", "q16", "vAcc16", "gelu16"} {
				r := lcppRounding
				switch off {
				case "kv": // an F32 cache: no F16 keys to round queries for, no F16 V
					r.kv, r.q16, r.vAcc16 = tensor.F32, false, false
				case "matIn16":
					r.matIn16 = false
				case "q16":
					r.q16 = false
				case "vAcc16":
					r.vAcc16 = false
				case "gelu16":
					if !m.GELUGate {
						continue
					}
					r.gelu16 = false
				}
				t.Logf("%s: llama.cpp's roundings but %s: %s", name, off, top10Worst(g, m.Vocab, ref(r), nil))
			}
		})
	}
}

// top10At is where a top-10 logprob difference was largest.
type top10At struct {
	d                     float64
	prompt, step, id, rnk int
	other, this           float64
}

func (w top10At) String() string {
	return fmt.Sprintf("%.4f (prompt %d step %d id %d rank %d: %.4f vs %.4f)", w.d, w.prompt, w.step, w.id, w.rnk, w.this, w.other)
}

// top10Worst is the largest difference over every step's top-10 ids of g
// between the logprobs of logits (one (len, vocab) slice per prompt, fed
// the prompt and generated ids) and those of other, or llama.cpp's when
// other is nil.
func top10Worst(g *lcppGolden, vocab int, logits, other [][]float32) top10At {
	var w top10At
	for k, p := range g.Prompts {
		P := len(p.PromptIDs)
		for j, s := range p.Steps {
			lp := testshared.LogSoftmax(logits[k][(P-1+j)*vocab : (P+j)*vocab])
			var lo []float64
			if other != nil {
				lo = testshared.LogSoftmax(other[k][(P-1+j)*vocab : (P+j)*vocab])
			}
			for r, e := range s.Top {
				id, o := int(e[0]), e[1]
				if lo != nil {
					o = lo[id]
				}
				if d := absDiffNaN(lp[id], o); d > w.d {
					w = top10At{d, k, j, id, r, o, lp[id]}
				}
			}
		}
	}
	return w
}

// absDiffNaN is |a − b|, +Inf when either is NaN (a NaN logit must not
// compare as a difference of 0).
func absDiffNaN(a, b float64) float64 {
	if d := math.Abs(a - b); !math.IsNaN(d) {
		return d
	}
	return math.Inf(1)
}

// TestSharedKVLayers: Gemma 4's last three layers own no KV cache (layers
// 3 and 4 read windowed layer 1's, layer 5 global layer 2's, as llama.cpp
// maps them), so the cache holds three layers and the KV bytes per token
// count only those: 2 (K, V) × 3 layers × a 64-wide row (the global
// layer's 2 heads × 32; windowed rows use 32 of it) × 2 bytes (F16) = 768,
// half of what six owning layers would take.
func TestSharedKVLayers(t *testing.T) {
	_, path := archPath(t, "gemma4", "F16")
	m := mustLoad(t, path, Options{Threads: 1})
	var src []int
	for l := range m.Layers {
		src = append(src, m.KVSource(l))
	}
	if want := []int{0, 1, 2, 1, 1, 2}; !slices.Equal(src, want) {
		t.Errorf("KV sources %v, want %v", src, want)
	}
	if got := m.KVBytesPerToken(tensor.F16); got != 768 {
		t.Errorf("KVBytesPerToken(F16) = %d, want 768", got)
	}
	c, err := m.NewCacheType(64, tensor.F16)
	if err != nil {
		t.Fatal(err)
	}
	if c.Layers != 3 || c.KVDim != 64 {
		t.Errorf("cache %d layers × %d, want 3 × 64", c.Layers, c.KVDim)
	}
	if got := c.Bytes() / int64(c.NumBlocks*c.BlockSize); got != m.KVBytesPerToken(tensor.F16) {
		t.Errorf("cache holds %d bytes per position, KVBytesPerToken says %d", got, m.KVBytesPerToken(tensor.F16))
	}
}

// TestGemma4KVHeadsArray: Gemma 4's converter may write head_count_kv as
// one entry per layer; equal entries are the scalar (same logits).
func TestGemma4KVHeadsArray(t *testing.T) {
	_, path := archPath(t, "gemma4", "F16")
	ma := mustLoad(t, rewriteArch(t, "gemma4", map[string]gguf.Value{"gemma4.attention.head_count_kv": gguf.NewArray([]int32{2, 2, 2, 2, 2, 2})}), Options{Threads: 1})
	m := mustLoad(t, path, Options{Threads: 1})
	toks := []int{1, 450, 7483, 310, 3444, 338, 263, 4996, 17354, 1701, 29916}
	if ma.KVHeads != 2 {
		t.Fatalf("KVHeads %d, want 2", ma.KVHeads)
	}
	if d, at := maxAbsDiff(runSeq(t, m, toks, 0), runSeq(t, ma, toks, 0)); d != 0 {
		t.Errorf("logits differ by %g at %d", d, at)
	}
}

// gemma4Large is the gemma4 fixture turned into the larger Gemma 4s'
// attention (26B/31B): its global layers get 1 KV head instead of 2
// (head_count_kv [2 2 1 2 2 1]; attn_k keeps its first head's rows) and
// no attn_v, so their values are their keys' projection.
func gemma4Large(t *testing.T) *Model {
	t.Helper()
	return mustLoad(t, gemma4LargePath(t), Options{Threads: 2})
}

// gemma4LargePath writes gemma4Large's file and returns its path.
func gemma4LargePath(t *testing.T) string {
	t.Helper()
	return gemma4Variant(t, "gemma4-k-eq-v.gguf", archfix.Gemma4KEqV)
}

// gemma4Variant writes the archfix variant write makes of the shared
// gemma4 fixture to a temporary file (name) and returns its path.
func gemma4Variant(t *testing.T, name string, write func(src, dst string) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := write(testshared.Path(t, "testdata/gguf-archs/gemma4/gemma4-F16.gguf"), path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGemma4GlobalKVHeadsAndVFromK: per-kind KV head counts and values
// from the keys: the cached forward equals the float64 reference (whose
// V is a copy of the K projection before the K-norm, normalised without
// gains), batched equals alone, bit-identical under the mixed schedule;
// and V really is K: an explicit attn_v equal to attn_k gives the same
// logits bit for bit.
func TestGemma4GlobalKVHeadsAndVFromK(t *testing.T) {
	m := gemma4Large(t)
	if m.KVHeads != 1 || m.KVHeadsSWA != 2 || m.LayerKVDim(2) != 32 || m.LayerKVDim(0) != 32 || m.w.layers[2].wv != nil {
		t.Fatalf("KV heads %d (windowed %d), layer 2 kv_dim %d", m.KVHeads, m.KVHeadsSWA, m.LayerKVDim(2))
	}
	g, _ := archPath(t, "gemma4", "F16")
	toks := append(slices.Clone(g.Prompts[0].PromptIDs), g.Prompts[0].GeneratedIDs...)
	checkCacheParity(t, m, toks, 5e-4)
	checkBatched(t, m, toks, g.Prompts[1].PromptIDs[:min(len(toks)/2, len(g.Prompts[1].PromptIDs))], 2.5e-4)
	checkInvariant(t, m, 0)

	src, err := gguf.Open(testshared.Path(t, "testdata/gguf-archs/gemma4/gemma4-F16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	p := rewriteArchFn(t, "gemma4", map[string]gguf.Value{"gemma4.attention.head_count_kv": gguf.NewArray([]int32{2, 2, 1, 2, 2, 1})},
		func(name string, dims []uint64, data []byte) ([]uint64, []byte, bool) {
			switch name {
			case "blk.2.attn_v.weight", "blk.5.attn_v.weight", "blk.2.attn_k.weight", "blk.5.attn_k.weight":
				k, _ := src.Tensor(strings.Replace(name, "attn_v", "attn_k", 1))
				return []uint64{dims[0], 32}, k.Data[:32*32*2], true // attn_v := attn_k's first head
			}
			return dims, data, true
		})
	mv := mustLoad(t, p, Options{Threads: 2})
	if mv.w.layers[2].wv == nil {
		t.Fatal("explicit attn_v not loaded")
	}
	if d, at := maxAbsDiff(runSeq(t, m, toks, 0), runSeq(t, mv, toks, 0)); d != 0 {
		t.Errorf("values from keys differ from an explicit attn_v = attn_k by %g at %d", d, at)
	}
}

// gemma4MoEFixture writes archfix.Gemma4MoE: the gemma4 fixture with a mixture of experts in
// every layer, as the 26B-A4B has (4 experts, 2 used, expert ffn 16):
// router and its input scale, pre/post norms around the two branches,
// fused gate_up experts on even layers and separate ones on odd layers,
// per-expert output scales on all layers but layer 1. Seeded random
// values; no llama.cpp golden exists for it.
func gemma4MoEFixture(t *testing.T) string {
	t.Helper()
	return gemma4Variant(t, "gemma4-moe.gguf", archfix.Gemma4MoE)
}

// TestGemma4MoE: the 26B-A4B's layer structure (dense GeGLU FFN beside a
// routed GeGLU mixture, the router on its own scaled normalisation, the
// per-expert output scale): the cached forward equals the float64
// reference, batched equals alone, bit-identical under the mixed schedule;
// the experts change the logits (a layer's mixture is not dead code).
func TestGemma4MoE(t *testing.T) {
	m := mustLoad(t, gemma4MoEFixture(t), Options{Threads: 2})
	if m.Experts != 4 || m.w.layers[0].g4 == nil || m.w.layers[1].g4.downScale != nil || m.w.layers[2].g4.downScale == nil {
		t.Fatalf("experts %d, layer weights %+v", m.Experts, m.w.layers[0].g4)
	}
	g, path := archPath(t, "gemma4", "F16")
	toks := append(slices.Clone(g.Prompts[0].PromptIDs), g.Prompts[0].GeneratedIDs...)
	checkCacheParity(t, m, toks, 5e-4)
	checkBatched(t, m, toks, g.Prompts[1].PromptIDs[:min(len(toks)/2, len(g.Prompts[1].PromptIDs))], 2.5e-4)
	checkInvariant(t, m, 0)
	dense := mustLoad(t, path, Options{Threads: 1})
	if d, _ := maxAbsDiff(runSeq(t, m, toks[:12], 0), runSeq(t, dense, toks[:12], 0)); d < 1e-2 {
		t.Errorf("the mixture moves the logits by only %g", d)
	}
}
