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
// A claim takes up to `most` chunk indexes at once (units: a matrix-vector
// job's 16-row units, its chunk being `most` of them): the whole chunk
// while much of the region is left, then a quarter of what is left, down
// to one unit, so that the last claims of a job, which one worker runs
// while the other has nothing left, are short and the workers reach the
// end-of-job barrier together.
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
	most    int64         // indexes per claim at most
}

// reset splits [0, total) into len(regions) contiguous regions (the
// first total%n one index longer), claimed up to most indexes at a time.
// Called by the pool's caller before a job is published.
func (c *claims) reset(workers, total, most int) {
	if len(c.regions) != workers {
		c.regions = make([]claimRegion, workers)
	}
	c.most = int64(max(1, most))
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

// claim returns worker's next indexes [lo, hi) and true, or false when
// every region is used up. *r is the region the worker claims from
// (start it at the worker's own index); it moves on to the next region
// as each is exhausted. A claim takes most indexes, or a quarter of what
// is left of the region when that is less (at least one).
func (c *claims) claim(r *int) (lo, hi int, ok bool) {
	n := len(c.regions)
	for k := 0; k < n; k++ {
		g := &c.regions[*r]
		for {
			cur := g.next.Load()
			left := g.end - cur
			if left <= 0 {
				break
			}
			sz := min(c.most, max(1, left/4))
			if g.next.CompareAndSwap(cur, cur+sz) {
				return int(cur), int(cur + sz), true
			}
		}
		*r++
		if *r == n {
			*r = 0
		}
	}
	return 0, 0, false
}
