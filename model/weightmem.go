package model

// Where the weights live in memory. Decode streams every weight matrix
// once per step; through 4 KiB pages that costs a TLB miss every 4 KiB,
// and in a virtual machine with nested paging each miss is a
// two-dimensional page walk (TinyLlama F16 decode: 11.6 tok/s from the
// plain mapping, 14.5 from a huge-page copy, issue 36). So by default the
// weights are held in 2 MiB pages, the cheapest way the kernel allows
// (package internal/mmap says how each works):
//
//  1. the file mapping itself, advised for huge pages and read in at load
//     (no copy, no private memory: the page cache's pages, shared with
//     other processes mapping the file and reclaimable), when the page
//     cache holds the file in 2 MiB folios — then at least 90% of it is
//     mapped by huge pages;
//  2. else a copy of the multiplied matrices into one anonymous arena
//     advised for huge pages, read from the file (pread) straight into
//     it, the mapping's pages then released — when anonymous THP is on
//     and the copy fits in half the available memory;
//  3. else the plain mapping (4 KiB pages, paged in on first use).
//
// Models whose matrices total under hugeMin stay in the plain mapping:
// they fit in the reach of the 4 KiB TLB entries well enough. CLI --mmap
// (Options.MapWeights) always takes 3, --no-mmap (Options.CopyWeights)
// always 2. Model.WeightMemory reports the placement and its memory.

import (
	"fmt"
	"runtime/debug"

	"nanoserve/gguf"
	"nanoserve/internal/mmap"
	"nanoserve/safetensors"
	"nanoserve/tensor"
)

// hugeMin is the matrix bytes below which the default placement keeps the
// plain mapping (a variable: tests lower it to place small fixtures).
var hugeMin int64 = 32 << 20

// The kernel calls placeWeights makes, replaced by tests to see a refusal
// fall back.
var (
	fileHuge = (*mmap.Mapping).Huge
	anonMem  = mmap.Anon
)

// Placements of the weights (WeightMemory.Placement).
const (
	PlacementMapped     = "mapped"      // the plain file mapping, 4 KiB pages
	PlacementMappedHuge = "mapped-huge" // the file mapping, mostly 2 MiB pages
	PlacementCopied     = "copied"      // an anonymous huge-page arena
)

// WeightMemory is where a loaded model's weights are held and what that
// costs in memory.
type WeightMemory struct {
	Placement string `json:"placement"`      // PlacementMapped, PlacementMappedHuge or PlacementCopied
	Why       string `json:"why,omitempty"`  // why the default chose it ("" when a flag did)
	Matrices  int64  `json:"matrix_bytes"`   // bytes of the matrices the forward multiplies by
	Mapped    int64  `json:"mapped_bytes"`   // bytes of the file mappings (page cache: shared, reclaimable)
	Resident  int64  `json:"resident_bytes"` // of the mappings, now in memory (counted in the process's RSS)
	Copied    int64  `json:"copied_bytes"`   // the anonymous arena: private memory the page cache cannot reclaim
	Repacked  int64  `json:"repacked_bytes"` // the kernels' own layouts of some matrices (Q4_0 … MXFP4 on amd64: tensor.Mat.Prepare), private too
	Huge      int64  `json:"huge_bytes"`     // bytes (mappings and arena) mapped by 2 MiB pages now
}

// String is the load log's line: "copied: 2.05 GiB anonymous (2.05 GiB
// in huge pages) + 0.12 of 2.05 GiB mapped resident".
func (w WeightMemory) String() string {
	s := w.Placement + ": "
	if w.Copied > 0 {
		s += fmt.Sprintf("%s anonymous copy, ", gib(w.Copied))
	}
	if w.Repacked > 0 {
		s += fmt.Sprintf("%s repacked, ", gib(w.Repacked))
	}
	s += fmt.Sprintf("%s of %s file mapping resident; %s in 2 MiB pages", gib(w.Resident), gib(w.Mapped), gib(w.Huge))
	if w.Why != "" {
		s += " (" + w.Why + ")"
	}
	return s
}

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// WeightData returns the bytes of the model's weight matrices in the
// order a decode step reads them (layer by layer, then the output
// projection), each matrix once. It is for readers that want to stream
// the very memory decoding streams (bench's paired read); the slices
// alias the weights and must not be written.
func (m *Model) WeightData() [][]byte {
	mats := m.matrices()
	out := make([][]byte, len(mats))
	for i, w := range mats {
		out[i] = w.Data
	}
	return out
}

