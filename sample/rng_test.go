package sample

import "testing"

// Published reference outputs of splitmix64 (seed 0) and xoshiro256**
// (state {1, 2, 3, 4}).
func TestRNGReferenceVectors(t *testing.T) {
	x := uint64(0)
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := splitmix64(&x); got != want {
			t.Errorf("splitmix64 output %d = %#x, want %#x", i, got, want)
		}
	}
	r := rng{s: [4]uint64{1, 2, 3, 4}}
	for i, want := range []uint64{11520, 0, 1509978240, 1215971899390074240} {
		if got := r.next(); got != want {
			t.Errorf("xoshiro256** output %d = %d, want %d", i, got, want)
		}
	}
}

func TestRNGFloat64Range(t *testing.T) {
	r := newRNG(1)
	sum := 0.0
	const n = 100000
	for range n {
		u := r.float64()
		if u < 0 || u >= 1 {
			t.Fatalf("float64() = %v outside [0, 1)", u)
		}
		sum += u
	}
	if mean := sum / n; mean < 0.49 || mean > 0.51 {
		t.Errorf("mean of %d uniforms = %v", n, mean)
	}
}
