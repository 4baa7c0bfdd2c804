//go:build !unix

package mmap

import (
	"io"
	"os"
)

// mapFile reads the file: this platform has no mmap in the standard library.
func mapFile(f *os.File, size int) (*Mapping, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	return &Mapping{data: data}, nil
}

func unmap([]byte) error { return nil }

func anon(size int) (*Mapping, error) { return &Mapping{data: make([]byte, size)}, nil }
