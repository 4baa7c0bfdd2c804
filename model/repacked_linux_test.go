package model

import (
	"encoding/binary"
	"math"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"nanoserve/internal/testshared"
	"nanoserve/tensor"
)

// presentPages counts the pages wholly inside b that this process's page
// table maps to memory now (/proc/self/pagemap, bit 63 of each page's
// entry), and how many pages that is.
func presentPages(t *testing.T, b []byte) (present, pages int) {
	t.Helper()
	ps := os.Getpagesize()
	start := uintptr(unsafe.Pointer(&b[0]))
	lo, hi := (start+uintptr(ps)-1)/uintptr(ps), (start+uintptr(len(b)))/uintptr(ps)
	if lo >= hi {
		return 0, 0
	}
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 8*(hi-lo))
	if _, err := f.ReadAt(buf, int64(lo*8)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(buf); i += 8 {
		if binary.LittleEndian.Uint64(buf[i:])>>63 != 0 {
			present++
		}
	}
	return present, int(hi - lo)
}

// TestRepackedReleased: once Load has packed a matrix into the kernels'
// layout, the file pages the packing read are no longer mapped in (Q4_1
// is packed on every amd64 host with AVX2): none of the pages wholly
// inside a repacked matrix's file bytes is present, and the logits are
// those of the file read again (its pages fault back in).
func TestRepackedReleased(t *testing.T) {
	path := testshared.Path(t, "testdata/gguf-quants/Q4_1/llamaq-Q4_1.gguf")
	m := mustLoad(t, path, Options{Threads: 2})
	maps := m.mappings()
	checked := 0
	for _, w := range m.matrices() {
		if !w.Repacked() || !inMappings(maps, w.Data) {
			continue
		}
		present, pages := presentPages(t, w.Data)
		if present > 0 {
			t.Errorf("a repacked %d×%d %s matrix: %d of its %d file pages still mapped in", w.Rows, w.Cols, w.Type, present, pages)
		}
		checked += pages
	}
	if checked == 0 {
		if runtime.GOARCH == "amd64" {
			t.Fatal("no repacked matrix pages in the file mapping on amd64")
		}
		t.Skip("no repacked matrices here")
	}
	again := mustLoad(t, path, Options{Threads: 2, MapWeights: true})
	toks := []int{1, 15, 27, 300}
	want, got := runSeqKV(t, again, toks, 0, tensor.F16), runSeqKV(t, m, toks, 0, tensor.F16)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d: %v, %v mapped", i, got[i], want[i])
		}
	}
}
