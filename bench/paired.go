package bench

import "sort"

// pairedRead measures the read bandwidth a decode test could have had, in
// the same seconds as the test: between decode steps (pairEvery tokens
// apart, outside the timed steps) it streams pairTokens tokens' worth of
// the model's own weight bytes — the memory the decode reads, in the
// order it reads it — on the test's worker count, with the probe's read
// loop. The start-of-run probe (Probe) is the best of a few passes taken
// before any test; on a host whose other tenants come and go, a decode
// averaged over seconds compared with that best moment says as much
// about the neighbours as about the decode. A read interleaved with the
// decode sees the same neighbours, so Test.ReadFrac compares like with
// like: mean decode rate over mean read rate of the same memory.
type pairedRead struct {
	segs    [][]byte // the weights, in decode order
	ends    []int64  // ends[i]: bytes of segs[:i+1]
	total   int64
	off     int64 // where the next read starts, in the concatenation
	threads int

	// Accumulated since reset: bytes read and the time it took.
	bytes int64
	secs  float64
}

// pairEvery and pairTokens set how often and how much the paired read
// streams: 2 tokens' worth after every 8 decoded tokens (a quarter more
// time per test; each read 30-100 ms at 1-4 GB per token, about one
// decode step's length apart from its neighbours in time).
const (
	pairEvery  = 8
	pairTokens = 2
)

func newPairedRead(segs [][]byte, threads int) *pairedRead {
	p := &pairedRead{threads: max(threads, 1)}
	for _, s := range segs {
		if n := len(s) &^ 255; n > 0 {
			p.segs = append(p.segs, s[:n])
			p.total += int64(n)
			p.ends = append(p.ends, p.total)
		}
	}
	if p.total == 0 {
		return nil
	}
	return p
}

func (p *pairedRead) reset() { p.bytes, p.secs = 0, 0 }

// gbps is the mean rate since reset, 1e9 bytes/s (0 before any read).
func (p *pairedRead) gbps() float64 {
	if p.secs <= 0 {
		return 0
	}
	return float64(p.bytes) / p.secs / 1e9
}

// pieces appends to dst the slices of the concatenation [lo, lo+n) (n ≤
// total; wrapping at the end), each cut to a multiple of 256 bytes.
func (p *pairedRead) pieces(dst [][]byte, lo, n int64) [][]byte {
	for n > 0 {
		lo %= p.total
		i := sort.Search(len(p.ends), func(i int) bool { return p.ends[i] > lo })
		start := p.ends[i] - int64(len(p.segs[i]))
		b := p.segs[i][lo-start:]
		if int64(len(b)) > n {
			b = b[:n]
		}
		if k := len(b) &^ 255; k > 0 {
			dst = append(dst, b[:k])
		}
		lo += int64(len(b))
		n -= int64(len(b))
	}
	return dst
}

// read streams n bytes (at most the weights' total) from where the last
// read stopped, split into threads contiguous parts read concurrently,
// adds the bytes and the wall time to the totals, and returns the sum of
// what it read as 64-bit lanes (readSum's; tests check the coverage).
func (p *pairedRead) read(n int64) uint64 {
	n = min(n, p.total)
	part := n / int64(p.threads)
	parts := make([][][]byte, p.threads)
	for w := range parts {
		parts[w] = p.pieces(nil, p.off+int64(w)*part, part)
	}
	var got int64
	for _, ps := range parts {
		for _, b := range ps {
			got += int64(len(b))
		}
	}
	sum, dt := readParts(parts)
	p.secs += dt
	p.bytes += got
	p.off = (p.off + n) % p.total
	return sum
}
