package mmap

import "syscall"

// madviseHuge asks for transparent huge pages (MADV_HUGEPAGE) over b.
func madviseHuge(b []byte) error { return syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
