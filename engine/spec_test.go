package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"nanoserve/internal/testshared"
	"nanoserve/kvcache"
	"nanoserve/model"
	"nanoserve/tokenizer"
	"slices"
	"testing"

	"nanoserve/sample"
)

// oracle is a test proposer that knows each request's plain greedy
// continuation (full: prompt then generated ids) and proposes its next
// tokens, with every token at a position p where (p*7+salt)%every == 0
// replaced by a wrong id (every ≤ 0: never), so verification sees both
// accepted and rejected proposals.
type oracle struct {
	full  [][]int
	every int
	salt  int
	vocab int
}

func (o *oracle) Propose(dst, tokens []int, k int) []int {
	dst = dst[:0]
	for _, f := range o.full {
		if len(f) <= len(tokens) || !slices.Equal(f[:len(tokens)], tokens) {
			continue
		}
		for p := len(tokens); p < min(len(f), len(tokens)+k); p++ {
			t := f[p]
			if o.every > 0 && (p*7+o.salt)%o.every == 0 {
				t = (t + 1) % o.vocab
			}
			dst = append(dst, t)
		}
		return dst
	}
	return dst
}

// fullSeqs is each result's prompt followed by its generated ids.
func fullSeqs(res []*Result) [][]int {
	var f [][]int
	for _, r := range res {
		f = append(f, append(slices.Clone(r.PromptIDs), r.IDs...))
	}
	return f
}

func greedyReqs(t testing.TB, name string, max int) []Request {
	var reqs []Request
	for i, run := range loadGoldens(t, name) {
		p := withMax(sample.Greedy(), max+5*i)
		p.IgnoreEOS = true
		reqs = append(reqs, Request{Prompt: run.Prompt, Policy: p})
	}
	return reqs
}

func runAll(t testing.TB, e *Engine, reqs []Request, batched bool) []*Result {
	t.Helper()
	if batched {
		return concurrently(t, e, reqs)
	}
	out := make([]*Result, len(reqs))
	for i, r := range reqs {
		out[i] = generate(t, e, r)
	}
	return out
}

var _ = context.Background

// specIdentity runs reqs without speculation (alone), then with an
// oracle proposer that is right, wrong every 3rd and every 5th position,
// alone and batched, and wants identical results, both accepted and
// rejected proposals, a consistent cache and no block left used.
func specIdentity(t *testing.T, modelRel, tokRel string, reqs []Request) {
	t.Helper()
	plain := newEngine(t, modelRel, tokRel, Options{NoPrefixCache: true})
	want := runAll(t, plain, reqs, false)
	plain.Close()
	for _, batched := range []bool{false, true} {
		for _, every := range []int{0, 3, 5} {
			or := &oracle{full: fullSeqs(want), every: every, salt: 1, vocab: 32}
			e := newEngine(t, modelRel, tokRel, Options{Spec: SpecOptions{Proposer: or, K: 4, Fixed: true}})
			got := runAll(t, e, reqs, batched)
			sameTokens(t, fmt.Sprintf("speculative (batched %v, wrong every %d)", batched, every), got, want)
			st := settled(t, e)
			e.Close()
			if st.SpecAcceptedTokens == 0 || (every > 0 && st.SpecAcceptedTokens == st.SpecDraftTokens) {
				t.Errorf("every %d: accepted %d of %d proposed", every, st.SpecAcceptedTokens, st.SpecDraftTokens)
			}
			if st.KVBlocksUsed != 0 {
				t.Errorf("%d blocks used after all ended", st.KVBlocksUsed)
			}
		}
	}
}

// Greedy output is identical with and without speculation on every
// llama2c model, alone and batched, while proposals are both accepted and
// rejected; the cache's bookkeeping holds and no block leaks.
func TestSpecGreedyIdentical(t *testing.T) {
	for _, gs := range goldenSets {
		t.Run(gs.name, func(t *testing.T) {
			specIdentity(t, gs.model, gs.tok, greedyReqs(t, gs.name, 40))
		})
	}
}

var fixturePrompts = []string{"Once upon a time", "The quick brown fox", "func main() {\n\tfmt.Println(", "1, 2, 3, 4,"}

