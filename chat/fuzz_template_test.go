package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzRenderHostileTemplate renders arbitrary template sources (seeded with
// the hostile templates of limits_test.go and the real templates of
// testdata) on a small conversation. A template may fail to parse or render,
// but the process must survive it: no stack overflow, no runaway loop or
// allocation (all fatal, or a hang, in Go), and no engine panic.
//
//	go test ./chat -run '^$' -fuzz FuzzRenderHostileTemplate -fuzztime 10m -parallel 1
func FuzzRenderHostileTemplate(f *testing.F) {
	for _, src := range hostileTemplates {
		if len(src) < 4096 {
			f.Add(src)
		}
	}
	files, _ := filepath.Glob("testdata/templates/*.jinja")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(string(b))
		}
	}
	msgs := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hello"},
		{Role: "assistant", Content: "Hi.", ToolCalls: []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": map[string]any{"x": 1}}}}},
		{Role: "tool", Content: "42", ToolCallID: "c1"},
		{Role: "user", Content: "Bye"},
	}
	// Small limits keep each input fast; the limits' logic is the same.
	lim := Limits{MaxDepth: 50, MaxSteps: 50_000, MaxOutput: 1 << 20, MaxAlloc: 8 << 20}
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	f.Fuzz(func(t *testing.T, src string) {
		t.Parallel()
		tmpl, err := Parse(src)
		if err != nil {
			if strings.Contains(err.Error(), "panicked") {
				t.Fatalf("Parse(%q) panicked: %v", src, err)
			}
			return
		}
		out, err := tmpl.Render(msgs, Options{BOS: "<s>", EOS: "</s>", AddGenerationPrompt: true, Limits: lim, Now: now})
		if err != nil {
			if strings.Contains(err.Error(), "panicked") {
				t.Fatalf("Render(%q) panicked: %v", src, err)
			}
			return
		}
		if int64(len(out)) > lim.MaxOutput {
			t.Fatalf("Render(%q) returned %d bytes, over MaxOutput %d", src, len(out), lim.MaxOutput)
		}
	})
}
