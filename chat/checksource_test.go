package chat

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// Random bytes passed as --chat-template used to be accepted and rendered
// literally; CheckSource refuses what cannot be a template, by content.
func TestCheckSource(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	for name, src := range map[string]string{
		"random bytes":  string(random),
		"NUL in text":   "{{ x }}\x00",
		"invalid UTF-8": "{{ x }}\xff\xfe",
		"no tags":       "just some text\n",
	} {
		if err := CheckSource(src); !errors.Is(err, ErrNotTemplate) {
			t.Errorf("%s: CheckSource = %v, want ErrNotTemplate", name, err)
		}
	}
	files, _ := filepath.Glob("testdata/templates/*.jinja")
	if len(files) == 0 {
		t.Fatal("no templates in testdata/templates")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckSource(string(b)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