func fixtureReqs(n int) []Request {
	var reqs []Request
	for i, p := range fixturePrompts {
		pol := withMax(sample.Greedy(), n+3*i)
		pol.IgnoreEOS = true
		reqs = append(reqs, Request{Prompt: p, Policy: pol})
	}
	return reqs
}

// The same on the F16 GGUF fixtures of every architecture.
func TestSpecGreedyIdenticalF16(t *testing.T) {
	for _, rel := range []string{"gguf/llama_gqa/llama_gqa-F16.gguf", "gguf/qwen2/qwen2-F16.gguf", "gguf/gpt2/gpt2-F16.gguf",
		"gguf-archs/llama3/llama3-F16.gguf", "gguf-archs/gemma2/gemma2-F16.gguf", "gguf-archs/gemma3/gemma3-F16.gguf",
		"gguf-archs/phi3/phi3-F16.gguf", "gguf-archs/qwen3/qwen3-F16.gguf", "gguf-archs/mixtral/mixtral-F16.gguf",
		"gguf-archs/qwen3moe/qwen3moe-F16.gguf", "gguf-archs/smollm3/smollm3-F16.gguf", "gguf-archs/gpt-oss/gpt-oss-F16.gguf",
		"gguf-archs/gemma4/gemma4-F16.gguf"} {
		t.Run(path.Base(rel), func(t *testing.T) {
			specIdentity(t, "testdata/"+rel, "testdata/"+rel, fixtureReqs(24))
		})
	}
}

// The same on the quantized fixtures. It needs batch-invariant matmuls (a
// row's result must not depend on how many rows run beside it): a
// verification row is one of k+1 rows, a decode row is alone. tensor's
// MatMul guarantees that (issue 16), so a difference (decodeRowDiffers)
// fails the test.
func TestSpecGreedyIdenticalQuantized(t *testing.T) {
	for _, rel := range []string{"gguf/llama_gqa/llama_gqa-Q8_0.gguf", "gguf/llama_gqa/llama_gqa-Q4_K_M.gguf",
		"gguf/llama_gqa/llama_gqa-Q4_K_S.gguf", "gguf/llama_k/llama_k-Q4_K_M.gguf", "gguf/llama_k/llama_k-Q4_K_S.gguf",
		"gguf-archs/qwen3moe/qwen3moe-Q8_0.gguf"} {
		t.Run(path.Base(rel), func(t *testing.T) {
			if d := decodeRowDiffers(t, "testdata/"+rel); d != "" {
				t.Fatalf("a decode row differs from the same row in a 33-token chunk (batch invariance broken): %s", d)
			}
			specIdentity(t, "testdata/"+rel, "testdata/"+rel, fixtureReqs(24))
		})
	}
}

// decodeRowDiffers compares, bit for bit, the logits of a prompt's last
// token computed alone (a decode step after the rest was prefilled) and as
// one of many rows (the last of a 33-token chunk) and describes the
// first difference ("" when identical).
func decodeRowDiffers(t *testing.T, rel string) string {
	t.Helper()
	m, err := model.Load(filepath.Join(testshared.Dir(t), rel), model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	toks := make([]int, 40)
	for i := range toks {
		toks[i] = 1 + 13*i
	}
	run := func(split int) []float32 {
		c, err := m.NewCache(64)
		if err != nil {
			t.Fatal(err)
		}
		var s kvcache.Seq
		var logits []float32
		for _, part := range [][2]int{{0, split}, {split, len(toks)}} {
			b := model.Batch{}
			for p := part[0]; p < part[1]; p++ {
				b.Tokens, b.Pos, b.Seq = append(b.Tokens, toks[p]), append(b.Pos, p), append(b.Seq, &s)
			}
			if err := c.Reserve(&s, len(b.Tokens)); err != nil {
				t.Fatal(err)
			}
			if logits, err = m.Forward(b, c); err != nil {
				t.Fatal(err)
			}
		}
		return slices.Clone(logits)
	}
	alone, inChunk := run(len(toks)-1), run(len(toks)-33)
	for i := range alone {
		if math.Float32bits(alone[i]) != math.Float32bits(inChunk[i]) {
			return fmt.Sprintf("logit %d: %g alone, %g in a 33-row chunk", i, alone[i], inChunk[i])
		}
	}
	return ""
}

// streamAll runs reqs concurrently through GenerateStream and returns the
// results with their streamed text.
func streamAll(t *testing.T, e *Engine, reqs []Request) ([]*Result, []string) {
	t.Helper()
	res, texts := make([]*Result, len(reqs)), make([]string, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			var b strings.Builder
			for tok, err := range e.GenerateStream(context.Background(), r, &res[i]) {
				if err != nil {
					t.Error(err)
					return
				}
				b.WriteString(tok.Text)
			}
			texts[i] = b.String()
		})
	}
	wg.Wait()
	return res, texts
}

