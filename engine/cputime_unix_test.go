//go:build unix

package engine

import "syscall"

// cpuSeconds is the process's user+system CPU time, for benchmarks that
// report throughput per CPU-second on a shared machine.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
