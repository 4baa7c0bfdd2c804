package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	want := bytes.Repeat([]byte("nanoserve"), 1000)
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Bytes(), want) {
		t.Fatal("mapped bytes differ from the file")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal("second Close:", err)
	}

	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	m, err = Open(empty)
	if err != nil || len(m.Bytes()) != 0 {
		t.Fatalf("empty file: %v, %d bytes", err, len(m.Bytes()))
	}
	m.Close()

	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file: no error")
	}
	if _, err := Open(dir); err == nil {
		t.Fatal("directory: no error")
	}
}
