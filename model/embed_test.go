package model

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/testshared"
)

// refEmbed pools HiddenRef's float64 states and L2-normalises them: the
// plain reference of Embed.
func refEmbed(t *testing.T, m *Model, toks []int, pool string) []float64 {
	t.Helper()
	h, err := m.HiddenRef(toks)
	if err != nil {
		t.Fatal(err)
	}
	dim, L := m.Dim, len(toks)
	e := make([]float64, dim)
	for i := range L {
		if pool == PoolCLS && i != 0 || pool == PoolLast && i != L-1 {
			continue
		}
		for j := range dim {
			e[j] += h[i*dim+j]
		}
	}
	if pool == PoolMean {
		for j := range e {
			e[j] /= float64(L)
		}
	}
	var n float64
	for _, v := range e {
		n += v * v
	}
	for j := range e {
		e[j] /= math.Sqrt(n)
	}
	return e
}

// TestEmbedMatchesRef: Embed under each pooling equals the float64 pooling
// of ForwardRef's final hidden states, within 1e-4, and is unit length.
func TestEmbedMatchesRef(t *testing.T) {
	for _, name := range []string{"llama_gqa", "qwen2"} {
		m := mustLoad(t, testshared.Path(t, "testdata/gguf/"+name+"/"+name+"-F16.gguf"), Options{Threads: 2})
		toks := []int{1, 450, 7483, 310, 3444, 338, 263, 29871}
		for _, pool := range []string{PoolMean, PoolCLS, PoolLast, ""} {
			m.Pooling = pool
			got, err := m.Embed(toks)
			if err != nil {
				t.Fatal(err)
			}
			rp := pool
			if rp == "" {
				rp = PoolLast // the documented default
			}
			want := refEmbed(t, m, toks, rp)
			var d, n float64
			for j := range want {
				d = math.Max(d, math.Abs(float64(got[j])-want[j]))
				n += float64(got[j]) * float64(got[j])
			}
			if d > 1e-4 {
				t.Errorf("%s pooling %q: embedding differs from the reference by %g", name, pool, d)
			}
			if math.Abs(n-1) > 1e-5 {
				t.Errorf("%s pooling %q: |e|² = %g, want 1", name, pool, n)
			}
		}
		m.Pooling = PoolNone
		if _, err := m.Embed(toks); !errors.Is(err, ErrPooling) {
			t.Errorf("%s pooling none: err = %v, want ErrPooling", name, err)
		}
		m.Pooling = ""
		if _, err := m.Embed(nil); !errors.Is(err, ErrBatch) {
			t.Errorf("%s no tokens: err = %v, want ErrBatch", name, err)
		}
	}
}

// TestPoolingTypeFromGGUF: {arch}.pooling_type is read with llama.cpp's
// enum (0 none, 1 mean, 2 cls, 3 last); absent leaves Pooling "" and an
// unknown value makes Embed refuse.
func TestPoolingTypeFromGGUF(t *testing.T) {
	src, err := gguf.Open(testshared.Path(t, "testdata/gguf/llama_gqa/llama_gqa-F16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	for v, want := range []string{PoolNone, PoolMean, PoolCLS, PoolLast, "unsupported(4)"} {
		w := gguf.NewWriter()
		if err := w.AddFile(src); err != nil {
			t.Fatal(err)
		}
		if err := w.AddKV(src.Arch()+".pooling_type", gguf.Uint32(uint32(v))); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("pool%d.gguf", v))
		if err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		m := mustLoad(t, path, Options{Threads: 1})
		if m.Pooling != want {
			t.Errorf("pooling_type %d: Pooling %q, want %q", v, m.Pooling, want)
		}
		_, err := m.Embed([]int{1, 2, 3})
		if refuse := v == 0 || v == 4; refuse != errors.Is(err, ErrPooling) {
			t.Errorf("pooling_type %d: Embed err = %v", v, err)
		}
	}
	m := mustLoad(t, testshared.Path(t, "testdata/gguf/llama_gqa/llama_gqa-F16.gguf"), Options{Threads: 1})
	if m.Pooling != "" {
		t.Errorf("no pooling_type: Pooling %q, want \"\"", m.Pooling)
	}
}
