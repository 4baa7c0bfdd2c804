package train

import (
	"os"
	"testing"
)

func TestTmpCases(t *testing.T) {
	g, err := LoadGreedy("/work/main/defaultmodel/model/nanoserve-go.gguf", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c, err := LoadCorpus([]string{os.Getenv("GOROOT_SRC")}, []string{".go"}, 0.05, 1)
	if err != nil {
		t.Fatal(err)
	}
	cases := FIMCases(c.HeldOut, 20, 1)
	for i, cs := range cases[:12] {
		a, _ := g.WithSuffix(&cs)
		b, _ := g.LeftToRight(&cs)
		p := cs.Prefix[max(0, len(cs.Prefix)-60):]
		s := cs.Suffix[:min(len(cs.Suffix), 40)]
		t.Logf("case %d %s: ...%q [%q] %q...\n   FIM: %q\n   L2R: %q", i, cs.Kind, p, cs.Middle, s, a, b)
	}
}
