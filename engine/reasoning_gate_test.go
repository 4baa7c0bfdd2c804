package engine

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// recProcessor records what the gate hands it.
type recProcessor struct {
	processed int
	accepted  []int
}

func (r *recProcessor) Process(logits []float32) error { r.processed++; return nil }
func (r *recProcessor) Accept(t int) error             { r.accepted = append(r.accepted, t); return nil }

// finite lists the ids whose logit is not -Inf.
func finite(logits []float32) []int {
	var ids []int
	for i, l := range logits {
		if !math.IsInf(float64(l), -1) {
			ids = append(ids, i)
		}
	}
	return ids
}

func TestReasoningGate(t *testing.T) {
	e, _ := fakeEngine(t, Options{}, false)
	vocab := e.tok.Size()
	eog := e.tok.EOG()
	if len(eog) == 0 {
		t.Skip("the test vocabulary has no end-of-generation id")
	}
	closeText := " the end"
	closeIDs := e.tok.Encode(closeText, true)
	if len(closeIDs) < 2 {
		t.Fatalf("close text encodes to %v", closeIDs)
	}
	fresh := func() []float32 { return make([]float32, vocab) }

	t.Run("thinking is free, the answer is constrained", func(t *testing.T) {
		var seen strings.Builder
		inner := &recProcessor{}
		gotLeft := -1
		g, err := e.ReasoningGate(ReasoningGateOptions{
			Answering: func(p string) bool { seen.WriteString(p); return strings.Contains(seen.String(), "end") },
			Answer:    func(left int) (LogitsProcessor, error) { gotLeft = left; return inner, nil },
			MaxTokens: 50, Budget: -1, Close: closeText, StopIDs: []int{7},
		})
		if err != nil {
			t.Fatal(err)
		}
		l := fresh()
		g.Process(l)
		if f := finite(l); len(f) != vocab-len(eog)-1 || slices.Contains(f, eog[0]) || slices.Contains(f, 7) {
			t.Fatalf("while reasoning %d ids stay, want all but the end ids and stop id", len(f))
		}
		thinking := e.tok.Encode(" some words", false)
		for _, id := range thinking {
			g.Accept(id)
		}
		if gotLeft >= 0 || inner.processed > 0 {
			t.Fatal("the answer's processor started during the reasoning")
		}
		for _, id := range closeIDs {
			g.Accept(id)
		}
		if want := 50 - len(thinking) - len(closeIDs); gotLeft != want {
			t.Fatalf("answer built with %d tokens left, want %d", gotLeft, want)
		}
		g.Process(fresh())
		g.Accept(42)
		if inner.processed != 1 || !slices.Equal(inner.accepted, []int{42}) {
			t.Fatalf("inner saw %d processes, accepted %v", inner.processed, inner.accepted)
		}
	})

	t.Run("the budget forces the closing marker", func(t *testing.T) {
		var seen strings.Builder
		g, err := e.ReasoningGate(ReasoningGateOptions{
			Answering: func(p string) bool { seen.WriteString(p); return strings.HasSuffix(seen.String(), closeText) },
			MaxTokens: 100, Budget: 3, Close: closeText,
		})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			g.Process(fresh())
			g.Accept(100)
		}
		for k, id := range closeIDs {
			l := fresh()
			g.Process(l)
			if f := finite(l); !slices.Equal(f, []int{id}) {
				t.Fatalf("close token %d: allowed %v, want only %d", k, f, id)
			}
			g.Accept(id)
		}
		l := fresh()
		g.Process(l)
		if len(finite(l)) != vocab {
			t.Fatal("after the forced close the answer is not free")
		}
	})

	t.Run("max_tokens caps the budget to leave room for the answer", func(t *testing.T) {
		g, err := e.ReasoningGate(ReasoningGateOptions{
			Answering: func(string) bool { return false },
			MaxTokens: 10, Budget: -1, MinAnswer: 4, Close: closeText,
		})
		if err != nil {
			t.Fatal(err)
		}
		room := 10 - 4 - len(closeIDs)
		for range room {
			g.Accept(100)
		}
		l := fresh()
		g.Process(l)
		if f := finite(l); !slices.Equal(f, closeIDs[:1]) {
			t.Fatalf("after %d reasoning tokens allowed %d ids, want the close marker's first", room, len(f))
		}
	})
}

// With only a budget (no answer constraint) the reply may end while it
// thinks: the end ids stay allowed.
func TestReasoningGateBudgetOnly(t *testing.T) {
	e, _ := fakeEngine(t, Options{}, false)
	eog := e.tok.EOG()
	if len(eog) == 0 {
		t.Skip("the test vocabulary has no end-of-generation id")
	}
	g, err := e.ReasoningGate(ReasoningGateOptions{Answering: func(string) bool { return false }, Budget: 10, Close: " the end"})
	if err != nil {
		t.Fatal(err)
	}
	l := make([]float32, e.tok.Size())
	g.Process(l)
	if f := finite(l); len(f) != len(l) {
		t.Fatalf("%d ids masked; want none", len(l)-len(f))
	}
}
