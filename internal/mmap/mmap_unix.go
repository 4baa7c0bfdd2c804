//go:build unix

package mmap

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

func mapFile(f *os.File, size int) (*Mapping, error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %s: %w", f.Name(), err)
	}
	return &Mapping{data: data, mapped: true}, nil
}

func unmap(data []byte) error { return syscall.Munmap(data) }

// hugePage is the transparent huge page size Anon aligns to.
const hugePage = 2 << 20

func anon(size int) (*Mapping, error) {
	whole, err := syscall.Mmap(-1, 0, size+hugePage, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("mmap: anonymous %d bytes: %w", size, err)
	}
	off := int(-uintptr(unsafe.Pointer(&whole[0])) & (hugePage - 1))
	data := whole[off : off+size : off+size]
	// Advice only: a kernel without THP (or with it off) still gives memory.
	_ = madviseHuge(data)
	return &Mapping{data: data, mapped: true, whole: whole}, nil
}
