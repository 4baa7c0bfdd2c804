package tensor

import "syscall"

// cpuSeconds is the process's user+system CPU time. Benchmarks on a
// machine shared with other jobs report throughput per CPU-second beside
// the wall-clock rate: a single-goroutine kernel's CPU time does not grow
// when another process takes turns on its core.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
