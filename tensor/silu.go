package tensor

// onesSiLU is the "up" operand that turns SwiGLU into SiLU: gate·1 is
// gate exactly, so SwiGLU(x, 1) = x / (1 + e^-x) in both the vector
// kernel and the Go tail.
var onesSiLU = func() []float32 {
	o := make([]float32, 256)
	for i := range o {
		o[i] = 1
	}
	return o
}()

// SiLUs sets x[i] = silu(x[i]) = x[i] / (1 + e^-x[i]) with the float32
// exponential of SwiGLU (expf, 8 lanes at a time where the CPU has
// AVX2+FMA). Which elements take the vector path depends on len(x) only,
// so a caller that always passes the same spans gets the same bits
// whatever else it computes.
func SiLUs(x []float32) {
	for len(x) > 0 {
		n := min(len(x), len(onesSiLU))
		SwiGLU(x[:n], onesSiLU[:n])
		x = x[n:]
	}
}
