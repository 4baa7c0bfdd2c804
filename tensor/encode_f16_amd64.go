package tensor

// hasEncF16: encF16SIMD exists and may run (AVX2 + F16C, part of hasSIMD).
// A variable so tests can flip it off to run the Go loop.
var hasEncF16 = hasSIMD

// encF16SIMD encodes n float32 values (n a positive multiple of 8) at src
// to F16 at dst, F32ToF16's bits (encode_f16_amd64.s).
//
//go:noescape
func encF16SIMD(dst *byte, src *float32, n int)
