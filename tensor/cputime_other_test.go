//go:build !linux

package tensor

func cpuSeconds() float64 { return 0 }
