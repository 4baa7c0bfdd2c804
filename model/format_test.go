package model

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Formats are told by content, and the error says what the file is not:
// random bytes named .gguf were reported as "llama2.c header: invalid dim",
// an empty .gguf as "llama2.c file too short".
func TestFormatByContent(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 1<<16)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		path      string
		want, not []string
	}{
		{write("random.gguf", random), []string{"not a GGUF file", "starts with"}, []string{"llama2.c"}},
		{write("empty.gguf", nil), []string{"empty"}, []string{"llama2.c file too short"}},
		{write("empty.bin", nil), []string{"empty", "not a GGUF file"}, []string{"too short"}},
		{write("random.bin", random), []string{"not a GGUF file", "read as a llama2.c checkpoint"}, nil},
	} {
		_, err := Load(c.path, Options{Threads: 1})
		if err == nil {
			t.Errorf("%s: loaded", c.path)
			continue
		}
		msg := err.Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q lacks %q", filepath.Base(c.path), msg, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(msg, n) {
				t.Errorf("%s: error %q should not say %q", filepath.Base(c.path), msg, n)
			}
		}
	}
	if _, err := LoadTokenizer(filepath.Join(dir, "random.gguf")); err == nil || !strings.Contains(err.Error(), "not a GGUF file") {
		t.Errorf("LoadTokenizer(random.gguf) = %v, want \"not a GGUF file\"", err)
	}
}
