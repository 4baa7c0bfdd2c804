package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"nanoserve/defaultmodel"
	"nanoserve/model"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// builtin is the built-in Go model (byte-level BPE, vocabulary 1024); the
// test skips in a build without it.
func builtin(t testing.TB) *Engine {
	t.Helper()
	p, err := defaultmodel.Path()
	if errors.Is(err, defaultmodel.ErrMissing) {
		t.Skip("no built-in model in this build")
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(p, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(m, Options{})
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); m.Close() })
	return e
}

// checkHealed verifies a healed result: the removed token is the prompt's
// last, the first generated token extends its text, Text does not repeat
// it, and the removed-token-less prompt followed by the output decodes to
// prompt + Text (what the model wrote continues the prompt exactly).
func checkHealed(t *testing.T, tok *tokenizer.Tokenizer, prompt string, res *Result) {
	t.Helper()
	n := len(res.PromptIDs)
	if res.Healed == "" || res.Healed != tok.Piece(res.PromptIDs[n-1]) {
		t.Fatalf("%q: Healed %q, want the last prompt token's text %q", prompt, res.Healed, tok.Piece(res.PromptIDs[n-1]))
	}
	if res.Usage.PromptTokens != n {
		t.Errorf("%q: usage prompt tokens %d, want the tokenized prompt's %d", prompt, res.Usage.PromptTokens, n)
	}
	if len(res.IDs) == 0 {
		return
	}
	if first := tok.Piece(res.IDs[0]); !strings.HasPrefix(first, res.Healed) {
		t.Fatalf("%q: first token %q does not start with the healed text %q", prompt, first, res.Healed)
	}
	// (A stop string is cut from Text but was written.)
	whole := tok.Decode(append(slices.Clone(res.PromptIDs[:n-1]), res.IDs...))
	if whole != prompt+res.Text && !(res.FinishReason == FinishStop && strings.HasPrefix(whole, prompt+res.Text)) {
		t.Errorf("%q: prompt + text = %q, but the model wrote %q", prompt, prompt+res.Text, whole)
	}
}

// Prompts that end inside a longer token are healed on the built-in Go
// model, under greedy and seeded hot sampling.
func TestHealingBuiltin(t *testing.T) {
	e := builtin(t)
	tok := e.Model().Tokenizer
	prompts := []string{"func main() {", "if err != nil {", "\tfor i := 0; i < n; i++ {", "return nil, fmt.Err", "func (s *Server) Hand"}
	for _, p := range prompts {
		for _, pol := range []sample.Policy{sample.Greedy(), seeded(sample.Defaults(), 42)} {
			pol.MaxTokens = 24
			off := generate(t, e, Request{Prompt: p, Policy: pol})
			on := generate(t, e, Request{Prompt: p, Policy: pol, TokenHealing: true})
			checkHealed(t, tok, p, on)
			if off.Healed != "" {
				t.Errorf("%q: healed %q without TokenHealing", p, off.Healed)
			}
			t.Logf("%q T=%g\n  off: %q\n  on:  %q", p, pol.Temperature, off.Text, on.Text)
		}
	}
}

// The mask holds for every seed at a high temperature: the first token
// always extends the removed text; a whole-vocabulary-wide sample would
// leave it.
func TestHealingMaskHoldsWhenSampling(t *testing.T) {
	e := aidreams(t, Options{})
	tok := e.Model().Tokenizer
	prompt := "Once upon a time there was a little gir"
	distinct := map[int]bool{}
	for seed := range uint64(24) {
		pol := withMax(seeded(sample.Defaults(), seed), 4)
		pol.Temperature, pol.TopP = 2, 1
		res := generate(t, e, Request{Prompt: prompt, Policy: pol, TokenHealing: true})
		checkHealed(t, tok, prompt, res)
		if len(res.IDs) > 0 {
			distinct[res.IDs[0]] = true
		}
	}
	ids := e.mustEncode(t, prompt)
	ext := tok.TokensWithPrefix(tok.Piece(ids[len(ids)-1]))
	if len(ext) > 2 && len(distinct) < 2 {
		t.Errorf("24 hot seeds drew only %v as the first token", distinct)
	}
	t.Logf("%q: %d allowed first tokens, %d distinct drawn", tok.Piece(ids[len(ids)-1]), len(ext), len(distinct))
}