// Stop strings, stop ids, max tokens and the context limit that land
// inside a run of accepted proposals end the output exactly where plain
// decoding ends it: same ids, text, streamed text and finish reason.
func TestSpecStopsInsideAcceptedRun(t *testing.T) {
	gs := goldenSets[2] // aidreams: real words
	base := greedyReqs(t, gs.name, 60)
	plain := newEngine(t, gs.model, gs.tok, Options{NoPrefixCache: true})
	free := runAll(t, plain, base, false)
	var reqs []Request
	for i, r := range free {
		words := strings.Fields(r.Text)
		for j, n := range []int{1, 3, 6, 11, 13} { // max tokens
			q := base[i]
			q.Policy.MaxTokens = n + i
			reqs = append(reqs, q)
			if j < len(words) && len(words) > 4 {
				q.Policy.MaxTokens = 60
				q.Policy.Stop = []string{words[len(words)/(j+2)]} // a word from the middle
				reqs = append(reqs, q)
			}
		}
		q := base[i]
		q.Policy.StopTokenIDs = []int{r.IDs[9]}
		reqs = append(reqs, q)
	}
	want := runAll(t, plain, reqs, false)
	plain.Close()
	finishes := map[string]int{}
	for _, w := range want {
		finishes[w.FinishReason]++
	}
	if finishes[FinishStop] < 5 || finishes[FinishLength] < 5 {
		t.Fatalf("finish reasons %v: want stops and lengths", finishes)
	}
	for _, every := range []int{0, 5} {
		or := &oracle{full: fullSeqs(free), every: every, salt: 2, vocab: 32}
		e := newEngine(t, gs.model, gs.tok, Options{Spec: SpecOptions{Proposer: or, K: 8, Fixed: true}})
		got, texts := streamAll(t, e, reqs)
		sameTokens(t, fmt.Sprintf("wrong every %d", every), got, want)
		for i := range got {
			if texts[i] != want[i].Text {
				t.Errorf("request %d: streamed %q, want %q", i, texts[i], want[i].Text)
			}
		}
		if st := settled(t, e); st.SpecAcceptedTokens < 100 || st.KVBlocksUsed != 0 {
			t.Errorf("accepted %d proposals, %d blocks used", st.SpecAcceptedTokens, st.KVBlocksUsed)
		}
		e.Close()
	}

	// The context limit: GPT-2 has no position past its 256 learned ones,
	// so no proposal may be fed there (the cache has room for them); the
	// output ends at the same token.
	const gpt2 = "testdata/gguf/gpt2/gpt2-F16.gguf"
	pol := sample.Greedy()
	pol.IgnoreEOS = true
	req := []Request{{Prompt: "Hi", Policy: pol}}
	small := newEngine(t, gpt2, gpt2, Options{})
	want = runAll(t, small, req, false)
	small.Close()
	if want[0].FinishReason != FinishLength {
		t.Fatalf("finish %q, want length", want[0].FinishReason)
	}
	or := &oracle{full: fullSeqs(want), vocab: 32}
	small = newEngine(t, gpt2, gpt2, Options{CacheTokens: 1024, Spec: SpecOptions{Proposer: or, K: 8, Fixed: true}})
	sameTokens(t, "full context", runAll(t, small, req, false), want)
}

// banAt is a stateful processor: at its n-th token (n = tokens accepted so
// far) it forbids ban[n].
type banAt struct {
	n   int
	ban map[int]int
}

func (b *banAt) Process(l []float32) error {
	if id, ok := b.ban[b.n]; ok {
		l[id] = negInf
	}
	return nil
}
func (b *banAt) Accept(int) error { b.n++; return nil }

