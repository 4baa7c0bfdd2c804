package model

import (
	"math"
	"nanoserve/tensor"
	"testing"
)

// TestRopeLayouts pins the relation llama.cpp's converter relies on: NEOX
// rotation of a head equals interleaved rotation of the head with its
// dimensions permuted (halves interleaved), mapped back.
func TestRopeLayouts(t *testing.T) {
	const hd = 8
	cfg := &Config{RopeTheta: 10000, RopeDim: hd}
	freqs := ropeFreqs(cfg, nil)
	cos, sin := make([]float32, hd/2), make([]float32, hd/2)
	ropeTable(cos, sin, freqs, 7)
	x := []float32{0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8}
	neox := append([]float32(nil), x...)
	ropeNeox(neox, cos, sin)
	perm := make([]float32, hd) // perm[2i] = x[i], perm[2i+1] = x[i+hd/2]
	for i := range hd / 2 {
		perm[2*i], perm[2*i+1] = x[i], x[i+hd/2]
	}
	ropeInterleaved(perm, cos, sin)
	for i := range hd / 2 {
		if perm[2*i] != neox[i] || perm[2*i+1] != neox[i+hd/2] {
			t.Fatalf("layouts disagree at pair %d", i)
		}
	}
	// Rotation preserves the norm.
	var a, b float64
	for i := range x {
		a += float64(x[i] * x[i])
		b += float64(neox[i] * neox[i])
	}
	if math.Abs(a-b) > 1e-6 {
		t.Errorf("norm %g -> %g", a, b)
	}
}

// TestRopeLlama3 checks Llama 3 frequency scaling: high frequencies kept,
// low ones divided by the factor, the band between interpolated.
func TestRopeLlama3(t *testing.T) {
	cfg := &Config{RopeTheta: 500000, RopeDim: 128, RopeScaling: RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigContext: 8192}}
	plain := ropeFreqs(&Config{RopeTheta: 500000, RopeDim: 128}, nil)
	got := ropeFreqs(cfg, nil)
	var kept, divided, between int
	for i := range got {
		wave := 2 * math.Pi / plain[i]
		switch {
		case wave < 8192/4:
			if got[i] != plain[i] {
				t.Errorf("pair %d: high frequency changed", i)
			}
			kept++
		case wave > 8192:
			if math.Abs(got[i]-plain[i]/8) > 1e-15 {
				t.Errorf("pair %d: low frequency %g, want %g", i, got[i], plain[i]/8)
			}
			divided++
		default:
			if !(got[i] <= plain[i] && got[i] >= plain[i]/8) {
				t.Errorf("pair %d: %g outside [%g, %g]", i, got[i], plain[i]/8, plain[i])
			}
			between++
		}
	}
	if kept == 0 || divided == 0 || between == 0 {
		t.Errorf("bands kept %d divided %d between %d", kept, divided, between)
	}
	// Explicit per-pair factors (GGUF rope_freqs) take precedence.
	f := make([]float32, 64)
	for i := range f {
		f[i] = 2
	}
	for i, v := range ropeFreqs(cfg, f) {
		if v != plain[i]/2 {
			t.Fatalf("rope_freqs pair %d: %g", i, v)
		}
	}
}

func TestNorms(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	o := make([]float32, 4)
	rmsNorm(o, x, []float32{1, 1, 1, 2}, 0)
	s := float32(1 / math.Sqrt(7.5))
	for i, want := range []float32{s, 2 * s, 3 * s, 8 * s} {
		if math.Abs(float64(o[i]-want)) > 1e-6 {
			t.Errorf("rmsNorm[%d] = %g, want %g", i, o[i], want)
		}
	}
	layerNorm(o, x, []float32{1, 1, 1, 1}, []float32{0, 0, 0, 1}, 0)
	s = float32(1 / math.Sqrt(1.25))
	for i, want := range []float32{-1.5 * s, -0.5 * s, 0.5 * s, 1.5*s + 1} {
		if math.Abs(float64(o[i]-want)) > 1e-6 {
			t.Errorf("layerNorm[%d] = %g, want %g", i, o[i], want)
		}
	}
	p := []float32{1, 2, 3}
	tensor.Softmax(p)
	if math.Abs(float64(p[0]+p[1]+p[2])-1) > 1e-6 || p[2] <= p[1] {
		t.Errorf("softmax %v", p)
	}
	if g := geluTanh(1); math.Abs(float64(g)-0.8411919906) > 1e-6 {
		t.Errorf("gelu(1) = %g", g)
	}
}
