package engine

import (
	"nanoserve/sample"
	"slices"
	"strings"
	"testing"
)

// TestPromptProgress: Request.Progress reports the prompt's prefill once
// at admission (Processed = Cached) and after each chunk of PrefillChunk
// tokens, rising to Total = the prompt's tokens; a second run of the same
// prompt starts from the cached prefix.
func TestPromptProgress(t *testing.T) {
	e := aidreams(t, Options{PrefillChunk: 16})
	prompt := strings.Repeat("The cat sat on the mat. ", 6)
	var got []PromptProgress
	req := Request{Prompt: prompt, Policy: withMax(sample.Greedy(), 2), Progress: func(p PromptProgress) { got = append(got, p) }}
	res := generate(t, e, req)
	n := res.Usage.PromptTokens
	var processed []int
	for _, p := range got {
		if p.Total != n || p.Cached != 0 {
			t.Errorf("report %+v, want total %d, cached 0", p, n)
		}
		processed = append(processed, p.Processed)
	}
	var want []int
	for k := 0; k < n; k += 16 {
		want = append(want, k)
	}
	want = append(want, n)
	if !slices.Equal(processed, want) {
		t.Errorf("processed %v, want %v (%d prompt tokens, chunks of 16)", processed, want, n)
	}
	got = nil
	res = generate(t, e, req)
	if c := res.Usage.CachedTokens; c == 0 || len(got) < 2 || got[0].Cached != c || got[0].Processed != c || got[len(got)-1].Processed != n {
		t.Errorf("cached run: %d cached, reports %+v", c, got)
	}
}
