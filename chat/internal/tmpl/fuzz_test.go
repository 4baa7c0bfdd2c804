package tmpl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzTemplate parses and renders arbitrary sources, seeded with the
// snippets and the real templates of chat/testdata. Any source may fail to
// parse or render, but never by a panic (Parse and Render turn one into an
// "internal error"), and never past the limits: the output stays within
// MaxOutput and the render returns (MaxSteps bounds its time).
//
//	go test ./chat/internal/tmpl -run '^$' -fuzz FuzzTemplate -fuzztime 10m -parallel 1
func FuzzTemplate(f *testing.F) {
	b, err := os.ReadFile("testdata/snippets.json")
	if err != nil {
		f.Fatal(err)
	}
	var file struct {
		Vars     json.RawMessage `json:"vars"`
		Snippets []snippet       `json:"snippets"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		f.Fatal(err)
	}
	for _, s := range file.Snippets {
		f.Add(s.Src)
	}
	files, _ := filepath.Glob("../../testdata/templates/*/*.jinja")
	for _, p := range files {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(string(src))
		}
	}
	lim := Limits{MaxDepth: 40, MaxSteps: 20_000, MaxOutput: 1 << 18, MaxAlloc: 4 << 20}
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := Parse(src)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Parse(%q): %v", src, err)
			}
			return
		}
		out, err := tm.Render(snippetVars(t, file.Vars), lim)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Render(%q): %v", src, err)
			}
			return
		}
		if int64(len(out)) > lim.MaxOutput {
			t.Fatalf("Render(%q): %d bytes, over MaxOutput", src, len(out))
		}
	})
}