// Logits processors see proposed tokens in order, each row with the state
// after the tokens before it: a processor that forbids the free greedy
// token at indices 3 and 10 gives the same output with and without
// speculation, though the proposals follow the free continuation.
func TestSpecProcessorsInOrder(t *testing.T) {
	gs := goldenSets[2]
	base := greedyReqs(t, gs.name, 30)
	plain := newEngine(t, gs.model, gs.tok, Options{NoPrefixCache: true})
	free := runAll(t, plain, base, false)
	reqs := slices.Clone(base)
	for i := range reqs {
		ban := map[int]int{3: free[i].IDs[3], 10: free[i].IDs[10]}
		reqs[i].Processors = func() []LogitsProcessor { return []LogitsProcessor{&banAt{ban: ban}} }
	}
	want := runAll(t, plain, reqs, false)
	plain.Close()
	for i := range want {
		if slices.Equal(want[i].IDs, free[i].IDs) {
			t.Fatalf("request %d: the processor changed nothing", i)
		}
	}
	for _, every := range []int{0, 3} {
		// Proposals: the free continuation first, then the constrained one.
		or := &oracle{full: append(fullSeqs(free), fullSeqs(want)...), every: every, salt: 3, vocab: 32}
		e := newEngine(t, gs.model, gs.tok, Options{Spec: SpecOptions{Proposer: or, K: 6, Fixed: true}})
		sameTokens(t, fmt.Sprintf("wrong every %d", every), runAll(t, e, reqs, true), want)
		e.Close()
	}
}

// fixedGuess proposes, after a prompt of n tokens, the tokens of guess
// from the current output index on, whatever was generated: a mix of
// right and wrong proposals under sampling.
type fixedGuess struct {
	n     int
	guess []int
}

func (f *fixedGuess) Propose(dst, tokens []int, k int) []int {
	i := len(tokens) - f.n
	if i < 0 || i >= len(f.guess) {
		return dst[:0]
	}
	return append(dst[:0], f.guess[i:min(len(f.guess), i+k)]...)
}

// sampleRuns runs the request once per seed (batched, 64 at a time) and
// returns the results.
func sampleRuns(t *testing.T, e *Engine, req Request, seeds []uint64) []*Result {
	t.Helper()
	var out []*Result
	for lo := 0; lo < len(seeds); lo += 64 {
		var reqs []Request
		for _, s := range seeds[lo:min(lo+64, len(seeds))] {
			r := req
			r.Policy = seeded(r.Policy, s)
			reqs = append(reqs, r)
		}
		out = append(out, concurrently(t, e, reqs)...)
	}
	return out
}

// chi2Two is the two-sample χ² statistic of equal-size samples a and b
// over the keys seen at least 10 times in all (rarer keys pooled into one
// bin), and its degrees of freedom.
func chi2Two(a, b map[string]int) (float64, int) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var stat float64
	var bins, ra, rb int
	for k := range keys {
		x, y := a[k], b[k]
		if x+y < 10 {
			ra, rb = ra+x, rb+y
			continue
		}
		d := float64(x - y)
		stat += d * d / float64(x+y)
		bins++
	}
	if ra+rb > 0 {
		d := float64(ra - rb)
		stat += d * d / float64(ra+rb)
		bins++
	}
	return stat, bins - 1
}

// chi2Critical is the χ² quantile with df degrees of freedom at the
// normal quantile z (Wilson–Hilferty).
func chi2Critical(df int, z float64) float64 {
	d := float64(df)
	c := 1 - 2/(9*d) + z*math.Sqrt(2/(9*d))
	return d * c * c * c
}

