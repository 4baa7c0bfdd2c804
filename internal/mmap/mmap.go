// Package mmap maps files read-only into memory, so multi-gigabyte model
// files are paged in by the kernel on demand instead of being copied into
// the Go heap. On unix systems it uses mmap(2) (PROT_READ, MAP_SHARED); on
// other systems it falls back to reading the whole file.
//
// The bytes of a Mapping must not be written (the pages are read-only: a
// write faults) and must not be used after Close.
package mmap

import (
	"fmt"
	"os"
)

// Mapping is a read-only view of a whole file.
type Mapping struct {
	data   []byte
	mapped bool        // data came from mmap and must be unmapped
	whole  []byte      // the whole mapping when data is an aligned part of it (Anon); nil otherwise
	path   string      // the file mapped (Open); "" for Anon
	file   os.FileInfo // path's identity at Open (reopen checks it is still that file)
}

// Open maps the file at path. An empty file gives an empty Mapping.
func Open(path string) (*Mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("mmap: %s is not a regular file", path)
	}
	size := fi.Size()
	if size == 0 {
		return &Mapping{}, nil
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("mmap: %s is too large (%d bytes) for this platform", path, size)
	}
	m, err := mapFile(f, int(size))
	if err != nil {
		return nil, err
	}
	m.path, m.file = path, fi
	return m, nil
}

// reopen opens the mapped file again, checking it is the same file.
func (m *Mapping) reopen() (*os.File, error) {
	f, err := os.Open(m.path)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, m.file) {
		f.Close()
		return nil, fmt.Errorf("mmap: %s was replaced after it was mapped", m.path)
	}
	return f, nil
}

// Bytes returns the file's contents (read-only; valid until Close).
func (m *Mapping) Bytes() []byte { return m.data }

// Close releases the mapping. It is safe to call more than once.
func (m *Mapping) Close() error {
	if m == nil || m.data == nil {
		return nil
	}
	data, mapped := m.data, m.mapped
	if m.whole != nil {
		data = m.whole
	}
	m.data, m.mapped, m.whole = nil, false, nil
	if mapped {
		return unmap(data)
	}
	return nil
}

// Anon returns a zeroed, writable anonymous Mapping of size bytes for
// data the caller copies in (model weights taken out of a file mapping):
// on Linux aligned to 2 MiB and advised for transparent huge pages
// (MADV_HUGEPAGE), so that streaming over it needs one TLB entry per
// 2 MiB instead of per 4 KiB page. Elsewhere it is ordinary memory.
func Anon(size int) (*Mapping, error) {
	if size <= 0 {
		return &Mapping{}, nil
	}
	return anon(size)
}