func (e *Engine) mustEncode(t testing.TB, prompt string) []int {
	t.Helper()
	ids, err := e.Encode(&Request{Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// When healing cannot apply — a BOS-only prompt, a single token without
// BOS, a last token with no longer extension, a byte or control last
// token — a TokenHealing request is exactly the request without it.
func TestHealingNoOp(t *testing.T) {
	e := aidreams(t, Options{})
	tok := e.Model().Tokenizer
	// A normal token that no longer token extends.
	noExt := -1
	for id := range tok.Size() {
		if tok.TokenType(id) == tokenizer.TypeNormal && len(tok.TokensWithPrefix(tok.Piece(id))) == 1 {
			noExt = id
			break
		}
	}
	if noExt < 0 {
		t.Fatal("no token without extensions in the vocabulary")
	}
	bos, _ := tok.BOS()
	eos, _ := tok.EOS()
	byteTok := -1
	for id := range tok.Size() {
		if tok.TokenType(id) == tokenizer.TypeByte {
			byteTok = id
			break
		}
	}
	golden := e.mustEncode(t, "The quiet data")
	reqs := []Request{
		{Prompt: ""},                  // BOS only
		{PromptIDs: []int{golden[1]}}, // one token, no BOS
		{PromptIDs: append(slices.Clone(golden), noExt)},   // no longer extension
		{PromptIDs: append(slices.Clone(golden), byteTok)}, // byte token
		{PromptIDs: append(slices.Clone(golden), eos)},     // control token
		{PromptIDs: []int{bos, bos}},
	}
	lp := 3
	for i, r := range reqs {
		for _, pol := range []sample.Policy{sample.Greedy(), seeded(sample.Defaults(), uint64(i))} {
			pol.MaxTokens, pol.Logprobs = 12, &lp
			r.Policy = pol
			off := generate(t, e, r)
			r.TokenHealing = true
			on := generate(t, e, r)
			r.TokenHealing = false
			if on.Healed != "" || !slices.Equal(on.IDs, off.IDs) || on.Text != off.Text || on.Usage != off.Usage ||
				on.FinishReason != off.FinishReason || !sameLogprobs(on.Logprobs, off.Logprobs) {
				t.Errorf("request %d (ids %v): healing changed the result:\n on %q %v %+v (healed %q)\noff %q %v %+v",
					i, off.PromptIDs, on.Text, on.IDs, on.Usage, on.Healed, off.Text, off.IDs, off.Usage)
			}
		}
	}
}

func sameLogprobs(a, b []Token) bool {
	return slices.EqualFunc(a, b, func(x, y Token) bool {
		return x.ID == y.ID && x.Text == y.Text && x.Logprob == y.Logprob && x.Stop == y.Stop && slices.Equal(x.Top, y.Top)
	})
}

// The streamed pieces of a healed request concatenate to its Text, which
// never starts with the removed text twice, also when a stop string or max
// tokens cut it.
func TestHealingStreamEqualsText(t *testing.T) {
	e := aidreams(t, Options{})
	prompts := []string{"Once upon a time there was a little gir", "The quiet da", "I sense the nod"}
	for i, p := range prompts {
		for _, pol := range []sample.Policy{sample.Greedy(), seeded(sample.Defaults(), uint64(9+i))} {
			pol.MaxTokens = 30
			if i == 1 {
				pol.Stop = []string{"."}
			}
			var res *Result
			var b strings.Builder
			n := 0
			for tk, err := range e.GenerateStream(context.Background(), Request{Prompt: p, Policy: pol, TokenHealing: true}, &res) {
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString(tk.Text)
				n++
			}
			checkHealed(t, e.Model().Tokenizer, p, res)
			if b.String() != res.Text {
				t.Errorf("%q: streamed %q, final text %q", p, b.String(), res.Text)
			}
		}
	}
}

// healedRequests mixes healed and plain requests over the aidreams golden
// prompts cut inside a word.
func healedRequests(t testing.TB) []Request {
	var reqs []Request
	for i, run := range loadGoldens(t, "aidreams260K") {
		cut := run.Prompt
		if len(cut) > 3 {
			cut = cut[:len(cut)-2]
		}
		greedy := withMax(sample.Greedy(), 18+5*i)
		hot := withMax(seeded(sample.Defaults(), uint64(300+i)), 20+3*i)
		hot.Temperature, hot.TopP = 1.1, 0.95
		reqs = append(reqs,
			Request{Prompt: cut, Policy: greedy, TokenHealing: true},
			Request{Prompt: cut, Policy: hot, TokenHealing: true},
			Request{Prompt: cut, Policy: hot},
			Request{Prompt: run.Prompt + " and mo", Policy: greedy, TokenHealing: i%2 == 0})
	}
	return reqs
}

// Batched healed and plain requests give exactly their lone results.
func TestHealingConcurrentEqualsAlone(t *testing.T) {
	reqs := healedRequests(t)
	want := alone(t, reqs)
	e := aidreams(t, Options{MaxBatchTokens: 64, PrefillChunk: 16})
	// and under preemption: 8 blocks for 24 requests
	small := aidreams(t, Options{CacheTokens: 128, MaxSeqs: 8})
	healed := 0
	for i, r := range want {
		if r.Healed != "" {
			healed++
			checkHealed(t, e.Model().Tokenizer, reqs[i].Prompt, r)
		}
	}
	if healed < len(reqs)/3 {
		t.Fatalf("only %d of %d requests were healed", healed, len(reqs))
	}
	got := concurrently(t, e, reqs)
	sameTokens(t, "batched healed", got, want)
	for i := range got {
		if got[i].Healed != want[i].Healed || got[i].Usage.PromptTokens != want[i].Usage.PromptTokens {
			t.Errorf("request %d: healed %q / %d prompt tokens, alone %q / %d", i, got[i].Healed,
				got[i].Usage.PromptTokens, want[i].Healed, want[i].Usage.PromptTokens)
		}
	}
	if st := settled(t, e); st.KVBlocksUsed != 0 {
		t.Errorf("%d blocks still used", st.KVBlocksUsed)
	}
	sameTokens(t, "healed under preemption", concurrently(t, small, reqs), want)
	st := settled(t, small)
	if st.Preemptions == 0 || st.KVBlocksUsed != 0 {
		t.Errorf("small cache: %d preemptions, %d blocks used after all requests", st.Preemptions, st.KVBlocksUsed)
	}
}

// A healed turn in a session gives what a fresh request gives, and the
// next turn reuses the session's cache.
func TestHealingSession(t *testing.T) {
	e := aidreams(t, Options{NoPrefixCache: true})
	sess := e.NewSession()
	defer sess.Close()
	p1 := "Once upon a time there was a little gir"
	pol := withMax(sample.Greedy(), 12)
	r1 := generate(t, e, Request{Prompt: p1, Policy: pol, TokenHealing: true, Session: sess})
	checkHealed(t, e.Model().Tokenizer, p1, r1)
	p2 := p1 + r1.Text + " She lik"
	r2 := generate(t, e, Request{Prompt: p2, Policy: pol, TokenHealing: true, Session: sess})
	want := generate(t, e, Request{Prompt: p2, Policy: pol, TokenHealing: true})
	if r2.Text != want.Text || !slices.Equal(r2.IDs, want.IDs) || r2.Healed != want.Healed {
		t.Errorf("session turn %q (healed %q), fresh %q (healed %q)", r2.Text, r2.Healed, want.Text, want.Healed)
	}
	if r2.Usage.CachedTokens == 0 {
		t.Errorf("second turn reused no cached tokens: %+v", r2.Usage)
	}
}