// Speculative sampling draws from the target distribution: over 2000
// seeds the first three sampled tokens (as a tuple, and the third alone)
// under speculation with a fixed guess (accepted sometimes, rejected
// often) have the same distribution as plain sampling over 2000 other
// seeds (two-sample χ², p = 0.001). And a seed reproduces: the same seed
// gives the same ids, with or without speculation.
func TestSpecSamplingDistribution(t *testing.T) {
	gs := goldenSets[2]
	run := loadGoldens(t, gs.name)[0]
	pol := withMax(sample.Defaults(), 3)
	pol.IgnoreEOS = true
	req := Request{Prompt: run.Prompt, Policy: pol}
	plainE := newEngine(t, gs.model, gs.tok, Options{MaxSeqs: 64})
	greedy := generate(t, plainE, Request{Prompt: run.Prompt, Policy: withMax(sample.Greedy(), 3)})
	guess := &fixedGuess{n: len(greedy.PromptIDs), guess: greedy.IDs}
	specE := newEngine(t, gs.model, gs.tok, Options{MaxSeqs: 64, Spec: SpecOptions{Proposer: guess, K: 2, Fixed: true}})

	const N = 2000
	seeds := func(from uint64) []uint64 {
		s := make([]uint64, N)
		for i := range s {
			s[i] = from + uint64(i)
		}
		return s
	}
	specRes := sampleRuns(t, specE, req, seeds(0))
	plainRes := sampleRuns(t, plainE, req, seeds(1_000_000))
	st := settled(t, specE)
	if st.SpecAcceptedTokens < N/10 || st.SpecDraftTokens-st.SpecAcceptedTokens < N/10 {
		t.Fatalf("accepted %d of %d proposals: want many of both outcomes", st.SpecAcceptedTokens, st.SpecDraftTokens)
	}
	hist := func(res []*Result, key func(ids []int) string) map[string]int {
		h := map[string]int{}
		for _, r := range res {
			h[key(r.IDs)]++
		}
		return h
	}
	for name, key := range map[string]func([]int) string{
		"tuple": func(ids []int) string { return fmt.Sprint(ids) },
		"third": func(ids []int) string { return fmt.Sprint(ids[2]) },
	} {
		stat, df := chi2Two(hist(specRes, key), hist(plainRes, key))
		crit := chi2Critical(df, 3.09)
		t.Logf("%s: χ² = %.1f, df %d, critical %.1f (p = 0.001)", name, stat, df, crit)
		if df < 5 || stat > crit {
			t.Errorf("%s: χ² = %.1f with %d degrees of freedom exceeds %.1f: speculative sampling is off the target distribution", name, stat, df, crit)
		}
	}

	// Seeds reproduce: speculative = plain with the same seed, and
	// speculative twice.
	again := sampleRuns(t, specE, req, seeds(0)[:200])
	same := sampleRuns(t, plainE, req, seeds(0)[:200])
	sameTokens(t, "same seed again", again, specRes[:200])
	sameTokens(t, "same seed without speculation", same, specRes[:200])

	// n = 3 choices (forked after one prefill) each equal their plain
	// counterparts.
	multi := Request{Prompt: run.Prompt, Policy: seeded(withMax(sample.Defaults(), 12), 42), N: 3}
	multi.Policy.IgnoreEOS = true
	stS, err := specE.Submit(context.Background(), multi)
	if err != nil {
		t.Fatal(err)
	}
	stP, err := plainE.Submit(context.Background(), multi)
	if err != nil {
		t.Fatal(err)
	}
	sameTokens(t, "n = 3", stS.Results(), stP.Results())
}

// badTail proposes what inner proposes with its last id replaced by one
// far outside any vocabulary (when it proposes two or more).
type badTail struct{ inner Proposer }

func (b badTail) Propose(dst, tokens []int, k int) []int {
	d := b.inner.Propose(dst, tokens, k)
	if len(d) > 1 {
		d[len(d)-1] = 1 << 20
	}
	return d
}

// A proposer's ids outside the vocabulary are cut off before the model
// sees them: the output is plain decoding's and nothing fails.
func TestSpecBadProposalIDs(t *testing.T) {
	gs := goldenSets[2]
	reqs := greedyReqs(t, gs.name, 20)
	plain := newEngine(t, gs.model, gs.tok, Options{})
	want := runAll(t, plain, reqs, false)
	plain.Close()
	e := newEngine(t, gs.model, gs.tok, Options{Spec: SpecOptions{Proposer: badTail{&oracle{full: fullSeqs(want)}}, K: 4, Fixed: true}})
	sameTokens(t, "bad ids proposed", runAll(t, e, reqs, true), want)
	if st := settled(t, e); st.SpecAcceptedTokens == 0 || st.KVBlocksUsed != 0 {
		t.Errorf("accepted %d, %d blocks used", st.SpecAcceptedTokens, st.KVBlocksUsed)
	}
}

