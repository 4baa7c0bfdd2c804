package engine

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"nanoserve/sample"
)

// TestEmbedBesideGeneration: embeddings computed while a generation runs
// leave it unchanged (greedy ids equal a run alone), equal the model's own
// Embed, and leave no engine cache block in use.
func TestEmbedBesideGeneration(t *testing.T) {
	e := tinyEngine(t)
	pol := sample.Defaults()
	pol.Temperature = 0
	pol.MaxTokens = 24
	req := Request{Prompt: "Once upon a time", Policy: pol}
	alone := generate(t, e, req)

	texts := []string{"Hello world", "a much longer input about cats and dogs", "x"}
	want := make([][]float32, len(texts))
	for i, s := range texts {
		ids, err := e.Encode(&Request{Prompt: s})
		if err != nil {
			t.Fatal(err)
		}
		if want[i], err = e.Model().Embed(ids); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var embErr error
	var got [][]float32
	var ntok []int
	wg.Go(func() {
		for range 5 {
			reqs := make([]Request, len(texts))
			for i, s := range texts {
				reqs[i] = Request{Prompt: s}
			}
			if got, ntok, embErr = e.Embed(reqs); embErr != nil {
				return
			}
		}
	})
	beside := generate(t, e, req)
	wg.Wait()
	if embErr != nil {
		t.Fatal(embErr)
	}
	if !slices.Equal(beside.IDs, alone.IDs) {
		t.Errorf("generation beside embeddings: %v, alone: %v", beside.IDs, alone.IDs)
	}
	for i := range texts {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("input %d: engine embedding differs from the model's", i)
		}
		if ntok[i] < 2 {
			t.Errorf("input %d: %d tokens", i, ntok[i])
		}
	}
	if st := e.Stats(); st.Running != 0 {
		t.Errorf("running sequences after: %d", st.Running)
	}

	long := make([]int, e.CtxSize()+1)
	var tl *PromptTooLongError
	if _, _, err := e.Embed([]Request{{PromptIDs: long}}); !errors.As(err, &tl) {
		t.Errorf("input over the context: err = %v, want PromptTooLongError", err)
	}
}
