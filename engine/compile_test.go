package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"nanoserve/grammar"
)

// TestConstraintCompileOffScheduler (issue 29, item 2): a compile runs on
// its caller's goroutine, so a normal request completes while one is in
// progress; it holds one of the engine's compile slots (another compile
// waits, and gives up with its context); a compile whose context ends
// stops with the context's error.
func TestConstraintCompileOffScheduler(t *testing.T) {
	e, _ := fakeEngine(t, Options{Grammar: GrammarOptions{Compiles: 1}}, false)
	started := make(chan struct{})
	compileStarted = func(ctx context.Context) {
		if ctx.Value(heavyKey{}) != nil {
			close(started)
			<-ctx.Done() // a compile that lasts until its request goes
		}
	}
	defer func() { compileStarted = nil }()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), heavyKey{}, true))
	done := make(chan error, 1)
	go func() {
		_, err := e.Constraint(ctx, ConstraintJSONSchema, `{"type":"integer"}`)
		done <- err
	}()
	<-started

	res, err := e.Generate(context.Background(), fakeReq(8))
	if err != nil || len(res.IDs) != 8 {
		t.Fatalf("a normal request beside the compile: %v, %+v", err, res)
	}
	short, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	start := time.Now()
	if _, err := e.Constraint(short, ConstraintChoice, `["a","b"]`); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second compile with the only slot taken: %v, want its context's deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("waiting for a slot took %v past a 100ms deadline", d)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled compile: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the compile did not stop within 5s of its context's cancellation")
	}
	// The slot is free again.
	if _, err := e.Constraint(context.Background(), ConstraintChoice, `["a","b"]`); err != nil {
		t.Fatal(err)
	}
}

type heavyKey struct{}

// TestConstraintLimits: the engine's GrammarOptions.Limits bound its
// compiles: past them, a *grammar.LimitError naming the limit.
func TestConstraintLimits(t *testing.T) {
	e, _ := fakeEngine(t, Options{Grammar: GrammarOptions{Limits: grammar.Limits{Steps: 50_000}}}, false)
	var cs []string
	for i := range 10_000 {
		cs = append(cs, fmt.Sprintf(`"c%d"`, i))
	}
	_, err := e.Constraint(context.Background(), ConstraintChoice, "["+strings.Join(cs, ",")+"]")
	var le *grammar.LimitError
	if !errors.As(err, &le) || le.Limit != "steps" || le.Max != 50_000 {
		t.Fatalf("got %v, want the steps limit of 50000", err)
	}
}

// TestGrammarCacheBytes: the compiled constraints kept stay within
// GrammarOptions.CacheBytes.
func TestGrammarCacheBytes(t *testing.T) {
	const limit = 4 << 20
	e, _ := fakeEngine(t, Options{Grammar: GrammarOptions{CacheBytes: limit}}, false)
	for i := range 40 {
		var cs []string
		for j := range 2000 {
			cs = append(cs, fmt.Sprintf("%d-%d", i, j))
		}
		spec := `["` + strings.Join(cs, `","`) + `"]`
		if _, err := e.Constraint(context.Background(), ConstraintChoice, spec); err != nil {
			t.Fatal(err)
		}
		if b := e.CachedGrammarBytes(); b > limit {
			t.Fatalf("after %d compiles the cache holds %d bytes, over %d", i+1, b, limit)
		}
	}
	if n := len(e.grams.m); n < 2 {
		t.Errorf("only %d constraints kept under %d bytes", n, limit)
	}
}
