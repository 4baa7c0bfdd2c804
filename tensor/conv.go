package tensor

// CausalConv4 runs one token's depthwise causal convolution of width 4
// over n = len(out) channels (Qwen3.5's delta-net layers): for channel c,
//
//	out[c] = ((0 + s0[c]·k[c][0]) + s1[c]·k[c][1]) + s2[c]·k[c][2]) + x[c]·k[c][3]
//
// each product rounded to float32 before its add (no fused multiply-add),
// summed in tap order as ggml_ssm_conv does, where s0, s1, s2 are the
// channel's three previous inputs, oldest first, and kernel is (n, 4):
// channel c's taps at kernel[4c:4c+4], the last multiplying x. Then the
// window moves on: s0 ← s1, s1 ← s2, s2 ← x. x, s0, s1 and s2 hold at
// least n values, kernel 4n; out must not overlap them.
//
// On amd64 with AVX2 eight channels go at a time, their taps transposed
// in registers (TestCausalConv4: bit for bit the Go loop). A form that
// kept a group's window in registers across a run of tokens measured
// slower inside Qwen3.5-0.8B's prefill (perf share 1.0% -> 1.9%): its
// tokens' columns, a whole row of the layer's channels apart, map to the
// same L1 sets.
func CausalConv4(out, x, s0, s1, s2, kernel []float32) {
	n := len(out)
	if n == 0 {
		return
	}
	_, _, _, _, _ = x[n-1], s0[n-1], s1[n-1], s2[n-1], kernel[4*n-1]
	i := 0
	if hasSIMD {
		i = causalConv4SIMD(out, x, s0, s1, s2, kernel)
	}
	if i < n {
		causalConv4Go(out[i:n], x[i:n], s0[i:n], s1[i:n], s2[i:n], kernel[4*i:4*n])
	}
}

// causalConv4Go is CausalConv4 in Go, channel by channel; the
// conversions keep each product rounded on its own (the Go spec lets a
// compiler fuse x*y + z otherwise).
func causalConv4Go(out, x, s0, s1, s2, kernel []float32) {
	_, _, _, _, _ = x[len(out)-1], s0[len(out)-1], s1[len(out)-1], s2[len(out)-1], kernel[4*len(out)-1]
	for c := range out {
		k := kernel[4*c : 4*c+4 : 4*c+4]
		var s float32
		s += float32(s0[c] * k[0])
		s += float32(s1[c] * k[1])
		s += float32(s2[c] * k[2])
		s += float32(x[c] * k[3])
		out[c] = s
		s0[c], s1[c], s2[c] = s1[c], s2[c], x[c]
	}
}
