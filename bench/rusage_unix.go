//go:build unix

package bench

import (
	"runtime"
	"syscall"
)

// maxRSS is getrusage's ru_maxrss in bytes (kilobytes on Linux, bytes on
// macOS).
func maxRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) << 10
}
