package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSmapsParse: the smaps lines residency reads.
func TestSmapsParse(t *testing.T) {
	if a, ok := vmaStart([]byte("7f12a000-7f12c000 r--s 00000000 fd:00 123 /x.gguf")); !ok || a != 0x7f12a000 {
		t.Errorf("vmaStart: %x %v", a, ok)
	}
	if _, ok := vmaStart([]byte("Rss:                1234 kB")); ok {
		t.Error("vmaStart took a field line for a header")
	}
	if n, kb, ok := smapsField([]byte("FilePmdMapped:    651264 kB")); !ok || n != "FilePmdMapped" || kb != 651264 {
		t.Errorf("smapsField: %q %d %v", n, kb, ok)
	}
	// A mapping of our own: Rss counted once touched.
	a, err := Anon(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := a.Bytes()
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	if r := a.Residency(); r.Resident < int64(len(b)) {
		t.Errorf("Residency of a touched 4 MiB arena: %+v", r)
	}
}

// TestCached: a file just written is in the page cache (mincore).
func TestCached(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if c := cached(m.Bytes()); c < 0.5 {
		t.Errorf("cached share of a file just written: %.2f", c)
	}
}

var releaseSink int

// TestReleaseRange: the file pages wholly inside the range leave the
// resident set, the pages at its ends (shared with other bytes) stay, the
// bytes read back the same; an Anon mapping keeps its bytes (no release).
func TestReleaseRange(t *testing.T) {
	ps := os.Getpagesize()
	want := bytes.Repeat([]byte("0123456789abcdef"), 64*ps/16)
	m, _ := mapTemp(t, want)
	for i := 0; i < len(m.Bytes()); i += ps {
		releaseSink += int(m.Bytes()[i])
	}
	before := m.Residency().Resident
	if before != int64(len(want)) {
		t.Skipf("the mapping is %d of %d bytes resident after a read: cannot tell a release", before, len(want))
	}
	m.ReleaseRange(m.Bytes()[100 : 100+40*ps]) // pages 1..39 wholly inside
	if got := m.Residency().Resident; got != before-39*int64(ps) {
		t.Errorf("after ReleaseRange of 39 whole pages: %d bytes resident, want %d", got, before-39*int64(ps))
	}
	m.ReleaseRange(want[:2*ps]) // not in the mapping: nothing
	if !bytes.Equal(m.Bytes(), want) {
		t.Error("the released bytes read back differently")
	}
	a, err := Anon(4 * ps)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := range a.Bytes() {
		a.Bytes()[i] = 1
	}
	a.ReleaseRange(a.Bytes())
	if a.Bytes()[ps] != 1 {
		t.Error("ReleaseRange dropped an anonymous mapping's bytes")
	}
}
