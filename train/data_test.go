package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadCorpus(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		p := filepath.Join(dir, "pkg", string(rune('a'+i%26))+strings.Repeat("x", i/26)+".go")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("package p\n// file "+p+"\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "pkg", "testdata"), 0o755)
	os.WriteFile(filepath.Join(dir, "pkg", "testdata", "skip.go"), []byte("package skipped\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "pkg", "notes.txt"), []byte("not go\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "pkg", "bin.go"), []byte{0, 1, 2}, 0o644)

	c, err := LoadCorpus([]string{dir}, []string{".go"}, 0.2, 7)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Train) + len(c.HeldOut); n != 40 {
		t.Fatalf("%d documents, want 40 (testdata, other suffixes, binary files skipped)", n)
	}
	if len(c.HeldOut) == 0 || len(c.HeldOut) > 20 {
		t.Errorf("%d of 40 held out at fraction 0.2", len(c.HeldOut))
	}
	c2, _ := LoadCorpus([]string{dir}, []string{".go"}, 0.2, 7)
	if c2.SHA256 != c.SHA256 || len(c2.HeldOut) != len(c.HeldOut) || c2.HeldOut[0].Name != c.HeldOut[0].Name {
		t.Error("split or hash not deterministic")
	}
	c3, _ := LoadCorpus([]string{dir}, []string{".go"}, 0.2, 8)
	same := len(c3.HeldOut) == len(c.HeldOut)
	for i := 0; same && i < len(c.HeldOut); i++ {
		same = c3.HeldOut[i].Name == c.HeldOut[i].Name
	}
	if same {
		t.Error("seed does not change the split")
	}

	// A single file is split into blank-line separated chunks.
	one := filepath.Join(dir, "one.txt")
	var sb strings.Builder
	for i := range 50 {
		sb.WriteString(strings.Repeat("line of paragraph\n", 1+i%3))
		sb.WriteString("\n")
	}
	os.WriteFile(one, []byte(sb.String()), 0o644)
	c4, err := LoadCorpus([]string{one}, nil, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c4.Train) + len(c4.HeldOut); n != 50 {
		t.Errorf("%d chunks, want 50", n)
	}
	if _, err := LoadCorpus([]string{filepath.Join(dir, "missing")}, nil, 0.1, 1); err == nil {
		t.Error("missing corpus accepted")
	}
}

func TestCheckpointErrors(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig()
	ck := &checkpoint{Config: c, Step: 3, Losses: []float64{1, 2, 3}, Params: InitParams(c, 1)}
	ck.M, ck.V = make([]float32, len(ck.Params)), make([]float32, len(ck.Params))
	path := filepath.Join(dir, "ck")
	if err := ck.save(path); err != nil {
		t.Fatal(err)
	}
	got, err := loadCheckpoint(path)
	if err != nil || got.Step != 3 || len(got.Params) != len(ck.Params) || got.Params[5] != ck.Params[5] {
		t.Fatalf("round trip: %v", err)
	}
	b, _ := os.ReadFile(path)
	for _, bad := range [][]byte{b[:len(b)-4], b[:20], []byte("garbage")} {
		os.WriteFile(path, bad, 0o644)
		if _, err := loadCheckpoint(path); err == nil {
			t.Errorf("corrupt checkpoint of %d bytes accepted", len(bad))
		}
	}
}