// The storm (cancellations, abandoned streams, sessions, preemption in a
// small cache) with speculation: every request gives its lone plain
// output, proposals were both accepted and rejected, the cache's
// bookkeeping holds and no block is left used.
func TestSpecStorm(t *testing.T) {
	st := storm(t, true)
	if st.SpecAcceptedTokens == 0 || st.SpecAcceptedTokens == st.SpecDraftTokens || st.Preemptions == 0 {
		t.Errorf("accepted %d of %d proposals, %d preemptions: want both outcomes and preemption", st.SpecAcceptedTokens, st.SpecDraftTokens, st.Preemptions)
	}
}

func loadModel(t *testing.T, gs int) *model.Model {
	t.Helper()
	m, err := loadGolden(t, gs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// loadGolden loads goldenSets[gs]'s model with its tokenizer.
func loadGolden(t testing.TB, gs int) (*model.Model, error) {
	sh := testshared.Dir(t)
	return model.Load(filepath.Join(sh, goldenSets[gs].model), model.Options{Tokenizer: filepath.Join(sh, goldenSets[gs].tok), Threads: 1})
}

func loadPath(t *testing.T, rel, tok string) *model.Model {
	t.Helper()
	sh := testshared.Dir(t)
	o := model.Options{Threads: 1}
	if tok != "" {
		o.Tokenizer = filepath.Join(sh, tok)
	}
	m, err := model.Load(filepath.Join(sh, rel), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// A draft model proposes, and the target's greedy ids come out, alone and
// batched, with both caches consistent: llama_gqa's Q8_0 drafting for its
// F16 (most proposals land, some not), tiny_gqa drafting for tiny_mha
// (same Llama-2 vocabulary, unrelated random weights: proposals fail) and
// tiny_mha drafting for itself (every proposal lands). A draft of another
// vocabulary is refused at load.
func TestSpecDraftModel(t *testing.T) {
	const gqa = "testdata/gguf/llama_gqa/llama_gqa-"
	for _, c := range []struct {
		name               string
		target, draft, tok string
		reqs               []Request
		allAccepted, mixed bool
	}{
		{"llama_gqa Q8_0 for F16", gqa + "F16.gguf", gqa + "Q8_0.gguf", "", fixtureReqs(24), false, true},
		{"tiny_gqa for tiny_mha", goldenSets[0].model, goldenSets[1].model, goldenSets[0].tok, greedyReqs(t, goldenSets[0].name, 40), false, false},
		{"tiny_mha for itself", goldenSets[0].model, goldenSets[0].model, goldenSets[0].tok, greedyReqs(t, goldenSets[0].name, 40), true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := loadPath(t, c.target, c.tok)
			plain, err := New(target, Options{NoPrefixCache: true})
			if err != nil {
				t.Fatal(err)
			}
			want := runAll(t, plain, c.reqs, false)
			plain.Close()
			d, err := NewDraft(loadPath(t, c.draft, c.tok), target, 512)
			if err != nil {
				t.Fatal(err)
			}
			for _, batched := range []bool{false, true} {
				e, err := New(target, Options{Spec: SpecOptions{Mode: SpecDraft, Proposer: d, K: 4, Fixed: true}})
				if err != nil {
					t.Fatal(err)
				}
				sameTokens(t, fmt.Sprintf("batched %v", batched), runAll(t, e, c.reqs, batched), want)
				st := settled(t, e)
				e.Close()
				t.Logf("batched %v: accepted %d of %d proposals in %d drafts", batched, st.SpecAcceptedTokens, st.SpecDraftTokens, st.SpecDrafts)
				acc, prop := st.SpecAcceptedTokens, st.SpecDraftTokens
				if prop == 0 || c.allAccepted && acc != prop || c.mixed && (acc == 0 || acc == prop) {
					t.Errorf("accepted %d of %d proposals", acc, prop)
				}
				if err := d.cache.Check(); err != nil || d.cache.UsedBlocks() != 0 {
					t.Errorf("draft cache: %v, %d blocks used", err, d.cache.UsedBlocks())
				}
			}
		})
	}
	target := loadModel(t, 0)
	if _, err := NewDraft(loadModel(t, 2), target, 512); !errors.Is(err, ErrDraftVocab) {
		t.Errorf("aidreams drafting for tiny_mha: err %v, want ErrDraftVocab", err)
	}
	if _, err := New(target, Options{Spec: SpecOptions{Mode: SpecDraft}}); !errors.Is(err, ErrSpecOptions) {
		t.Errorf("draft mode without a draft: err %v, want ErrSpecOptions", err)
	}
}

// sameVocab refuses a draft whose vocabulary differs in size, in one
// piece, or in a special id, and accepts an identical one.
func TestDraftVocabCheck(t *testing.T) {
	load := func() *tokenizer.Tokenizer {
		tok, err := tokenizer.Load(filepath.Join(testshared.Dir(t), goldenSets[0].tok))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ref := load()
	if err := sameVocab(load(), ref, 32000, 32000); err != nil {
		t.Fatalf("identical vocabularies: %v", err)
	}
	for name, edit := range map[string]func(v *tokenizer.Vocab){
		"piece": func(v *tokenizer.Vocab) { v.Tokens[1000] = "▁different" },
		"BOS":   func(v *tokenizer.Vocab) { v.BOS.ID = 5 },
		"EOS":   func(v *tokenizer.Vocab) { v.EOS.ID = 5 },
		"size":  func(v *tokenizer.Vocab) { v.Tokens = v.Tokens[:len(v.Tokens)-1] },
	} {
		d := load()
		edit(d.Vocab())
		if err := sameVocab(d, ref, 32000, 32000); !errors.Is(err, ErrDraftVocab) {
			t.Errorf("%s differs: err %v, want ErrDraftVocab", name, err)
		}
	}
	if err := sameVocab(load(), ref, 32000, 32001); !errors.Is(err, ErrDraftVocab) {
		t.Errorf("logit counts differ: err %v, want ErrDraftVocab", err)
	}
}

// The step-time fit recovers a + b·n from exact timings, and keeps its
// last determined fit while every recent step has one size.
func TestSpecStepCostFit(t *testing.T) {
	var c stepCost
	if _, _, ok := c.fit(); ok {
		t.Fatal("fit before any step")
	}
	for i := range 60 {
		n := 1 + i%5
		c.observe(n, 50e-6+30e-6*float64(n))
	}
	a, b, ok := c.fit()
	if !ok || math.Abs(a-50e-6) > 1e-9 || math.Abs(b-30e-6) > 1e-9 {
		t.Fatalf("fit a %g b %g ok %v, want 50µs, 30µs", a, b, ok)
	}
	for range 500 {
		c.observe(1, 80e-6) // one size only, as fitted
	}
	if a2, b2, ok := c.fit(); !ok || math.Abs(a2-a) > 1e-9 || math.Abs(b2-b) > 1e-9 {
		t.Errorf("after same-size steps: a %g b %g ok %v, want the last fit", a2, b2, ok)
	}
	var one stepCost
	for i := range 100 {
		one.observe(1, float64(80+i%7)*1e-6) // noise, one size: nothing to fit
	}
	if a, b, ok := one.fit(); ok {
		t.Errorf("steps of one size gave a fit a %g b %g", a, b)
	}
}

// choose proposes nothing where verification costs more than it brings
// (a tiny model: each token costs its own compute) except a one-token
// probe every specProbe steps, many where a step's time is mostly fixed (a
// big model) and the sequence's proposals land, and adapts α to what was
// accepted.
func TestSpecChooseK(t *testing.T) {
	var st specState // α = 1/2 (the prior)
	const K = 8
	if k := st.choose(K, 1, 0, 0, false); k != K {
		t.Errorf("no fit yet: k %d, want K", k)
	}
	probes := 0
	for range 4 * specProbe {
		switch k := st.choose(K, 1, 0, 100e-6, true); k {
		case 0:
		case 1:
			probes++
		default:
			t.Fatalf("compute-bound model, α 1/2: k %d", k)
		}
	}
	if probes != 4 {
		t.Errorf("%d probes in %d steps, want 4", probes, 4*specProbe)
	}
	for range 20 {
		st.update(4, 4)
	}
	if a := st.alpha(); a < 0.9 {
		t.Fatalf("α %g after full acceptance", a)
	}
	if k := st.choose(K, 1, 1000e-6, 10e-6, true); k != K {
		t.Errorf("bandwidth-bound model, α %.2f: k %d, want %d", st.alpha(), k, K)
	}
	// (E(k)−1)·T − S·b·k with T = a + b·S: at α ≈ 0.95, a = b, S = 1 the
	// gain grows while α^k·2 > 1, up to k = 13 > K; with S = 8 sequences it
	// pays while α^k·9 > 8, k ≤ 2.
	if k := st.choose(K, 8, 100e-6, 100e-6, true); k < 1 || k > 3 {
		t.Errorf("8 sequences, a = b: k %d, want 1..3", k)
	}
	for range 20 {
		st.update(4, 0)
	}
	if a := st.alpha(); a > 0.2 {
		t.Errorf("α %g after rejections", a)
	}
}

// A new sequence starts from the engine's record of recent verifications:
// on a tiny model (each verified token costs about a decode step) the
// uninformed prior proposes nothing, so without the record every request
// would decode plainly until its first probe; after a run of accepted
// proposals the next request proposes from its first step, and after a
// run of rejections it does not.
func TestSpecSeededFromEngine(t *testing.T) {
	e := &Engine{spec: SpecOptions{K: 8}, proposer: &Ngram{Min: 2, Max: 4}, vocab: 100, sch: &scheduler{}}
	e.stats.SpecAcceptedPerPos = make([]int64, 8)
	for range 10 { // a = 30 µs, b = 50 µs a token
		e.cost.observe(1, 80e-6)
		e.cost.observe(9, 480e-6)
	}
	toks := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3} // "1 2 3" recurs: 4 … 9 1 2 follow
	fresh := func() *seq {
		s := &seq{tokens: toks, c: &choice{out: &output{}, res: &Result{}}}
		e.sch.running = []*seq{s}
		return s
	}
	if d := e.propose(fresh(), 8); len(d) != 0 {
		t.Fatalf("no record yet, tiny-model costs: proposed %v", d)
	}
	for range 10 {
		e.specStats(&choice{}, 8, 8)
	}
	if d := e.propose(fresh(), 8); !slices.Equal(d, toks[3:11]) {
		t.Errorf("after accepted runs a new sequence proposed %v, want %v", d, toks[3:11])
	}
	for range 10 {
		e.specStats(&choice{}, 8, 0)
	}
	if d := e.propose(fresh(), 8); len(d) != 0 {
		t.Errorf("after rejections a new sequence proposed %v", d)
	}
}

// Prompt lookup proposes what followed the longest suffix that occurs
// earlier (2 to 4 tokens), at its latest occurrence, at most k tokens, and
// nothing without a match.
func TestNgramPropose(t *testing.T) {
	g := &Ngram{Min: 2, Max: 4}
	for _, c := range []struct {
		tokens []int
		k      int
		want   []int
	}{
		{[]int{1, 2, 3, 4, 1, 2}, 3, []int{3, 4, 1}},
		{[]int{1, 2, 3, 4, 1, 2}, 9, []int{3, 4, 1, 2}},             // up to the end
		{[]int{1, 2, 70, 5, 1, 2, 80, 6, 1, 2}, 1, []int{80}},       // latest occurrence
		{[]int{1, 2, 3, 70, 9, 2, 3, 80, 5, 1, 2, 3}, 1, []int{70}}, // longest suffix wins
		{[]int{5, 6, 7, 8, 9}, 4, nil},                              // no match
		{[]int{4, 4}, 2, nil},                                       // the suffix itself is not earlier
		{[]int{3, 1, 2, 3, 1, 2, 3, 1, 2}, 2, []int{3, 1}},          // overlapping repeats
		{[]int{9, 8, 1, 7, 2, 1}, 3, nil},                           // one token is not enough (Min 2)
	} {
		if got := g.Propose(nil, c.tokens, c.k); !slices.Equal(got, c.want) {
			t.Errorf("Propose(%v, %d) = %v, want %v", c.tokens, c.k, got, c.want)
		}
	}
}
