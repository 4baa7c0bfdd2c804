package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nanoserve/tensor"
)

// splitWriter builds a Writer with sampleKV and seven small tensors.
func splitWriter(t *testing.T) (*Writer, map[string][]byte) {
	t.Helper()
	w := NewWriter()
	for _, kv := range sampleKV(t) {
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	datas := map[string][]byte{}
	for i, typ := range []tensor.DType{tensor.F32, tensor.F16, tensor.Q8_0, tensor.Q4_K, tensor.F32, tensor.Q6_K, tensor.BF16} {
		cols := uint64(typ.BlockSize()) * 2
		rb, _ := typ.RowBytes(int(cols))
		data := make([]byte, rb*3)
		for j := range data {
			data[j] = byte(i*17 + j*3)
		}
		name := "t" + string(rune('a'+i))
		if err := w.AddTensor(name, typ, []uint64{cols, 3}, data); err != nil {
			t.Fatal(err)
		}
		datas[name] = data
	}
	return w, datas
}

func TestSplitPath(t *testing.T) {
	p := SplitPath("dir/model-Q4_K_M", 1, 3)
	if p != "dir/model-Q4_K_M-00002-of-00003.gguf" {
		t.Fatalf("SplitPath = %q", p)
	}
	prefix, i, n, ok := ParseSplitPath(p)
	if !ok || prefix != "dir/model-Q4_K_M" || i != 1 || n != 3 {
		t.Fatalf("ParseSplitPath(%q) = %q %d %d %v", p, prefix, i, n, ok)
	}
	for _, bad := range []string{"model.gguf", "m-00004-of-00003.gguf", "m-00000-of-00003.gguf", "m-1-of-3.gguf", "m-00001-of-00003.bin"} {
		if _, _, _, ok := ParseSplitPath(bad); ok {
			t.Errorf("ParseSplitPath(%q) accepted", bad)
		}
	}
}

// TestOpenSplit writes one model whole and split in three and checks the
// merged File has the same metadata and the same tensor bytes.
func TestOpenSplit(t *testing.T) {
	dir := t.TempDir()
	w, datas := splitWriter(t)
	whole := filepath.Join(dir, "whole.gguf")
	if err := w.WriteFile(whole); err != nil {
		t.Fatal(err)
	}
	paths, err := w.WriteSplit(filepath.Join(dir, "m"), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 || filepath.Base(paths[2]) != "m-00003-of-00003.gguf" {
		t.Fatalf("paths %v", paths)
	}
	// The second and third files hold only the split keys.
	p1, err := Open(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(p1.KV) != 3 || len(p1.Tensors) != 3 {
		t.Errorf("file 2: %d keys, %d tensors; want 3 and 3", len(p1.KV), len(p1.Tensors))
	}
	p1.Close()

	f, err := OpenSplit(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref, err := OpenSplit(whole) // a single file opens as itself
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if ref.Paths != nil || len(f.Paths) != 3 {
		t.Errorf("Paths: whole %v, split %v", ref.Paths, f.Paths)
	}
	if len(f.Tensors) != len(ref.Tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(ref.Tensors))
	}
	for i, rt := range ref.Tensors {
		st, ok := f.Tensor(rt.Name)
		if !ok || f.Tensors[i].Name != rt.Name {
			t.Fatalf("tensor %d: %q missing or out of order", i, rt.Name)
		}
		if !bytes.Equal(st.Data, datas[rt.Name]) || st.Type != rt.Type || st.Split != i/3 {
			t.Errorf("tensor %q: data equal %v, type %s, split %d", rt.Name, bytes.Equal(st.Data, datas[rt.Name]), st.Type, st.Split)
		}
	}
	for _, kv := range ref.KV {
		v, ok := f.Get(kv.Key)
		if !ok || v.String() != kv.Value.String() {
			t.Errorf("key %q: %v, want %v", kv.Key, v, kv.Value)
		}
	}
	if n, c, _ := f.SplitInfo(); n != 0 || c != 3 {
		t.Errorf("SplitInfo = %d, %d", n, c)
	}
}

func TestOpenSplitErrors(t *testing.T) {
	write := func(t *testing.T) (string, []string) {
		dir := t.TempDir()
		w, _ := splitWriter(t)
		paths, err := w.WriteSplit(filepath.Join(dir, "m"), 3)
		if err != nil {
			t.Fatal(err)
		}
		return dir, paths
	}
	expect := func(t *testing.T, path string, want ...string) {
		t.Helper()
		f, err := OpenSplit(path)
		if err == nil {
			f.Close()
			t.Fatalf("OpenSplit(%s) succeeded", path)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
	}
	t.Run("later file", func(t *testing.T) {
		_, paths := write(t)
		expect(t, paths[1], "file 2 of a 3-file", "m-00001-of-00003.gguf")
	})
	t.Run("missing file", func(t *testing.T) {
		_, paths := write(t)
		os.Remove(paths[2])
		expect(t, paths[0], "m-00003-of-00003.gguf", "file 3")
	})
	t.Run("renamed first", func(t *testing.T) {
		dir, paths := write(t)
		p := filepath.Join(dir, "model.gguf")
		os.Rename(paths[0], p)
		expect(t, p, "split.count = 3", "PREFIX-00001-of-00003")
	})
	t.Run("shuffled files", func(t *testing.T) {
		_, paths := write(t)
		tmp := paths[1] + ".tmp"
		os.Rename(paths[1], tmp)
		os.Rename(paths[2], paths[1])
		os.Rename(tmp, paths[2])
		expect(t, paths[0], "says it is file 3 of 3, its name says 2 of 3")
	})
	t.Run("tensor count", func(t *testing.T) {
		dir := t.TempDir()
		w, _ := splitWriter(t)
		paths, err := w.WriteSplit(filepath.Join(dir, "m"), 3)
		if err != nil {
			t.Fatal(err)
		}
		// Rewrite the last file without its tensors.
		last := NewWriter()
		last.AddKV(KeySplitNo, Uint16(2))
		last.AddKV(KeySplitCount, Uint16(3))
		last.AddKV(KeySplitTensors, Int32(7))
		if err := last.WriteFile(paths[2]); err != nil {
			t.Fatal(err)
		}
		expect(t, paths[0], "split.tensors.count = 7", "hold 6 tensors")
	})
	t.Run("duplicate tensor", func(t *testing.T) {
		dir := t.TempDir()
		w, datas := splitWriter(t)
		paths, err := w.WriteSplit(filepath.Join(dir, "m"), 3)
		if err != nil {
			t.Fatal(err)
		}
		last := NewWriter()
		last.AddKV(KeySplitNo, Uint16(2))
		last.AddKV(KeySplitCount, Uint16(3))
		if err := last.AddTensor("ta", tensor.F32, []uint64{2, 3}, datas["ta"]); err != nil {
			t.Fatal(err)
		}
		if err := last.WriteFile(paths[2]); err != nil {
			t.Fatal(err)
		}
		expect(t, paths[0], `tensor "ta" is in two files`)
	})
	t.Run("bad count", func(t *testing.T) {
		dir := t.TempDir()
		w := NewWriter()
		w.AddKV(KeySplitNo, Uint16(3))
		w.AddKV(KeySplitCount, Uint16(3))
		p := filepath.Join(dir, "m-00001-of-00003.gguf")
		if err := w.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		f, err := OpenSplit(p)
		if !errors.Is(err, ErrInvalid) {
			f.Close()
			t.Fatalf("split.no = split.count: err = %v", err)
		}
	})
}
