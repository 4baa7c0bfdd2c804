package mmap

import (
	"fmt"
	"os"
	"unsafe"
)

// Huge pages for weights. Streaming gigabytes of weights through 4 KiB
// pages costs a TLB miss (and, in a virtual machine with nested paging, a
// two-dimensional page walk) every 4 KiB; a 2 MiB page needs one per
// 2 MiB. Two ways get there on Linux:
//
//   - the file mapping itself: with MADV_HUGEPAGE, a kernel whose page
//     cache holds large folios for the file system (ext4, xfs on recent
//     kernels) reads the file into 2 MiB folios and maps them with one
//     PMD entry each (smaps' FilePmdMapped). Pages already cached in
//     small folios (a file just written) stay small until they leave the
//     cache, so Huge may drop the file's unmapped cached pages
//     (POSIX_FADV_DONTNEED) and read it again;
//   - a copy into anonymous memory advised for huge pages (Anon,
//     smaps' AnonHugePages): works wherever anonymous THP does, at the
//     cost of memory the page cache can no longer reclaim.

// Residency is how much of a mapping is in memory, and how much of that
// is mapped by 2 MiB pages (file PMD mappings or anonymous huge pages).
type Residency struct {
	Size     int64 // bytes mapped
	Resident int64 // bytes in memory (smaps Rss)
	Huge     int64 // bytes mapped by huge pages (FilePmdMapped + AnonHugePages)
}

// HugeShare is Huge/Size (0 for an empty mapping).
func (r Residency) HugeShare() float64 {
	if r.Size == 0 {
		return 0
	}
	return float64(r.Huge) / float64(r.Size)
}

// Residency reports the mapping's residency (zero Resident and Huge
// where the platform cannot tell).
func (m *Mapping) Residency() Residency {
	if m == nil || len(m.data) == 0 {
		return Residency{}
	}
	r := Residency{Size: int64(len(m.data))}
	if m.mapped {
		r.Resident, r.Huge = residency(m.vma())
	}
	return r
}

// vma is the whole mmap'd range (the kernel's mapping) of m.
func (m *Mapping) vma() []byte {
	if m.whole != nil {
		return m.whole
	}
	return m.data
}

// Huge asks for the file mapping to be held in 2 MiB pages and reads it
// in now (MADV_HUGEPAGE, then MADV_POPULATE_READ). If that leaves less
// than HugeEnough of it in huge pages and dropCache is set, the file's cached
// pages not mapped elsewhere are dropped and it is read again, so the
// page cache can refill it in large folios (unless most of it stays
// cached: other processes map it). The result is advice: an
// error (an old kernel, another platform) leaves an ordinary mapping
// that works as before.
func (m *Mapping) Huge(dropCache bool) (Residency, error) {
	if m == nil || len(m.data) == 0 || !m.mapped || m.whole != nil {
		return m.Residency(), nil
	}
	err := adviseFileHuge(m.data)
	if err == nil {
		err = populate(m.data, false)
	}
	r := m.Residency()
	if err != nil || !dropCache || r.HugeShare() >= HugeEnough || m.path == "" {
		return r, err
	}
	// Our own mapping pins the pages: let go of them first.
	if err := dontNeed(m.data); err != nil {
		return r, err
	}
	if err := m.dropCache(); err != nil {
		return r, err
	}
	// Pages another process maps stay cached (and small): when most did,
	// reading the file in again would not make it huge.
	if cached(m.data) > 0.5 {
		return m.Residency(), nil
	}
	err = populate(m.data, false)
	return m.Residency(), err
}

// HugeEnough is the share of a mapping in huge pages that Huge does not
// try to better (and model takes as a mapping in huge pages).
const HugeEnough = 0.9

// Populate faults the whole mapping in now, writable for an Anon
// mapping (MADV_POPULATE_WRITE), so that a copy into it does not take a
// page fault per page. Advice: on error the pages fault in on first use.
func (m *Mapping) Populate() error {
	if m == nil || len(m.data) == 0 || !m.mapped {
		return nil
	}
	return populate(m.data, m.whole != nil)
}

// ReadInto fills dst with the file bytes that src (a part of m.Bytes())
// holds, reading the file (pread) instead of touching the mapping, so the
// copy neither faults the mapping's pages in nor counts them in the
// process's resident set. It reports false without reading when it cannot
// (src is not in m, m was not opened from a file); then copy from src.
func (m *Mapping) ReadInto(dst, src []byte) (bool, error) {
	if m == nil || m.path == "" || len(src) == 0 || len(dst) < len(src) {
		return false, nil
	}
	off, ok := offsetIn(m.data, src)
	if !ok {
		return false, nil
	}
	f, err := m.reopen()
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.ReadAt(dst[:len(src)], int64(off)); err != nil {
		return false, fmt.Errorf("mmap: reading %s: %w", m.path, err)
	}
	return true, nil
}

// Contains reports whether b lies wholly within the mapping's bytes.
func (m *Mapping) Contains(b []byte) bool {
	if m == nil {
		return false
	}
	_, ok := offsetIn(m.data, b)
	return ok
}

// offsetIn is where sub starts inside b, if it lies wholly within it.
func offsetIn(b, sub []byte) (int, bool) {
	if len(b) == 0 || len(sub) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(&b[0]))
	p := uintptr(unsafe.Pointer(&sub[0]))
	if p < base || p-base+uintptr(len(sub)) > uintptr(len(b)) {
		return 0, false
	}
	return int(p - base), true
}

// dropCache asks the kernel to drop the file's clean cached pages that no
// process maps (POSIX_FADV_DONTNEED).
func (m *Mapping) dropCache() error {
	f, err := m.reopen()
	if err != nil {
		return err
	}
	defer f.Close()
	if err := dropFileCache(f); err != nil {
		return fmt.Errorf("mmap: dropping the cached pages of %s: %w", m.path, err)
	}
	return nil
}

// HugePagesEnabled reports whether anonymous transparent huge pages are
// available to memory advised for them (Linux: THP "always" or
// "madvise"; elsewhere false).
func HugePagesEnabled() bool { return hugePagesEnabled() }

// Available is the memory the kernel reports available for new
// allocations without swapping (Linux MemAvailable, page cache included);
// 0 when unknown.
func Available() int64 { return available() }

// ReleaseRange lets go of the resident pages of the file mapping m that
// lie wholly inside b (a part of m.Bytes()), as Release does for all of
// them: once a matrix was copied elsewhere (a kernel's packed layout),
// its file pages need not count in the process's resident set; a later
// read faults them in again. Advice: nothing happens where b is not in a
// file mapping of m (an Anon mapping would lose its bytes).
func (m *Mapping) ReleaseRange(b []byte) {
	if m == nil || !m.mapped || m.whole != nil || m.path == "" {
		return
	}
	off, ok := offsetIn(m.data, b)
	if !ok {
		return
	}
	// The page-aligned interior: the pages at either end may hold
	// another tensor's bytes. The mapping itself starts on a page.
	ps := os.Getpagesize()
	lo, hi := (off+ps-1)/ps*ps, (off+len(b))/ps*ps
	if lo < hi {
		_ = dontNeed(m.data[lo:hi])
	}
}

// Release lets go of the mapping's resident pages (MADV_DONTNEED); a
// later read faults them in again (from the page cache for a file). Use
// it once the bytes were copied elsewhere. Advice: errors are ignored.
func (m *Mapping) Release() {
	if m != nil && len(m.data) > 0 && m.mapped && m.whole == nil {
		_ = dontNeed(m.data)
	}
}
