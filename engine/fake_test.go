package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"nanoserve/internal/testshared"
	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// fakeEngine is an Engine over fakeModel (aidreams' 512-token vocabulary
// for the text side): tests hold the model in Forward (gate) instead of
// freezing the scheduler with a lock or waiting with sleeps.
func fakeEngine(t *testing.T, o Options, gated bool) (*Engine, *fakeModel) {
	t.Helper()
	tok, err := tokenizer.Load(filepath.Join(testshared.Dir(t), "models/llama2c/aidreams-tok512.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeModel{vocab: tok.Size()}
	if gated {
		f.gate, f.entered = make(chan struct{}), make(chan struct{}, 1)
	}
	o = resolve(o, 128)
	e := start(f, tok, f.vocab, nil, newFakeCache(t, 16, o.CacheTokens/16), o, sample.Defaults())
	t.Cleanup(func() {
		if gated {
			select {
			case <-f.gate:
			default:
			}
		}
		e.Close()
	})
	return e, f
}

func fakeReq(n int) Request {
	pol := withMax(sample.Greedy(), n)
	pol.IgnoreEOS = true
	return Request{PromptIDs: []int{1, 5, 9, 13}, Policy: pol}
}

// Beyond MaxQueue waiting requests Submit fails at once with
// ErrOverloaded; the queued ones still complete.
func TestEngineOverloaded(t *testing.T) {
	e, f := fakeEngine(t, Options{MaxSeqs: 1, MaxQueue: 2}, true)
	first, err := e.Submit(context.Background(), fakeReq(2))
	if err != nil {
		t.Fatal(err)
	}
	<-f.entered // the first request runs (the model holds it); the queue is empty
	var queued []*Stream
	for range 2 {
		st, err := e.Submit(context.Background(), fakeReq(2))
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, st)
	}
	if _, err := e.Submit(context.Background(), fakeReq(2)); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("third waiting request: %v, want ErrOverloaded", err)
	}
	close(f.gate)
	for i, st := range append(queued, first) {
		if r := st.Result(); len(r.IDs) != 2 || r.FinishReason != FinishLength {
			t.Errorf("request %d: %+v", i, r)
		}
	}
	if st := e.Stats(); st.Rejected != 1 || st.Requests != 3 {
		t.Errorf("stats: %d rejected, %d accepted", st.Rejected, st.Requests)
	}
}

// Close ends queued and running requests with ErrClosed and rejects new
// ones; a session cannot be used twice at once.
func TestEngineCloseAndBusySession(t *testing.T) {
	e, f := fakeEngine(t, Options{MaxSeqs: 1}, true)
	sess := e.NewSession()
	var sts []*Stream
	for i := range 3 {
		r := fakeReq(100)
		if i == 0 {
			r.Session = sess
		}
		st, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		sts = append(sts, st)
	}
	r := fakeReq(1)
	r.Session = sess
	if _, err := e.Submit(context.Background(), r); !errors.Is(err, ErrSessionBusy) {
		t.Errorf("second use of a busy session: %v", err)
	}
	<-f.entered
	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	<-e.quit // Close has signalled the scheduler; now let the model go
	close(f.gate)
	<-closed
	for i, st := range sts {
		if r := st.Result(); r.FinishReason != FinishError || !errors.Is(r.Err, ErrClosed) {
			t.Errorf("request %d after Close: %+v", i, r)
		}
	}
	if _, err := e.Submit(context.Background(), fakeReq(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("request after Close: %v", err)
	}
}

// n = 3 through the engine: one prefill, three choices each equal to a
// lone request with seed + i, indices on tokens and results, every block
// back at the end; a cancelled n = 3 request frees every block too.
func TestEngineNForks(t *testing.T) {
	e, f := fakeEngine(t, Options{NoPrefixCache: true}, false)
	pol := withMax(seeded(sample.Defaults(), 40), 12)
	pol.Temperature, pol.TopP, pol.TopK, pol.MinP, pol.IgnoreEOS = 1, 1, 0, 0, true
	req := Request{PromptIDs: []int{1, 5, 9, 13, 17, 21, 25, 29, 33, 37}, Policy: pol, N: 3}
	st, err := e.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 3)
	for tok := range st.Tokens() {
		counts[tok.Index]++
	}
	res := st.Results()
	prefill := f.tokens - (12*3 - 3) // every choice decodes 11 fed-back tokens
	if prefill != len(req.PromptIDs) {
		t.Errorf("computed %d prompt tokens, want %d (prefilled once)", prefill, len(req.PromptIDs))
	}
	distinct := map[string]bool{}
	for i, r := range res {
		lone := req
		lone.N = 0
		lone.Policy = withMax(seeded(pol, 40+uint64(i)), 12)
		want := generate(t, e, lone)
		if r.Index != i || r.Seed != 40+uint64(i) || !slices.Equal(r.IDs, want.IDs) || counts[i] != len(r.IDs) {
			t.Errorf("choice %d (seed %d, %d streamed): %v, lone seed %d: %v", r.Index, r.Seed, counts[i], r.IDs, 40+i, want.IDs)
		}
		distinct[r.Text] = true
	}
	if len(distinct) < 2 {
		t.Errorf("three seeds gave one text")
	}
	if s := settled(t, e); s.KVBlocksUsed != 0 {
		t.Errorf("%d blocks used after n = 3", s.KVBlocksUsed)
	}
	st, err = e.Submit(context.Background(), Request{PromptIDs: req.PromptIDs, Policy: withMax(pol, 100), N: 3})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range st.Tokens() {
		if n++; n == 7 {
			break // leaving the stream cancels all three choices
		}
	}
	for _, r := range st.Results() {
		if r.FinishReason != FinishCancelled {
			t.Errorf("choice %d: %s", r.Index, r.FinishReason)
		}
	}
	if s := settled(t, e); s.KVBlocksUsed != 0 {
		t.Errorf("%d blocks used after cancelling n = 3", s.KVBlocksUsed)
	}
}

// A failing Forward ends every choice of the request with FinishError,
// the ones not yet forked included, and frees its blocks.
func TestEngineForwardErrorEndsAllChoices(t *testing.T) {
	e, f := fakeEngine(t, Options{}, false)
	f.fail = errors.New("boom")
	st, err := e.Submit(context.Background(), Request{PromptIDs: []int{1, 2, 3}, Policy: withMax(sample.Greedy(), 4), N: 3})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []*Result)
	go func() { done <- st.Results() }()
	select {
	case res := <-done:
		for _, r := range res {
			if r.FinishReason != FinishError || r.Err == nil {
				t.Errorf("choice %d: %s %v", r.Index, r.FinishReason, r.Err)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request never ended")
	}
	if s := settled(t, e); s.KVBlocksUsed != 0 {
		t.Errorf("%d blocks used after a failed forward", s.KVBlocksUsed)
	}
}
