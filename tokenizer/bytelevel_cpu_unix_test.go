//go:build unix

package tokenizer

import (
	"syscall"
	"time"
)

// processCPUTime returns the user+system CPU time this process has used
// (all threads, so garbage collection counts). Benchmarks report it beside
// wall time because the shared test machine is often oversubscribed.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
