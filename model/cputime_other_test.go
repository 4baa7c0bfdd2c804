//go:build !unix

package model

func cpuSeconds() float64 { return 0 }
