package bench

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Bandwidth is the result of Probe: the best read rate seen over several
// passes (as STREAM reports), per worker count.
type Bandwidth struct {
	BufferBytes int64   `json:"buffer_bytes"`
	Passes      int     `json:"passes"`
	GBps1       float64 `json:"gbps_1_thread"`  // one worker, 1e9 bytes/s
	Threads     int     `json:"threads"`        // workers of GBpsN
	GBpsN       float64 `json:"gbps_n_threads"` // Threads workers
	L3Bytes     int64   `json:"l3_bytes,omitempty"`
}

// readSumGo is the portable read loop: eight independent sums so the loop
// issues loads back to back.
func readSumGo(b []byte) uint64 {
	var a0, a1, a2, a3, a4, a5, a6, a7 uint64
	u := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
	for i := 0; i+8 <= len(u); i += 8 {
		s := u[i : i+8 : i+8]
		a0 += s[0]
		a1 += s[1]
		a2 += s[2]
		a3 += s[3]
		a4 += s[4]
		a5 += s[5]
		a6 += s[6]
		a7 += s[7]
	}
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
}

// l3Bytes reads the last-level cache size from Linux sysfs (0 if unknown).
func l3Bytes() int64 {
	b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cache/index3/size")
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n * mult
}

// sink keeps the sums alive so the reads cannot be optimised away.
var sink uint64

// readParts reads parts[w] on worker w, all workers at once, and returns
// the sum of what was read as 64-bit lanes (also added to sink) and the
// wall seconds it took. Every slice's length must be a multiple of 256.
func readParts(parts [][][]byte) (uint64, float64) {
	var wg sync.WaitGroup
	sums := make([]uint64, len(parts))
	t0 := time.Now()
	for w := range parts {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for _, b := range parts[w] {
				sums[w] += readSum(b)
			}
		}(w)
	}
	wg.Wait()
	dt := time.Since(t0).Seconds()
	var sum uint64
	for _, v := range sums {
		sum += v
	}
	sink += sum
	return sum, dt
}

// Probe measures read bandwidth from memory: a buffer of size bytes
// (raised to 4× the L3 cache if smaller, so it cannot be served from
// cache) is filled, then read passes times by 1 worker and by threads
// workers, each streaming its own contiguous part. A pass's rate is
// size / wall time.
func Probe(size int64, threads, passes int) (Bandwidth, error) {
	l3 := l3Bytes()
	bw, err := probe(max(size, 4*l3), threads, passes)
	bw.L3Bytes = l3
	return bw, err
}

// probe is Probe without the cache-size floor (tests use small buffers).
func probe(size int64, threads, passes int) (Bandwidth, error) {
	size = size &^ (1<<20 - 1)
	if size <= 0 {
		return Bandwidth{}, fmt.Errorf("bench: bandwidth buffer of %d bytes", size)
	}
	threads = max(threads, 1)
	passes = max(passes, 1)
	buf := make([]byte, size)
	// Touch every page with non-zero data (an untouched buffer maps the
	// shared zero page and would be read from cache).
	var wg sync.WaitGroup
	part := size / int64(threads)
	for w := range threads {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b := buf[int64(w)*part : int64(w+1)*part]
			for i := 0; i+8 <= len(b); i += 4096 {
				binary.LittleEndian.PutUint64(b[i:], uint64(i)|1)
			}
		}(w)
	}
	wg.Wait()
	rate := func(workers int) float64 {
		best := 0.0
		per := (size / int64(workers)) &^ 255
		parts := make([][][]byte, workers)
		for w := range parts {
			parts[w] = [][]byte{buf[int64(w)*per : int64(w+1)*per]}
		}
		for range passes {
			_, dt := readParts(parts)
			best = max(best, float64(per*int64(workers))/dt/1e9)
		}
		return best
	}
	bw := Bandwidth{BufferBytes: size, Passes: passes, Threads: threads}
	bw.GBps1 = rate(1)
	bw.GBpsN = bw.GBps1
	if threads > 1 {
		bw.GBpsN = rate(threads)
	}
	return bw, nil
}
