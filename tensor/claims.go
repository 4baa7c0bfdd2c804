package tensor

import "sync/atomic"

// Work split of the matrix-vector products: contiguous regions first,
// then help.
//
// A decode step streams every weight from DRAM once; what sets its rate is
// how smoothly each core's read stream runs. The kernels prefetch a fixed
// distance ahead along the rows they read (dotRowsF16Z: 32 KB), so a
// worker reading consecutive chunks of rows pays the DRAM latency once
// per stream, while one that jumps to a chunk elsewhere (the next free
// chunk of a single shared counter — on two workers every other chunk)
// restarts its stream cold at each chunk: at TinyLlama's shape ~1,800
// chunk starts per token. So the chunks are dealt into one contiguous
// region per worker, claimed in order from the region's own counter, and
// a worker whose region is used up then claims from the other regions'
// counters (the next region first), so a core that other processes slow
// down is still helped at chunk granularity as with one counter.
//
// The split never changes a result: every row is computed by the same
// kernel whichever worker takes its chunk.

// claimRegion is one worker's region of chunk indexes, [next, end), padded
// to its own cache line so that workers claiming in their own regions do
// not share a line.
type claimRegion struct {
	next atomic.Int64
	end  int64
	_    [48]byte
}

// claims deals chunk indexes [0, total) to the regions of a pool's workers.
type claims struct {
	regions []claimRegion // one per worker
}

// reset splits [0, total) into len(regions) contiguous regions (the
// first total%n one chunk longer). Called by the pool's caller before a
// job is published.
func (c *claims) reset(workers, total int) {
	if len(c.regions) != workers {
		c.regions = make([]claimRegion, workers)
	}
	n := len(c.regions)
	lo := 0
	for w := range c.regions {
		hi := lo + total/n
		if w < total%n {
			hi++
		}
		c.regions[w].next.Store(int64(lo))
		c.regions[w].end = int64(hi)
		lo = hi
	}
}

// claim returns worker's next chunk index and true, or false when every
// region is used up. *r is the region the worker claims from (start it
// at the worker's own index); it moves on to the next region as each is
// exhausted.
func (c *claims) claim(r *int) (int, bool) {
	n := len(c.regions)
	for k := 0; k < n; k++ {
		g := &c.regions[*r]
		if g.next.Load() < g.end {
			if i := g.next.Add(1) - 1; i < g.end {
				return int(i), true
			}
		}
		*r++
		if *r == n {
			*r = 0
		}
	}
	return 0, false
}
