package bench

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// systemInfo describes the machine.
func systemInfo(threads int) System {
	s := System{OS: runtime.GOOS, Arch: runtime.GOARCH, NumCPU: runtime.NumCPU(), Threads: threads, GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				s.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return s
}

// loadAvg reads the 1, 5 and 15 minute load averages (zeros if unknown).
// On a shared machine they say how much the numbers can be trusted.
func loadAvg() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

// peakRSS is the process's peak resident set in bytes: VmHWM from
// /proc/self/status on Linux (it includes the mapped weight pages that
// were touched), else getrusage's ru_maxrss.
func peakRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				f := strings.Fields(v)
				if len(f) >= 1 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						return kb << 10
					}
				}
			}
		}
	}
	return maxRSS()
}

// resetPeakRSS restarts the peak-RSS count (Linux ≥ 4.0: writing 5 to
// /proc/self/clear_refs), so the peak covers what follows. It returns a
// note for the report when that is not possible.
func resetPeakRSS() string {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return "peak RSS includes the bandwidth probe buffer (clear_refs: " + err.Error() + ")"
	}
	return ""
}
