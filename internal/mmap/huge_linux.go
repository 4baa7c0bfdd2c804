package mmap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// madviseHuge asks for transparent huge pages (MADV_HUGEPAGE) over b.
func madviseHuge(b []byte) error { return unix.Madvise(b, unix.MADV_HUGEPAGE) }

// adviseFileHuge is madviseHuge for a file mapping; a test replaces it to
// see a refusal fall back.
var adviseFileHuge = madviseHuge

// populate faults b in (MADV_POPULATE_READ / _WRITE, Linux 5.14).
func populate(b []byte, write bool) error {
	advice := unix.MADV_POPULATE_READ
	if write {
		advice = unix.MADV_POPULATE_WRITE
	}
	if err := unix.Madvise(b, advice); err != nil {
		return fmt.Errorf("mmap: populate: %w", err)
	}
	return nil
}

func dontNeed(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }

func dropFileCache(f *os.File) error { return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED) }

// cached is the share of b's pages in the page cache (mincore; 0 when
// unknown).
func cached(b []byte) float64 {
	vec := make([]byte, (len(b)+os.Getpagesize()-1)/os.Getpagesize())
	if len(vec) == 0 {
		return 0
	}
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return 0
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return float64(n) / float64(len(vec))
}

// residency reads the Rss and huge-page lines of the /proc/self/smaps
// entry of the mapping that starts at vma[0].
func residency(vma []byte) (resident, huge int64) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	start := uint64(uintptr(unsafe.Pointer(&vma[0])))
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	in := false
	for sc.Scan() {
		line := sc.Bytes()
		if lo, ok := vmaStart(line); ok {
			in = lo == start
			continue
		}
		if !in {
			continue
		}
		name, kb, ok := smapsField(line)
		if !ok {
			continue
		}
		switch name {
		case "Rss":
			resident = kb << 10
		case "FilePmdMapped", "AnonHugePages", "ShmemPmdMapped":
			huge += kb << 10
		}
	}
	return resident, huge
}

// vmaStart parses the start address of a mapping's header line
// ("7f12a000-7f12c000 r--s 00000000 fd:00 123 /path").
func vmaStart(line []byte) (uint64, bool) {
	f := bytes.Fields(line)
	if len(f) < 2 || bytes.HasSuffix(f[0], []byte(":")) {
		return 0, false
	}
	lo, _, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return 0, false
	}
	a, err := strconv.ParseUint(string(lo), 16, 64)
	return a, err == nil
}

// smapsField parses "Name:   123 kB".
func smapsField(line []byte) (string, int64, bool) {
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return "", 0, false
	}
	f := bytes.Fields(line[i+1:])
	if len(f) != 2 || string(f[1]) != "kB" {
		return "", 0, false
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return "", 0, false
	}
	return string(line[:i]), n, true
}

func hugePagesEnabled() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && !bytes.Contains(b, []byte("[never]"))
}

func available() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if name, kb, ok := smapsField(bytes.TrimSpace(line)); ok && name == "MemAvailable" {
			return kb << 10
		}
	}
	return 0
}
