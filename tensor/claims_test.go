package tensor

import (
	"slices"
	"sync"
	"testing"
)

// TestClaimsOrder: a worker takes its own region in order, then the
// next regions' chunks, each once. Seen failing with reset's remainder
// given to the last regions instead of the first (region 1 began at 3)
// and with claim starting every search at region 0.
func TestClaimsOrder(t *testing.T) {
	var c claims
	c.reset(3, 10, 1) // regions [0,4) [4,7) [7,10)
	var got []int
	for r := 1; ; {
		i, hi, ok := c.claim(&r)
		if !ok {
			break
		}
		if hi != i+1 {
			t.Fatalf("claim [%d, %d) with most 1", i, hi)
		}
		got = append(got, i)
	}
	if want := []int{4, 5, 6, 7, 8, 9, 0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("worker 1 alone claimed %v, want %v", got, want)
	}
	c.reset(4, 2, 1) // more workers than chunks: regions [0,1) [1,2) and two empty
	r := 3
	if i, _, ok := c.claim(&r); !ok || i != 0 {
		t.Errorf("worker 3 of 4 over 2 chunks claimed %d, %v; want 0 (its region empty, region 0 next)", i, ok)
	}
}

// TestClaimsShrink: with most > 1 a worker alone claims its region in
// order, whole claims of most indexes while much is left, then shorter
// ones (a quarter of what is left), the region's last claim one index.
// Seen failing with the quarter taken of the whole region instead of
// what is left (no shrinking: the job's last claim as long as the
// first) and with the sizes' lower bound dropped (claims of 0 forever).
func TestClaimsShrink(t *testing.T) {
	var c claims
	c.reset(2, 64, 8) // regions [0,32) [32,64)
	var sizes []int
	next := 0
	for r := 0; ; {
		lo, hi, ok := c.claim(&r)
		if !ok {
			break
		}
		if lo != next%64 || hi <= lo || hi-lo > 8 {
			t.Fatalf("claim [%d, %d) after %d indexes, most 8", lo, hi, next)
		}
		next += hi - lo
		sizes = append(sizes, hi-lo)
	}
	if next != 64 {
		t.Fatalf("%d indexes claimed, want 64", next)
	}
	want := []int{8, 6, 4, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1} // one region: left 32, 24, 18, 14, 11, 9, 7, ...
	if got := sizes[:len(want)]; !slices.Equal(got, want) {
		t.Errorf("region 0 claimed in sizes %v, want %v", got, want)
	}
}

// TestClaimsConcurrent: workers claiming at once take every chunk exactly
// once (run under -race too), one index or up to seven at a time. Seen
// failing with claim's bounds off by one (< end → <= end: each region's
// end handed out as well).
func TestClaimsConcurrent(t *testing.T) {
	const workers, total = 4, 1001
	var c claims
	for i := range 40 {
		c.reset(workers, total, 1+i%2*6)
		seen := make([][]int, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := w; ; {
					lo, hi, ok := c.claim(&r)
					if !ok {
						return
					}
					for i := lo; i < hi; i++ {
						seen[w] = append(seen[w], i)
					}
				}
			}()
		}
		wg.Wait()
		var all []int
		for _, s := range seen {
			all = append(all, s...)
		}
		slices.Sort(all)
		if len(all) != total {
			t.Fatalf("%d chunks claimed, want %d", len(all), total)
		}
		for i, v := range all {
			if v != i {
				t.Fatalf("chunk %d claimed twice or never (sorted claims[%d] = %d)", i, i, v)
			}
		}
	}
}

// TestDecodeChunk: a one-token product's chunks are multiples of 16 rows,
// at least 16, an eighth of a worker's share for small matrices and at
// most decodeChunkBytes of weights for large ones (Qwen3.5-2B's F16
// output projection had 63 MB chunks, a 2.5 ms tail on one core).
func TestDecodeChunk(t *testing.T) {
	for _, c := range []struct {
		t          DType
		rows, cols int
		th, want   int
	}{
		{F16, 248320, 2048, 2, 64},  // 256 KiB / 4 KiB rows
		{Q8_0, 5632, 2048, 2, 112},  // 5632/16 = 352 > 256 KiB / 2176 B = 120 → 112
		{Q4_K, 5632, 2048, 2, 224},  // 352 > 256 KiB / 1152 B = 227 → 224
		{Q4_K, 2048, 2048, 2, 128},  // an eighth of a share: 2048/16
		{Q8_0, 256, 2048, 2, 16},    // small: at least 16
		{F32, 100000, 65536, 2, 16}, // 256 KiB rows: still 16
	} {
		rb, _ := c.t.RowBytes(c.cols)
		w := &Mat{Type: c.t, Rows: c.rows, Cols: c.cols}
		got := decodeChunk(w, c.th)
		if got != c.want {
			t.Errorf("%s (%d, %d) on %d threads: chunk %d rows, want %d", c.t, c.rows, c.cols, c.th, got, c.want)
		}
		if got%16 != 0 || (got > 16 && got*rb > decodeChunkBytes) {
			t.Errorf("%s (%d, %d): chunk %d rows of %d bytes breaks the rule", c.t, c.rows, c.cols, got, rb)
		}
	}
}
