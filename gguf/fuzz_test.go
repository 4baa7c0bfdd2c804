package gguf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"nanoserve/tensor"
)

// seeds are the inputs committed under testdata/fuzz/FuzzParse (regenerate
// with NANOSERVE_WRITE_CORPUS=1 go test -run TestWriteCorpus ./gguf).
func seeds(t testing.TB) map[string][]byte {
	s := small(t)
	all, _ := buildFile(t, sampleKV(t), allTypes)
	quant, _ := buildFile(t, []KV{{KeyAlignment, Uint32(64)}}, []tensor.DType{tensor.Q4_K, tensor.Q6_K, tensor.BF16})
	return map[string][]byte{
		"small":          s,
		"small-cut":      s[:len(s)/2],
		"all-types":      all,
		"quant-align64":  quant,
		"v2-no-tensors":  cat(header(2, 0, 1), kvBytes("k", TypeBool, []byte{1})),
		"v1":             withData(header(1, 0, 0), 0),
		"bad-magic":      append([]byte("GGML"), s[4:]...),
		"huge-counts":    header(3, 1<<60, 1<<60),
		"huge-string":    cat(header(3, 0, 1), kvBytes("k", TypeString, u64b(1<<60))),
		"huge-array":     cat(header(3, 0, 1), kvBytes("k", TypeArray, u32b(uint32(TypeString)), u64b(1<<60))),
		"nested":         cat(header(3, 0, 1), kvBytes("k", TypeArray, u32b(uint32(TypeArray)), u64b(2), u32b(0), u64b(1), []byte{7}, u32b(8), u64b(1), appendString(nil, "x"))),
		"overlap":        withData(cat(header(3, 2, 0), tensorInfoBytes("a", []uint64{16}, 0, 0), tensorInfoBytes("b", []uint64{8}, 0, 32)), 96),
		"tensor-outside": withData(cat(header(3, 1, 0), tensorInfoBytes("w", []uint64{8}, 0, 32)), 32),
	}
}

func TestWriteCorpus(t *testing.T) {
	if os.Getenv("NANOSERVE_WRITE_CORPUS") == "" {
		t.Skip("set NANOSERVE_WRITE_CORPUS=1 to regenerate testdata/fuzz/FuzzParse")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzParse: Parse never panics, and whatever it accepts survives a
// write → parse round trip with identical metadata and tensor bytes.
func FuzzParse(f *testing.F) {
	for _, b := range seeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data)
		if err != nil {
			if g != nil {
				t.Fatal("non-nil File with an error")
			}
			return
		}
		// Exercise every accessor; none may panic.
		for _, kv := range g.KV {
			_ = kv.Value.String()
			g.String(kv.Key)
			g.Uint(kv.Key)
			g.Int(kv.Key)
			g.Float(kv.Key)
			g.Bool(kv.Key)
			g.Strings(kv.Key)
			g.Int32s(kv.Key)
			g.Float32s(kv.Key)
			if a, err := g.Array(kv.Key); err == nil && a.Len() > 0 {
				_ = a.Index(a.Len() - 1).String()
			}
		}
		g.Arch()
		var buf bytes.Buffer
		if _, err := rewrite(t, g).WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		h, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("re-parse of a rewritten file: %v", err)
		}
		if len(h.KV) != len(g.KV) || len(h.Tensors) != len(g.Tensors) || h.Alignment != g.Alignment {
			t.Fatal("round trip changed counts or alignment")
		}
		for i := range g.KV {
			if h.KV[i].Key != g.KV[i].Key || !h.KV[i].Value.Equal(g.KV[i].Value) {
				t.Fatalf("round trip changed key %q", g.KV[i].Key)
			}
		}
		for i := range g.Tensors {
			a, b := &g.Tensors[i], &h.Tensors[i]
			if a.Name != b.Name || a.Type != b.Type || fmt.Sprint(a.Dims) != fmt.Sprint(b.Dims) || !bytes.Equal(a.Data, b.Data) {
				t.Fatalf("round trip changed tensor %q", a.Name)
			}
		}
	})
}
