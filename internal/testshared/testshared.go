// Package testshared locates the project's shared test data (../shared:
// models, goldens, tokenizer vocabularies, fixture generator) for tests.
//
// Tests find shared/ by walking up from their working directory to a folder
// that holds shared/README.md, so they work in the main checkout and in a
// CI clone whose sibling is shared/. Fixture directories made by
// shared/tools/fixturegen are generated once and cached under the system
// temp dir, keyed by the generator's source hash.
package testshared

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Dir returns the shared/ folder; the test is skipped when there is none.
func Dir(t testing.TB) string {
	t.Helper()
	d, ok := find()
	if !ok {
		t.Skip("shared/ test data not found")
	}
	return d
}

// Path joins a slash-separated path below shared/.
func Path(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(Dir(t), filepath.FromSlash(rel))
}

// Find returns the shared/ folder without a testing.TB (for fuzz seeds and
// TestMain); ok is false when there is none.
func Find() (string, bool) { return find() }

func find() (string, bool) {
	d, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(d, "shared")
		if _, err := os.Stat(filepath.Join(p, "README.md")); err == nil {
			return p, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

var (
	fixMu   sync.Mutex
	fixDirs = map[string]string{}
)

// Fixture returns the output folder of `fixturegen KIND OUT` ("hf": the
// llama_gqa, qwen2 and gpt2 Hugging Face directories; "hf-llama_k": the
// llama_k directory), generating it on first use.
func Fixture(t testing.TB, kind string) string {
	t.Helper()
	fixMu.Lock()
	defer fixMu.Unlock()
	if d, ok := fixDirs[kind]; ok {
		return d
	}
	gen := Path(t, "tools/fixturegen")
	src, err := os.ReadFile(filepath.Join(gen, "main.go"))
	if err != nil {
		t.Fatalf("testshared: %v", err)
	}
	sum := sha256.Sum256(src)
	out := filepath.Join(os.TempDir(), "nanoserve-fixtures", hex.EncodeToString(sum[:8]), kind)
	if _, err := os.Stat(filepath.Join(out, ".complete")); err != nil {
		if _, err := exec.LookPath("go"); err != nil {
			t.Skip("go command not found: cannot run fixturegen")
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatalf("testshared: %v", err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(out), kind+".tmp")
		if err != nil {
			t.Fatalf("testshared: %v", err)
		}
		cmd := exec.Command("go", "run", ".", kind, tmp)
		cmd.Dir = gen
		cmd.Env = append(os.Environ(), "GOFLAGS=") // not the test's -race etc.
		if b, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(tmp)
			t.Fatalf("testshared: fixturegen %s: %v\n%s", kind, err, b)
		}
		if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
			t.Fatalf("testshared: %v", err)
		}
		os.RemoveAll(out)
		if err := os.Rename(tmp, out); err != nil {
			// Another test process may have won the race; use its copy.
			os.RemoveAll(tmp)
			if _, err2 := os.Stat(filepath.Join(out, ".complete")); err2 != nil {
				t.Fatalf("testshared: %v", fmt.Errorf("installing fixture: %w", err))
			}
		}
	}
	fixDirs[kind] = out
	return out
}

// Argmax is the index of the largest value, the first on ties (as the
// reference implementations pick greedy tokens).
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// LogSoftmax returns the log-probabilities of logits, in float64, for
// comparing with goldens given as logprobs.
func LogSoftmax(x []float32) []float64 {
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
