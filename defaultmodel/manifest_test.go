package defaultmodel

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"nanoserve/gguf"
)

// TestManifestNoAbsolutePath: the shipped model's manifest names the
// corpus and files relative to the Go tree ($GOROOT) and the repository,
// never a path of the machine that trained it.
func TestManifestNoAbsolutePath(t *testing.T) {
	p, err := Path()
	if errors.Is(err, ErrMissing) {
		t.Skip("this build has no built-in model")
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	abs := regexp.MustCompile(`(^|[\s=(])/[A-Za-z0-9_.-]`)
	n := 0
	for _, kv := range f.KV {
		s, ok := kv.Value.Str()
		if !ok || !strings.HasPrefix(kv.Key, "nanoserve.") && !strings.HasPrefix(kv.Key, "general.") {
			continue
		}
		n++
		if loc := abs.FindStringIndex(s); loc != nil {
			t.Errorf("%s holds an absolute path: …%s…", kv.Key, s[loc[0]:min(len(s), loc[0]+40)])
		}
	}
	if n < 3 {
		t.Errorf("only %d manifest strings checked", n)
	}
}
