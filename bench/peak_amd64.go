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

// hasPeakAVX512: the zmm FMA probe needs AVX-512F (x/sys/cpu checks that the
// OS saves the ZMM state).
var hasPeakAVX512 = hasPeakSIMD && cpu.X86.HasAVX512F

//go:noescape
func fmaAVX512(acc *[fmaChains][16]float32, ab *[2][16]float32, n int)

// peakKernelZ returns the 512-bit FMA probe where the CPU has AVX-512F
// (tensor's float kernels then run on zmm), else nil.
func peakKernelZ() func(*[fmaChains][16]float32, *[2][16]float32, int) {
	if !hasPeakAVX512 {
		return nil
	}
	return fmaAVX512
}
