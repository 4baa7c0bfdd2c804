package model

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/hfwrite"
	"nanoserve/internal/testshared"
	"nanoserve/tensor"
)

// writeLongRopePhi3 copies the phi3 fixture into dir with a trained
// context of 16384 over an original 4096, rope.scaling.attn_factor and
// rope_factors_long / rope_factors_short tensors (as convert_hf_to_gguf.py
// writes Phi-3 "longrope" checkpoints), and returns the path and factors.
func writeLongRopePhi3(t *testing.T, dir string, attn float32) (path string, long, short []float32) {
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
	return path, long, short
}

// TestPhi3LongRope: llama.cpp picks rope_factors_long when the context per
// sequence exceeds rope.scaling.original_context_length, else the short
// ones (llama_model::get_rope_factors), divides each pair's frequency
// base^(-2i/n_rot) by its factor, and multiplies cos and sin by
// rope.scaling.attn_factor. The cached forward matches ForwardRef with
// either set, and the set in use changes the logits.
func TestPhi3LongRope(t *testing.T) {
	attn := float32(1.19)
	path, long, short := writeLongRopePhi3(t, t.TempDir(), attn)
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

// TestPhi3LongRopeHF: a Phi-3 Hugging Face directory whose config.json
// has rope_scaling {"type": "longrope", long_factor, short_factor} gives
// the logits of the GGUF file llama.cpp's converter would write from it
// (rope_factors_long/short tensors, attn_factor √(1 + ln(s)/ln(orig)) for
// s = 16384/4096, a float32 there), with either set chosen by the
// configured context: bit for bit, the weights being the same bytes.
func TestPhi3LongRopeHF(t *testing.T) {
	dir := t.TempDir()
	attn := float32(math.Sqrt(1 + math.Log(4)/math.Log(4096)))
	path, long, short := writeLongRopePhi3(t, dir, attn)
	hf := filepath.Join(dir, "hf")
	if err := hfwrite.FromGGUF(testshared.Path(t, "testdata/gguf-archs/phi3/phi3-F16.gguf"), hf); err != nil {
		t.Fatal(err)
	}
	if err := hfwrite.SetConfig(hf, map[string]any{"max_position_embeddings": 16384, "original_max_position_embeddings": 4096,
		"rope_scaling": map[string]any{"type": "longrope", "long_factor": long, "short_factor": short}}); err != nil {
		t.Fatal(err)
	}
	toks := []int{1, 450, 7483, 310, 3444, 338, 263, 4996, 17354, 1701, 29916, 432}
	for _, ctx := range []int{4096, 8192} {
		mg := mustLoad(t, path, Options{Context: ctx})
		mh := mustLoad(t, hf, Options{Context: ctx})
		if mh.RopeAttnFactor != float64(attn) {
			t.Errorf("attn_factor %g, want %g (the GGUF's float32)", mh.RopeAttnFactor, attn)
		}
		if lg, lh := runSeq(t, mg, toks, 0), runSeq(t, mh, toks, 0); !slices.Equal(lg, lh) {
			d, at := maxAbsDiff(lg, lh)
			t.Errorf("context %d (%s vs %s): logits differ by %g at %d", ctx, mg.RopeFactors, mh.RopeFactors, d, at)
		}
	}
}
