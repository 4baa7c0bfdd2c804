package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/model"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// llama2c golden sets: model, tokenizer, summary.json (greedy ids of the
// reference C implementation).
var goldenSets = []struct{ name, model, tok string }{
	{"tiny_mha", "models/llama2c/tiny_mha.bin", "models/llama2c/llama2-tokenizer.bin"},
	{"tiny_gqa", "models/llama2c/tiny_gqa.bin", "models/llama2c/llama2-tokenizer.bin"},
	{"aidreams260K", "models/llama2c/aidreams260K.bin", "models/llama2c/aidreams-tok512.bin"},
}

type goldenRun struct {
	Prompt          string `json:"prompt"`
	PromptTokens    []int  `json:"prompt_tokens"`
	GeneratedTokens []int  `json:"generated_tokens"`
}

func loadGoldens(t testing.TB, name string) []goldenRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testshared.Dir(t), "testdata", "llama2c", name, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Runs []goldenRun `json:"runs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.Runs
}

func newEngine(t testing.TB, modelRel, tokRel string, opts Options) *Engine {
	t.Helper()
	sh := testshared.Dir(t)
	m, err := model.Load(filepath.Join(sh, modelRel), model.Options{Tokenizer: filepath.Join(sh, tokRel), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// tinyEngine is tiny_mha (random weights, Llama-2 vocabulary).
func tinyEngine(t testing.TB) *Engine {
	return newEngine(t, goldenSets[0].model, goldenSets[0].tok, Options{})
}

func seeded(p sample.Policy, seed uint64) sample.Policy {
	p.Seed = &seed
	return p
}

func withMax(p sample.Policy, n int) sample.Policy {
	p.MaxTokens = n
	return p
}

func generate(t testing.TB, e *Engine, req Request) *Result {
	t.Helper()
	res, err := e.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason == FinishError {
		t.Fatalf("generation failed: %v", res.Err)
	}
	return res
}

// Temperature 0 and top-k 1 (at any temperature, any seed) are greedy
// decoding: both reproduce the reference implementation's greedy ids.
func TestGreedyPoliciesMatchGoldens(t *testing.T) {
	topK1 := func(temp float32, seed uint64) sample.Policy {
		p := seeded(sample.Defaults(), seed)
		p.Temperature, p.TopK = temp, 1
		return p
	}
	policies := []struct {
		name string
		pol  sample.Policy
	}{
		{"temperature0", sample.Greedy()},
		{"topk1", topK1(1, 1)},
		{"topk1_hot", topK1(2, 12345)},
	}
	for _, set := range goldenSets {
		t.Run(set.name, func(t *testing.T) {
			e := newEngine(t, set.model, set.tok, Options{})
			for i, run := range loadGoldens(t, set.name) {
				for _, p := range policies {
					pol := p.pol
					pol.MaxTokens = len(run.GeneratedTokens)
					pol.IgnoreEOS = true // run.c generates a fixed number of steps
					res := generate(t, e, Request{Prompt: run.Prompt, Policy: pol})
					if !slices.Equal(res.PromptIDs, run.PromptTokens) {
						t.Fatalf("run %d (%q): prompt ids %v, golden %v", i, run.Prompt, res.PromptIDs, run.PromptTokens)
					}
					if !slices.Equal(res.IDs, run.GeneratedTokens) {
						t.Errorf("run %d (%q) %s:\n got %v\nwant %v", i, run.Prompt, p.name, res.IDs, run.GeneratedTokens)
					}
					if res.FinishReason != FinishLength {
						t.Errorf("run %d %s: finish %q, want length", i, p.name, res.FinishReason)
					}
				}
			}
		})
	}
}

// The same seed reproduces the same tokens; the seed a random-seeded run
// reports reproduces that run.
func TestSameSeedSameTokens(t *testing.T) {
	e := tinyEngine(t)
	pol := withMax(seeded(sample.Defaults(), 42), 24)
	a := generate(t, e, Request{Prompt: "Once upon a time", Policy: pol})
	b := generate(t, e, Request{Prompt: "Once upon a time", Policy: pol})
	if !slices.Equal(a.IDs, b.IDs) || a.Text != b.Text || a.Seed != 42 {
		t.Fatalf("seed 42 twice: %v (seed %d) vs %v", a.IDs, a.Seed, b.IDs)
	}
	random := withMax(sample.Defaults(), 24)
	c := generate(t, e, Request{Prompt: "Once upon a time", Policy: random})
	d := generate(t, e, Request{Prompt: "Once upon a time", Policy: seeded(random, c.Seed)})
	if !slices.Equal(c.IDs, d.IDs) {
		t.Errorf("replaying reported seed %d: %v vs %v", c.Seed, c.IDs, d.IDs)
	}
}

// At temperature 2 different seeds give different continuations.
func TestHotSamplingSeedsDiffer(t *testing.T) {
	e := tinyEngine(t)
	pol := withMax(sample.Defaults(), 16)
	pol.Temperature = 2
	seen := map[string]uint64{}
	for seed := uint64(1); seed <= 4; seed++ {
		res := generate(t, e, Request{Prompt: "The capital of France is", Policy: seeded(pol, seed)})
		b, _ := json.Marshal(res.IDs)
		if prev, ok := seen[string(b)]; ok {
			t.Errorf("seeds %d and %d gave the same continuation %v", prev, seed, res.IDs)
		}
		seen[string(b)] = seed
	}
}

// Streamed tokens, appended to the prompt, equal the collected result under
// the same seed; so does the Result the stream hands back.
func TestStreamEqualsCollected(t *testing.T) {
	e := tinyEngine(t)
	pol := withMax(seeded(sample.Defaults(), 7), 32)
	pol.TopP = 0.9
	req := Request{Prompt: "Hello, world!", Policy: pol}
	collected := generate(t, e, req)

	var streamed *Result
	ids := []int{}
	var text strings.Builder
	for tok, err := range e.GenerateStream(context.Background(), req, &streamed) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tok.ID)
		text.WriteString(tok.Text)
	}
	full := append(slices.Clone(collected.PromptIDs), collected.IDs...)
	if got := append(slices.Clone(streamed.PromptIDs), ids...); !slices.Equal(got, full) {
		t.Errorf("prompt+streamed ids %v\n != prompt+collected %v", got, full)
	}
	if req.Prompt+text.String() != req.Prompt+collected.Text {
		t.Errorf("streamed text %q != collected %q", text.String(), collected.Text)
	}
	if streamed.Text != collected.Text || !slices.Equal(streamed.IDs, collected.IDs) || streamed.FinishReason != collected.FinishReason {
		t.Errorf("stream's Result %+v != collected %+v", streamed, collected)
	}
	if len(collected.IDs) == 0 || collected.Usage.CompletionTokens != len(collected.IDs) || collected.Usage.PromptTokens != len(collected.PromptIDs) {
		t.Errorf("usage %+v for %d prompt / %d completion tokens", collected.Usage, len(collected.PromptIDs), len(collected.IDs))
	}
}

// A stop string that straddles a token boundary stops generation and is not
// emitted, neither in the stream nor in the result.
func TestStopStringAcrossTokens(t *testing.T) {
	e := newEngine(t, goldenSets[2].model, goldenSets[2].tok, Options{}) // aidreams: a trained model, real words
	prompt := "Echoes"
	free := generate(t, e, Request{Prompt: prompt, Policy: withMax(sample.Greedy(), 48)})
	// Piece boundaries of the greedy text, as the streaming decoder cuts it
	// (a continuation of the prompt's text).
	dec := e.tok.NewDecoderWith(tokenizer.DecodeOptions{Continuation: true})
	var text string
	var ends []int // text offset after each token
	for _, id := range free.IDs {
		text += dec.Next(id)
		ends = append(ends, len(text))
	}
	// Find a 4-byte ASCII stop string whose first occurrence straddles a
	// boundary, two bytes each side.
	var stop string
	var at, nTok int
	for i, end := range ends[:len(ends)-1] {
		if end < 2 || end+2 > len(text) {
			continue
		}
		cand := text[end-2 : end+2]
		if !isASCII(cand) || strings.TrimSpace(cand) != cand {
			continue
		}
		if idx := strings.Index(text, cand); idx == end-2 {
			stop, at, nTok = cand, idx, i+2
			break
		}
	}
	if stop == "" {
		t.Fatalf("no stop string straddling a token boundary in %q", text)
	}
	t.Logf("stop %q straddles tokens %d and %d of %q", stop, nTok-2, nTok-1, text)
	pol := withMax(sample.Greedy(), 48)
	pol.Stop = []string{"never appears", stop}
	var res *Result
	var streamed strings.Builder
	for tok, err := range e.GenerateStream(context.Background(), Request{Prompt: prompt, Policy: pol}, &res) {
		if err != nil {
			t.Fatal(err)
		}
		streamed.WriteString(tok.Text)
	}
	if res.FinishReason != FinishStop {
		t.Errorf("finish %q, want stop", res.FinishReason)
	}
	if want := text[:at]; res.Text != want || streamed.String() != want {
		t.Errorf("stop %q: result %q, streamed %q, want %q", stop, res.Text, streamed.String(), want)
	}
	if strings.Contains(streamed.String(), stop) {
		t.Errorf("stop string %q was emitted", stop)
	}
	if len(res.IDs) != nTok {
		t.Errorf("stopped after %d tokens, want %d (the token completing %q)", len(res.IDs), nTok, stop)
	}

	// A stop token id ends generation without being emitted.
	pol = withMax(sample.Greedy(), 48)
	pol.StopTokenIDs = []int{free.IDs[5]}
	first := slices.Index(free.IDs, free.IDs[5])
	res = generate(t, e, Request{Prompt: prompt, Policy: pol})
	if res.FinishReason != FinishStop || !slices.Equal(res.IDs, free.IDs[:first]) {
		t.Errorf("stop id %d: finish %q, ids %v, want stop and %v", free.IDs[5], res.FinishReason, res.IDs, free.IDs[:first])
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// max_tokens ends generation with finish reason "length"; so does a full
// context.
func TestMaxTokensIsLength(t *testing.T) {
	e := tinyEngine(t)
	for _, n := range []int{1, 5} {
		res := generate(t, e, Request{Prompt: "Hi", Policy: withMax(seeded(sample.Defaults(), 3), n)})
		if res.FinishReason != FinishLength || len(res.IDs) != n || res.Usage.CompletionTokens != n {
			t.Errorf("max_tokens %d: finish %q, %d ids, usage %+v", n, res.FinishReason, len(res.IDs), res.Usage)
		}
	}
	small := newEngine(t, goldenSets[0].model, goldenSets[0].tok, Options{CtxSize: 16})
	pol := sample.Greedy()
	pol.IgnoreEOS = true
	res := generate(t, small, Request{Prompt: "Hi", Policy: pol})
	if res.FinishReason != FinishLength || len(res.PromptIDs)+len(res.IDs) != 17 {
		t.Errorf("16-token context: finish %q after %d prompt + %d tokens", res.FinishReason, len(res.PromptIDs), len(res.IDs))
	}
	_, err := small.Generate(context.Background(), Request{Prompt: strings.Repeat("word ", 40), Policy: pol})
	if !errors.Is(err, ErrPromptTooLong) {
		t.Errorf("over-long prompt: err = %v, want ErrPromptTooLong", err)
	}
}

// A session's second turn reuses the cached prefix and gives the same
// tokens as a fresh run of the full prompt.
func TestSessionReusesCache(t *testing.T) {
	e := tinyEngine(t)
	fresh := tinyEngine(t)
	pol := withMax(sample.Greedy(), 12)
	sess := e.NewSession()
	defer sess.Close()

	// By ids: turn 2 = turn 1's prompt + its reply + new tokens.
	res1 := generate(t, e, Request{Prompt: "The capital of France is", Policy: pol, Session: sess})
	p2 := slices.Concat(res1.PromptIDs, res1.IDs, e.tok.Encode(" And what about Spain?", false))
	res2 := generate(t, e, Request{PromptIDs: p2, Policy: pol, Session: sess})
	// Everything but the last sampled token (never fed back) is cached.
	if want := len(res1.PromptIDs) + len(res1.IDs) - 1; res2.Usage.CachedTokens != want {
		t.Errorf("turn 2 reused %d cached tokens, want %d", res2.Usage.CachedTokens, want)
	}
	ref := generate(t, fresh, Request{PromptIDs: p2, Policy: pol})
	if ref.Usage.CachedTokens != 0 || !slices.Equal(res2.IDs, ref.IDs) {
		t.Errorf("turn 2 with cache %v, fresh %v (fresh cached %d)", res2.IDs, ref.IDs, ref.Usage.CachedTokens)
	}

	// By text, the way a chat re-renders its history.
	text3 := "The capital of France is" + res1.Text + " And Germany?"
	res3 := generate(t, e, Request{Prompt: text3, Policy: pol, Session: sess})
	if res3.Usage.CachedTokens < len(res1.PromptIDs) {
		t.Errorf("turn 3 reused %d cached tokens, want at least %d", res3.Usage.CachedTokens, len(res1.PromptIDs))
	}
	if ref := generate(t, fresh, Request{Prompt: text3, Policy: pol}); !slices.Equal(res3.IDs, ref.IDs) {
		t.Errorf("turn 3 with cache %v, fresh %v", res3.IDs, ref.IDs)
	}

	// A diverging prompt reuses only the common prefix; a reset one nothing.
	res4 := generate(t, e, Request{Prompt: "The capital of Italy is", Policy: pol, Session: sess})
	if ref := generate(t, fresh, Request{Prompt: "The capital of Italy is", Policy: pol}); !slices.Equal(res4.IDs, ref.IDs) || res4.Usage.CachedTokens == 0 {
		t.Errorf("diverging turn: %v (cached %d), fresh %v", res4.IDs, res4.Usage.CachedTokens, ref.IDs)
	}
	sess.Reset()
	if res5 := generate(t, e, Request{Prompt: "The capital of Italy is", Policy: pol, Session: sess}); res5.Usage.CachedTokens != 0 || !slices.Equal(res5.IDs, res4.IDs) {
		t.Errorf("after Reset: cached %d, ids %v, want 0 and %v", res5.Usage.CachedTokens, res5.IDs, res4.IDs)
	}
}

// Cancelling (by context or by leaving the stream loop) ends the request
// with finish reason "cancelled", keeps what was produced, and leaves the
// session usable.
func TestCancel(t *testing.T) {
	e := tinyEngine(t)
	pol := withMax(sample.Greedy(), 20)
	full := generate(t, e, Request{Prompt: "Hello", Policy: pol})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := e.Generate(ctx, Request{Prompt: "Hello", Policy: pol})
	if err != nil || res.FinishReason != FinishCancelled || len(res.IDs) != 0 {
		t.Errorf("cancelled before start: %v, %+v", err, res)
	}

	sess := e.NewSession()
	defer sess.Close()
	var got *Result
	n := 0
	for _, err := range e.GenerateStream(context.Background(), Request{Prompt: "Hello", Policy: pol, Session: sess}, &got) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	if got.FinishReason != FinishCancelled || !slices.Equal(got.IDs, full.IDs[:3]) {
		t.Errorf("break after 3 tokens: finish %q, ids %v, want cancelled and %v", got.FinishReason, got.IDs, full.IDs[:3])
	}
	again := generate(t, e, Request{Prompt: "Hello", Policy: pol, Session: sess})
	if !slices.Equal(again.IDs, full.IDs) || again.Usage.CachedTokens == 0 {
		t.Errorf("session after a cancelled turn: %v (cached %d), want %v", again.IDs, again.Usage.CachedTokens, full.IDs)
	}
}

// Bad requests end with an error, never a panic.
func TestBadRequests(t *testing.T) {
	e := tinyEngine(t)
	bad := []Request{
		{Prompt: "x", Policy: sample.Policy{}}, // zero policy: top_p 0
		{PromptIDs: []int{1, 99999999}, Policy: sample.Greedy()},
		{PromptIDs: []int{-1}, Policy: sample.Greedy()},
		{Prompt: "x", Policy: func() sample.Policy { p := sample.Greedy(); p.StopTokenIDs = []int{-5}; return p }()},
	}
	for i, req := range bad {
		if _, err := e.Generate(context.Background(), req); err == nil {
			t.Errorf("request %d: no error", i)
		}
	}
	other := tinyEngine(t)
	s := other.NewSession()
	defer s.Close()
	if _, err := e.Generate(context.Background(), Request{Prompt: "x", Policy: sample.Greedy(), Session: s}); err == nil {
		t.Error("a session of another engine was accepted")
	}
}

// The generated text continues the prompt: prompt text + Result.Text is the
// decoding of prompt ids + generated ids (for a SentencePiece vocabulary the
// first generated piece keeps its leading space, as in llama2.c's run.c).
func TestTextContinuesPrompt(t *testing.T) {
	e := tinyEngine(t)
	for _, prompt := range []string{"Hello, world! 123", "The capital of France is", "", " Hello", "Hello "} {
		var res *Result
		var streamed strings.Builder
		for tok, err := range e.GenerateStream(context.Background(), Request{Prompt: prompt, Policy: withMax(sample.Greedy(), 8)}, &res) {
			if err != nil {
				t.Fatal(err)
			}
			streamed.WriteString(tok.Text)
		}
		want := e.tok.Decode(slices.Concat(res.PromptIDs, res.IDs))
		if got := prompt + streamed.String(); got != want {
			t.Errorf("prompt + streamed text %q, want %q", got, want)
		}
	}
}

// Text held back because it could start a stop string is released when
// generation ends for another reason (length, or an end-of-generation id),
// in the stream as in the result.
func TestHeldBackTextReleasedAtEnd(t *testing.T) {
	e := newEngine(t, goldenSets[2].model, goldenSets[2].tok, Options{})
	free := generate(t, e, Request{Prompt: "Echoes", Policy: withMax(sample.Greedy(), 12)})
	if free.Text == "" {
		t.Fatal("empty greedy text")
	}
	// A stop string that begins with the text's last byte and never
	// completes: the matcher must hold that byte back until the end.
	pol := withMax(sample.Greedy(), 12)
	pol.Stop = []string{free.Text[len(free.Text)-1:] + "\x00never"}
	var res *Result
	var streamed strings.Builder
	for tok, err := range e.GenerateStream(context.Background(), Request{Prompt: "Echoes", Policy: pol}, &res) {
		if err != nil {
			t.Fatal(err)
		}
		streamed.WriteString(tok.Text)
	}
	if res.FinishReason != FinishLength {
		t.Fatalf("finish %q, want length", res.FinishReason)
	}
	if res.Text != free.Text || streamed.String() != free.Text {
		t.Fatalf("held-back text lost: result %q, streamed %q, want %q", res.Text, streamed.String(), free.Text)
	}
}

// Greedy with logprobs: each step's best alternative is the chosen token
// itself, and its logprob is the chosen token's (the alternatives of every
// step are kept, not overwritten by later steps).
func TestLogprobsPerStep(t *testing.T) {
	e := newEngine(t, goldenSets[2].model, goldenSets[2].tok, Options{})
	pol := withMax(sample.Greedy(), 10)
	n := 3
	pol.Logprobs = &n
	res := generate(t, e, Request{Prompt: "Echoes", Policy: pol})
	if len(res.Logprobs) != len(res.IDs) {
		t.Fatalf("%d logprob entries for %d tokens", len(res.Logprobs), len(res.IDs))
	}
	distinct := map[int]bool{}
	for i, lp := range res.Logprobs {
		if len(lp.Top) != n || lp.Top[0].ID != res.IDs[i] || lp.Top[0].Logprob != lp.Logprob || lp.Logprob > 0 {
			t.Fatalf("step %d: chosen %d (logprob %g), top %+v", i, res.IDs[i], lp.Logprob, lp.Top)
		}
		distinct[lp.Top[0].ID] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("greedy text %q has one distinct token: pick another prompt", res.Text)
	}
}