// WeightMemory reports the weights' placement and their memory now.
func (m *Model) WeightMemory() WeightMemory {
	w := WeightMemory{Placement: m.placement, Why: m.placementWhy}
	for _, mat := range m.matrices() {
		w.Matrices += int64(len(mat.Data))
		w.Repacked += mat.Prepare() // made at load: only reports the size
	}
	for _, mp := range m.mappings() {
		r := mp.Residency()
		w.Mapped += r.Size
		w.Resident += r.Resident
		w.Huge += r.Huge
	}
	if m.arena != nil {
		r := m.arena.Residency()
		w.Copied = r.Size
		w.Huge += r.Huge
	}
	return w
}

// mappings are the model's file mappings (not the arena).
func (m *Model) mappings() []*mmap.Mapping {
	var ms []*mmap.Mapping
	for _, c := range m.closers {
		switch c := c.(type) {
		case *gguf.File:
			ms = append(ms, c.Mappings()...)
		case *safetensors.File:
			ms = append(ms, c.Mappings()...)
		case *mmap.Mapping:
			if c != m.arena {
				ms = append(ms, c)
			}
		}
	}
	return ms
}

// matrices are the matrices the forward pass multiplies by, each once;
// the embedding table only when it is also the (tied) output matrix —
// Forward reads one of its rows per token.
func (m *Model) matrices() []*tensor.Mat {
	var mats []*tensor.Mat
	seen := map[*tensor.Mat]bool{}
	add := func(ws ...*tensor.Mat) {
		for _, w := range ws {
			if w != nil && len(w.Data) > 0 && !seen[w] {
				seen[w] = true
				mats = append(mats, w)
			}
		}
	}
	for l := range m.w.layers {
		lw := &m.w.layers[l]
		if lw.wqkv != nil {
			add(lw.wqkv) // wq, wk, wv are its rows, or unused
		} else {
			add(lw.wq, lw.wk, lw.wv)
		}
		add(lw.wo, lw.wGate, lw.wUp, lw.wDown, lw.router, lw.plGate, lw.plProj)
		add(lw.expGate...)
		add(lw.expUp...)
		add(lw.expDown...)
	}
	add(m.w.output, m.w.perLayerProj)
	return mats
}

// placeWeights puts the weights where opts and the kernel say (the file
// comment). Only the copy --no-mmap asks for can fail a load: huge-page
// advice the kernel refuses, or a default copy it cannot give memory
// for, leaves the plain mapping.
func (m *Model) placeWeights(opts Options) error {
	switch {
	case opts.MapWeights:
		m.placement = PlacementMapped
		return nil
	case opts.CopyWeights:
		return m.copyWeights(true)
	}
	var matBytes int64
	for _, w := range m.matrices() {
		matBytes += int64(len(w.Data))
	}
	maps := m.mappings()
	var size int64
	for _, mp := range maps {
		size += int64(len(mp.Bytes()))
	}
	m.placement = PlacementMapped
	avail := mmap.Available()
	switch {
	case matBytes < hugeMin:
		m.placementWhy = "small model"
		return nil
	case avail > 0 && size > avail*4/5:
		m.placementWhy = "larger than the available memory allows reading in at load"
		return nil
	}
	var huge int64
	for _, mp := range maps {
		r, _ := fileHuge(mp, true) // advice: an error leaves the mapping as it was
		huge += r.Huge
	}
	if size > 0 && float64(huge) >= mmap.HugeEnough*float64(size) {
		// The matrices built at load (fused q/k/v) live on the Go heap,
		// in 4 KiB pages: those move to a huge-page arena.
		m.placement, m.placementWhy = PlacementMappedHuge, "the page cache gives the file 2 MiB pages"
		if err := m.copyWeights(false); err != nil {
			m.placementWhy += "; the matrices built at load stay on the heap: " + err.Error()
		} else {
			debug.FreeOSMemory() // their heap copies are garbage now: not counted in the RSS
		}
		return nil
	}
	switch {
	case !mmap.HugePagesEnabled():
		m.placementWhy = "no transparent huge pages"
	case avail > 0 && matBytes > avail/2:
		m.placementWhy = "a huge-page copy would not fit in half the available memory"
	default:
		if err := m.copyWeights(true); err != nil {
			m.placementWhy = "the copy failed: " + err.Error()
			return nil
		}
		m.placementWhy = "the page cache gives the file 4 KiB pages"
	}
	return nil
}

