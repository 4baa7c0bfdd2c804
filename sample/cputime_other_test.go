//go:build !linux

package sample

// cpuSeconds is unavailable here; benchmarks then report 0 CPU-ns/op.
func cpuSeconds() float64 { return 0 }
