package bench

import "testing"

// TestPairedRead: reads of the weights' concatenation cover it exactly
// once per cycle whatever the split into threads and wherever a read
// starts (a wrap at the end), the pieces are multiples of 256 bytes, and
// the totals count what was read.
func TestPairedRead(t *testing.T) {
	sizes := []int{1000, 512, 300, 4096, 255, 2048}
	var segs [][]byte
	var want uint64 // readSum of the trimmed segments
	for i, n := range sizes {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(7*i + j*13 + j>>8)
		}
		segs = append(segs, b)
		if k := n &^ 255; k > 0 {
			want += readSum(b[:k])
		}
	}
	const total = 768 + 512 + 256 + 4096 + 2048
	for _, threads := range []int{1, 2, 3} {
		p := newPairedRead(segs, threads)
		if p.total != total {
			t.Fatalf("total %d, want %d", p.total, total)
		}
		for _, ps := range [][]int64{{0, 256, 512}, {1024, 768}, {total - 256}} {
			for _, lo := range ps {
				for _, b := range p.pieces(nil, lo, total) {
					if len(b)%256 != 0 || len(b) == 0 {
						t.Fatalf("piece of %d bytes", len(b))
					}
				}
			}
		}
		// A whole cycle split among the threads: every byte once (parts
		// of total/threads bytes cut at 256 may drop a few bytes when
		// total/threads is not a multiple of 256; 1 and 2 threads split
		// this total exactly).
		if threads <= 2 {
			p.off = 0
			if got := p.read(total); got != want {
				t.Errorf("%d threads from 0: sum %d, want %d", threads, got, want)
			}
			if p.bytes != total || p.off != 0 {
				t.Errorf("%d threads: %d bytes read, next at %d; want %d, 0", threads, p.bytes, p.off, total)
			}
			// From the middle of a segment: the read wraps at the end.
			p.reset()
			p.off = 1024 + 256
			if got := p.read(total); got != want {
				t.Errorf("%d threads from %d: sum %d, want %d", threads, 1024+256, got, want)
			}
			if p.off != 1024+256 || p.gbps() <= 0 {
				t.Errorf("%d threads: next at %d, %.1f GB/s", threads, p.off, p.gbps())
			}
		}
	}
	if newPairedRead([][]byte{make([]byte, 100)}, 2) != nil {
		t.Error("weights shorter than 256 bytes: want no paired read")
	}
}