// copyWeights moves the data of the matrices the forward pass multiplies
// by — all, or (all false) only those not in a file mapping (built at
// load) — into one anonymous huge-page arena, each matrix 64-byte
// aligned, read from the file straight into it where the matrix lies in a
// file mapping; after a copy of all, it releases the mappings' resident
// pages (the norms and the embedding rows fault back in as they are
// read). Matrices the kernels repack (tensor.Mat.Repacked) stay where
// they are: MatMul reads their packed copy, made in huge pages.
func (m *Model) copyWeights(all bool) error {
	maps := m.mappings()
	var mats []*tensor.Mat
	for _, w := range m.matrices() {
		if (all || !inMappings(maps, w.Data)) && !w.Repacked() {
			mats = append(mats, w)
		}
	}
	if len(mats) == 0 {
		// Every matrix repacked (a Q8_0 or Q4_0 file on AVX2): nothing
		// to copy, and the file's pages are not what MatMul reads.
		if all {
			for _, mp := range maps {
				mp.Release()
			}
			m.placement = PlacementCopied
		}
		return nil
	}
	size := 0
	for _, w := range mats {
		size += (len(w.Data) + 63) &^ 63
	}
	arena, err := anonMem(size)
	if err != nil {
		return fmt.Errorf("model: copying the weights: %w", err)
	}
	_ = arena.Populate() // advice: one call instead of a fault per 2 MiB
	buf, off := arena.Bytes(), 0
	for _, w := range mats {
		n := len(w.Data)
		dst := buf[off : off+n : off+n]
		read := false
		for _, mp := range maps {
			ok, err := mp.ReadInto(dst, w.Data)
			if err != nil {
				arena.Close()
				return fmt.Errorf("model: copying the weights: %w", err)
			}
			if read = ok; ok {
				break
			}
		}
		if !read {
			copy(dst, w.Data)
		}
		w.Data = dst
		off += (n + 63) &^ 63
	}
	for l := range m.w.layers { // q, k, v are views of the fused matrix's rows
		lw := &m.w.layers[l]
		if qkv := lw.wqkv; qkv != nil && lw.wq != nil && lw.wk != nil && lw.wv != nil {
			nq, nk := len(lw.wq.Data), len(lw.wk.Data)
			if nq+nk+len(lw.wv.Data) != len(qkv.Data) {
				continue
			}
			lw.wq.Data, lw.wk.Data, lw.wv.Data = qkv.Data[:nq:nq], qkv.Data[nq:nq+nk:nq+nk], qkv.Data[nq+nk:]
		}
	}
	if all {
		for _, mp := range maps {
			mp.Release()
		}
		m.placement = PlacementCopied
	}
	m.closers = append(m.closers, arena)
	m.arena = arena
	return nil
}

// inMappings reports whether b lies in one of the mappings.
func inMappings(maps []*mmap.Mapping, b []byte) bool {
	for _, mp := range maps {
		if mp.Contains(b) {
			return true
		}
	}
	return false
}
