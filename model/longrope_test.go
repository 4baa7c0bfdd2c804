package model

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/testshared"
	"nanoserve/tensor"
)

// writeLongRopePhi3 copies the phi3 fixture into dir with a trained
// context of 16384 over an original 4096, rope.scaling.attn_factor and
// rope_factors_long / rope_factors_short tensors (as convert_hf_to_gguf.py
// writes Phi-3 "longrope" checkpoints), and returns the path and factors.
func writeLongRopePhi3(t *testing.T, dir string) (path string, long, short []float32, attn float32) {
	t.Helper()
	src, err := gguf.Open(testshared.Path(t, "testdata/gguf-archs/phi3/phi3-F16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	half := 8 // rope.dimension_count 16
	for i := range half {
		long = append(long, 1+3*float32(i)) // strong stretching of the slow pairs
		short = append(short, 1+0.25*float32(i))
	}
	attn = 1.19
	w := gguf.NewWriter()
	for _, kv := range src.KV {
		if kv.Key == "phi3.context_length" {
			kv.Value = gguf.Uint32(16384)
		}
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddKV("phi3.rope.scaling.attn_factor", gguf.Float32(attn)); err != nil {
		t.Fatal(err)
	}
	for _, ti := range src.Tensors {
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data); err != nil {
			t.Fatal(err)
		}
	}
	for name, v := range map[string][]float32{"rope_factors_long.weight": long, "rope_factors_short.weight": short} {
		if err := w.AddTensor(name, tensor.F32, []uint64{uint64(half)}, tensor.F32Bytes(v)); err != nil {
			t.Fatal(err)
		}
	}
	path = filepath.Join(dir, "phi3-longrope.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path, long, short, attn
}

// TestPhi3LongRope: llama.cpp picks rope_factors_long when the context per
// sequence exceeds rope.scaling.original_context_length, else the short
// ones (llama_model::get_rope_factors), divides each pair's frequency
// base^(-2i/n_rot) by its factor, and multiplies cos and sin by
// rope.scaling.attn_factor. The cached forward matches ForwardRef with
// either set, and the set in use changes the logits.
func TestPhi3LongRope(t *testing.T) {
	path, long, short, attn := writeLongRopePhi3(t, t.TempDir())
	toks := []int{1, 450, 7483, 310, 3444, 338, 263, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29889}
	var outs [][]float32
	for _, tc := range []struct {
		ctx     int
		want    string
		factors []float32
	}{
		{4096, "rope_factors_short.weight", short},
		{4097, "rope_factors_long.weight", long},
		{0, "rope_factors_long.weight", long}, // the trained 16384
	} {
		m := mustLoad(t, path, Options{Threads: 2, Context: tc.ctx})
		if m.RopeFactors != tc.want || m.RopeAttnFactor != float64(attn) {
			t.Fatalf("context %d: factors %q attn_factor %g, want %q %g", tc.ctx, m.RopeFactors, m.RopeAttnFactor, tc.want, attn)
		}
		for i, f := range m.invFreq {
			want := math.Pow(m.RopeTheta, -float64(2*i)/float64(m.RopeDim)) / float64(tc.factors[i])
			if math.Abs(f-want) > 1e-12*want {
				t.Fatalf("context %d: pair %d frequency %g, want %g", tc.ctx, i, f, want)
			}
		}
		checkCacheParity(t, m, toks, 1e-4)
		outs = append(outs, runSeq(t, m, toks, 0))
	}
	plain := runSeq(t, mustLoad(t, testshared.Path(t, "testdata/gguf-archs/phi3/phi3-F16.gguf"), Options{}), toks, 0)
	if d, _ := maxAbsDiff(outs[0], outs[1]); d < 1e-3 {
		t.Errorf("long and short factors give the same logits (%g)", d)
	}
	if d, _ := maxAbsDiff(outs[0], plain); d < 1e-3 {
		t.Errorf("short factors and attn_factor change nothing (%g)", d)
	}
	if !slices.Equal(outs[1], outs[2]) {
		t.Errorf("default context did not pick the long factors")
	}
}
