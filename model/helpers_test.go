package model

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"nanoserve/kvcache"
)

// sharedDir walks up from the working directory to the folder holding
// shared/README.md and returns that shared/ path; tests skip without it.
func sharedDir(t testing.TB) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(d, "shared")
		if _, err := os.Stat(filepath.Join(p, "README.md")); err == nil {
			return p
		}
		parent := filepath.Dir(d)
		if parent == d {
			t.Skip("shared/ test data not found")
		}
		d = parent
	}
}

func sharedPath(t testing.TB, rel string) string {
	return filepath.Join(sharedDir(t), filepath.FromSlash(rel))
}

func mustLoad(t testing.TB, path string, opts Options) *Model {
	t.Helper()
	m, err := Load(path, opts)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// readJSONL decodes each line of a JSON-lines file into a generic map.
func readJSONL(t testing.TB, path string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func unmarshal(t testing.TB, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

// runSeq feeds tokens to m through a fresh cache, chunk tokens per Forward
// call (chunk ≤ 0: all at once), and returns every position's logits
// (len(tokens), vocab).
func runSeq(t testing.TB, m *Model, tokens []int, chunk int) []float32 {
	t.Helper()
	c, err := m.NewCache(len(tokens))
	if err != nil {
		t.Fatal(err)
	}
	s := &kvcache.Seq{}
	if err := c.Reserve(s, len(tokens)); err != nil {
		t.Fatal(err)
	}
	if chunk <= 0 {
		chunk = len(tokens)
	}
	out := make([]float32, 0, len(tokens)*m.Vocab)
	for lo := 0; lo < len(tokens); lo += chunk {
		hi := min(lo+chunk, len(tokens))
		b := Batch{Tokens: tokens[lo:hi]}
		for p := lo; p < hi; p++ {
			b.Pos = append(b.Pos, p)
			b.Seq = append(b.Seq, s)
			b.Output = append(b.Output, true)
		}
		lg, err := m.Forward(b, c)
		if err != nil {
			t.Fatalf("Forward(pos %d..%d): %v", lo, hi-1, err)
		}
		out = append(out, lg...)
	}
	if s.Len != len(tokens) {
		t.Fatalf("seq.Len = %d after %d tokens", s.Len, len(tokens))
	}
	return out
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// logSoftmax returns log-probabilities of logits, in float64.
func logSoftmax(x []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	ls := math.Log(s) + mx
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) - ls
	}
	return out
}

func maxAbsDiff(a, b []float32) (float64, int) {
	var d float64
	at := -1
	for i := range a {
		if e := math.Abs(float64(a[i]) - float64(b[i])); e > d || math.IsNaN(e) {
			d, at = e, i
		}
	}
	return d, at
}

var (
	hfOnce sync.Once
	hfDir  string
	hfErr  error
)

// TestMain removes the generated Hugging Face fixtures afterwards.
func TestMain(m *testing.M) {
	code := m.Run()
	if hfDir != "" {
		os.RemoveAll(hfDir)
	}
	os.Exit(code)
}

// hfFixtures generates the shared tool's Hugging Face directories
// (llama_gqa, qwen2, gpt2; F32 safetensors) once per test binary.
func hfFixtures(t testing.TB) string {
	t.Helper()
	tool := sharedPath(t, "tools/fixturegen")
	hfOnce.Do(func() {
		hfDir, hfErr = os.MkdirTemp("", "nanoserve-hf-")
		if hfErr != nil {
			return
		}
		cmd := exec.Command("go", "run", ".", "hf", hfDir)
		cmd.Dir = tool
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			hfErr = fmt.Errorf("fixturegen: %v\n%s", err, out)
		}
	})
	if hfErr != nil {
		t.Fatal(hfErr)
	}
	return hfDir
}
