package tensor

import (
	"os"
	"runtime"
	"strings"
)

// PhysicalCores is the number of physical cores when Linux tells us
// (/proc/cpuinfo: distinct physical id / core id pairs), else the number
// of logical CPUs: the worker count nanoserve's commands default to.
func PhysicalCores() int {
	n := runtime.NumCPU()
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return n
	}
	cores := map[string]bool{}
	var phys, core string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if phys != "" || core != "" {
				cores[phys+"/"+core] = true
			}
			phys, core = "", ""
			continue
		}
		switch strings.TrimSpace(k) {
		case "physical id":
			phys = strings.TrimSpace(v)
		case "core id":
			core = strings.TrimSpace(v)
		}
	}
	if len(cores) > 0 && len(cores) <= n {
		return len(cores)
	}
	return n
}
