package engine

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"nanoserve/sample"
	"nanoserve/tokenizer"
)

// A 4 MB one-word prompt is refused before it is tokenized: the error is
// ErrPromptTooLong naming the byte bound, and the refusal allocates little
// (tokenizing the word allocated hundreds of MB and took seconds).
func TestHugePromptRefusedBeforeTokenizing(t *testing.T) {
	e := tinyEngine(t)
	prompt := strings.Repeat("a", 4<<20)
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	_, err := e.Generate(context.Background(), Request{Prompt: prompt, Policy: withMax(sample.Greedy(), 1)})
	runtime.ReadMemStats(&b)
	if !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("err = %v, want ErrPromptTooLong", err)
	}
	var pe *tokenizer.PromptBytesError
	if !errors.As(err, &pe) {
		t.Errorf("err = %v, want it to wrap a *tokenizer.PromptBytesError", err)
	}
	if got := b.TotalAlloc - a.TotalAlloc; got > 1<<20 {
		t.Errorf("refusing the prompt allocated %d bytes, want < 1 MiB (no tokenizing)", got)
	}
	// A prompt just inside the byte bound is tokenized and refused on its
	// token count as before.
	if _, err := e.Generate(context.Background(), Request{Prompt: strings.Repeat("a ", e.ctx), Policy: withMax(sample.Greedy(), 1)}); !errors.Is(err, ErrPromptTooLong) {
		t.Errorf("prompt of %d words: err = %v, want ErrPromptTooLong", e.ctx, err)
	}
}
