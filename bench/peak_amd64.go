package bench

import "golang.org/x/sys/cpu"

// hasPeakSIMD: the probes need AVX2 (VPMADDUBSW/VPMADDWD on ymm) and FMA,
// as tensor's fast kernels do.
var hasPeakSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func fmaAVX2(acc *[fmaChains][8]float32, ab *[2][8]float32, n int)

//go:noescape
func int8AVX2(acc *[int8Chains][8]int32, us *[3][32]byte, n int)

// peakKernels returns the assembly probes, or why there are none.
func peakKernels() (fma func(*[fmaChains][8]float32, *[2][8]float32, int), i8 func(*[int8Chains][8]int32, *[3][32]byte, int), kernel string) {
	if !hasPeakSIMD {
		return nil, nil, "no SIMD probe (CPU lacks AVX2/FMA)"
	}
	return fmaAVX2, int8AVX2, "avx2: VFMADD231PS; VPMADDUBSW+VPMADDWD+VPADDD"
}
