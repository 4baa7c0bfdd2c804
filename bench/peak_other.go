//go:build !amd64

package bench

import "runtime"

// peakKernels: no assembly probe on this architecture; a Go loop would
// measure the compiler, not the machine, so the peak is not reported.
func peakKernels() (fma func(*[fmaChains][8]float32, *[2][8]float32, int), i8 func(*[int8Chains][8]int32, *[3][32]byte, int), kernel string) {
	return nil, nil, "no SIMD probe on " + runtime.GOARCH
}

// peakKernelZ: no 512-bit probe off amd64.
func peakKernelZ() func(*[fmaChains][16]float32, *[2][16]float32, int) { return nil }
