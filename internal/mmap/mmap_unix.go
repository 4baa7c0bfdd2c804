//go:build unix

package mmap

import (
	"fmt"
	"os"
	"syscall"
)

func mapFile(f *os.File, size int) (*Mapping, error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %s: %w", f.Name(), err)
	}
	return &Mapping{data: data, mapped: true}, nil
}

func unmap(data []byte) error { return syscall.Munmap(data) }
