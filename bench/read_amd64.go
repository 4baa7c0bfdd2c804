package bench

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

var hasAVX2 = cpu.X86.HasAVX2

//go:noescape
func readAVX2(p *byte, n int) uint64

// readSum sums b as uint64 lanes; only the loads matter. len(b) must be a
// multiple of 256.
func readSum(b []byte) uint64 {
	if hasAVX2 && len(b) > 0 {
		return readAVX2(unsafe.SliceData(b), len(b))
	}
	return readSumGo(b)
}
