package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReadInto: a part of the mapping read from the file equals the
// mapped bytes; bytes outside the mapping are refused (false, no error);
// a file replaced since it was mapped is an error, not other bytes.
func TestReadInto(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<12)
	m, p := mapTemp(t, want)
	src := m.Bytes()[1000:5000]
	dst := make([]byte, len(src))
	if ok, err := m.ReadInto(dst, src); !ok || err != nil || !bytes.Equal(dst, src) {
		t.Fatalf("ReadInto: %v %v, equal %v", ok, err, bytes.Equal(dst, src))
	}
	if !m.Contains(src) || m.Contains(dst) {
		t.Error("Contains: wrong answer for a part of the mapping or a heap buffer")
	}
	if ok, err := m.ReadInto(dst, dst); ok || err != nil {
		t.Errorf("ReadInto of bytes outside the mapping: %v %v, want false, nil", ok, err)
	}
	r, _ := m.Huge(true) // advice: whatever the kernel does, the bytes stay
	if r.Size != int64(len(want)) || !bytes.Equal(m.Bytes(), want) {
		t.Errorf("after Huge: size %d, bytes equal %v", r.Size, bytes.Equal(m.Bytes(), want))
	}
	os.Remove(p)
	os.WriteFile(p, want, 0o644) // a new file at the same path
	if ok, err := m.ReadInto(dst, src); ok || err == nil {
		t.Errorf("ReadInto after the file was replaced: %v %v, want an error", ok, err)
	}
}

// TestAnonPopulate: Populate leaves a zeroed, writable arena.
func TestAnonPopulate(t *testing.T) {
	a, err := Anon(3 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Populate()
	b := a.Bytes()
	if len(b) != 3<<20 || b[0] != 0 || b[len(b)-1] != 0 {
		t.Fatal("arena not zeroed")
	}
	b[len(b)-1] = 1
}

// mapTemp writes data to a file in a test directory and maps it (closed
// at the end of the test), returning the mapping and the file's path.
func mapTemp(t *testing.T, data []byte) (*Mapping, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, p
}
