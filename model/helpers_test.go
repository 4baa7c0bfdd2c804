package model

import (
	"bufio"
	"encoding/json"
	"math"
	"nanoserve/tensor"
	"os"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/kvcache"
)

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
	return runSeqKV(t, m, tokens, chunk, tensor.F32)
}

// runSeqKV is runSeq over a KV cache of type kv.
func runSeqKV(t testing.TB, m *Model, tokens []int, chunk int, kv tensor.DType) []float32 {
	t.Helper()
	c, err := m.NewCacheType(len(tokens), kv)
	if err != nil {
		t.Fatal(err)
	}
	return runSeqIn(t, m, c, tokens, chunk)
}

// runSeqIn is runSeq through the empty cache c.
func runSeqIn(t testing.TB, m *Model, c *kvcache.Cache, tokens []int, chunk int) []float32 {
	t.Helper()
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

// hfFixtures returns the shared tool's Hugging Face directories
// (llama_gqa, qwen2, gpt2; F32 safetensors), generated once and cached.
func hfFixtures(t testing.TB) string {
	t.Helper()
	return testshared.Fixture(t, "hf")
}
