package convert

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/hfwrite"
	"nanoserve/internal/testshared"
	"nanoserve/llamacpp"
	"nanoserve/model"
	"nanoserve/tensor"
)

var archFixtures = []string{"qwen3", "qwen3moe", "mixtral", "gemma2", "gemma3", "phi3", "smollm3"}

func archFixture(t *testing.T, name string) string {
	return testshared.Path(t, "testdata/gguf-archs/"+name+"/"+name+"-F16.gguf")
}

// TestArchRoundTrip: each architecture fixture written as a Hugging Face
// directory (hfwrite) converts back to a GGUF whose logits equal the
// original GGUF's, with the same hyperparameters; Llama/Mixtral Q/K are
// permuted again, Gemma norms shifted, experts stacked into 3-D tensors.
func TestArchRoundTrip(t *testing.T) {
	for _, name := range archFixtures {
		t.Run(name, func(t *testing.T) {
			orig := archFixture(t, name)
			tmp := t.TempDir()
			hf := filepath.Join(tmp, "hf")
			if err := hfwrite.FromGGUF(orig, hf); err != nil {
				t.Fatal(err)
			}
			out := mustConvert(t, hf, filepath.Join(tmp, "out.gguf"), Options{Tokenizer: orig})
			mo, mc := mustLoad(t, orig, model.Options{}), mustLoad(t, out, model.Options{})
			a, b := mo.Config, mc.Config
			if a.Arch != b.Arch || a.HeadDim != b.HeadDim || a.Experts != b.Experts || a.ExpertsUsed != b.ExpertsUsed || a.ExpertHiddenDim != b.ExpertHiddenDim ||
				a.SlidingWindow != b.SlidingWindow || !slices.Equal(a.SWALayers, b.SWALayers) || a.RopeThetaSWA != b.RopeThetaSWA ||
				a.AttnSoftcap != b.AttnSoftcap || a.FinalSoftcap != b.FinalSoftcap || a.RopeNeox != b.RopeNeox || a.RopeDim != b.RopeDim || a.Tied != b.Tied {
				t.Errorf("configs differ:\n orig %+v\n  out %+v", a, b)
			}
			toks := parityTokens(24, 32000)
			checkClose(t, name, logits(t, mo, toks), logits(t, mc, toks), parityTol)
			// Same tensor set, each 3-D expert tensor included.
			fo, fc := openGGUF(t, orig), openGGUF(t, out)
			for _, ti := range fo.Tensors {
				tc, ok := fc.Tensor(ti.Name)
				if !ok || !slices.Equal(tc.Dims, ti.Dims) {
					t.Errorf("tensor %s: %v in the original, %v after the round trip", ti.Name, ti.Dims, tc)
				}
			}
		})
	}
}

// TestArchQuantize: --quantize q8_0 quantizes the 3-D expert tensors too
// (the F32 router stays F32; a row that is not a whole number of blocks
// falls back to F16, as Phi-3's 80-wide ffn_down does). For qwen3moe the
// tensors are byte-identical to llama-quantize's Q8_0 file in
// ../shared, and the HF → GGUF path gives the same file as GGUF → GGUF.
func TestArchQuantize(t *testing.T) {
	for _, name := range []string{"qwen3moe", "mixtral", "phi3"} {
		t.Run(name, func(t *testing.T) {
			orig := archFixture(t, name)
			tmp := t.TempDir()
			out := mustConvert(t, orig, filepath.Join(tmp, "q8.gguf"), Options{Quantize: "q8_0"})
			f, err := gguf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, ti := range f.Tensors {
				want := tensor.Q8_0
				switch {
				case len(ti.Dims) < 2 || kindOf(ti.Name) == "ffn_gate_inp":
					want = tensor.F32
				case ti.Dims[0]%32 != 0:
					want = tensor.F16
				}
				if ti.Type != want {
					t.Errorf("%s: %s, want %s", ti.Name, ti.Type, want)
				}
			}
			if name == "qwen3moe" {
				sameTensors(t, testshared.Path(t, "testdata/gguf-archs/qwen3moe/qwen3moe-Q8_0.gguf"), out)
			}
			hf := filepath.Join(tmp, "hf")
			if err := hfwrite.FromGGUF(orig, hf); err != nil {
				t.Fatal(err)
			}
			sameTensors(t, out, mustConvert(t, hf, filepath.Join(tmp, "hf-q8.gguf"), Options{Quantize: "q8_0", Tokenizer: orig}))
			toks := parityTokens(16, 32000)
			d := maxAbsDiff(logits(t, mustLoad(t, orig, model.Options{}), toks), logits(t, mustLoad(t, out, model.Options{}), toks))
			t.Logf("%s q8_0: max |Δ logit| vs F16 = %.3g", name, d)
		})
	}
}

func kindOf(name string) string {
	k, _ := llamacpp.KindOf(name)
	return k
}

// TestPhi3LongRopeConvert: a Phi-3 Hugging Face directory with longrope
// rope_scaling converts to a GGUF carrying rope_factors_long/short,
// rope.scaling.original_context_length and attn_factor (as
// conversion/phi.py writes them), whose logits equal the directory's with
// either factor set.
func TestPhi3LongRopeConvert(t *testing.T) {
	orig := archFixture(t, "phi3")
	tmp := t.TempDir()
	hf := filepath.Join(tmp, "hf")
	if err := hfwrite.FromGGUF(orig, hf); err != nil {
		t.Fatal(err)
	}
	long, short := make([]float64, 8), make([]float64, 8)
	for i := range long {
		long[i], short[i] = 1+2*float64(i), 1+0.125*float64(i)
	}
	if err := hfwrite.SetConfig(hf, map[string]any{"max_position_embeddings": 16384, "original_max_position_embeddings": 4096,
		"rope_scaling": map[string]any{"type": "longrope", "long_factor": long, "short_factor": short}}); err != nil {
		t.Fatal(err)
	}
	out := mustConvert(t, hf, filepath.Join(tmp, "out.gguf"), Options{Tokenizer: orig})
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"rope_factors_long.weight", "rope_factors_short.weight"} {
		if _, ok := f.Tensor(n); !ok {
			t.Errorf("no %s", n)
		}
	}
	if v, err := f.Uint("phi3.rope.scaling.original_context_length"); err != nil || v != 4096 {
		t.Errorf("original_context_length %d %v", v, err)
	}
	f.Close()
	toks := parityTokens(20, 32000)
	for _, ctx := range []int{4096, 16384} {
		mh := mustLoad(t, hf, model.Options{Context: ctx})
		mg := mustLoad(t, out, model.Options{Context: ctx})
		if mh.RopeAttnFactor == 0 || math.Abs(mg.RopeAttnFactor-mh.RopeAttnFactor) > 1e-6 {
			t.Errorf("attn_factor %g after conversion, %g before", mg.RopeAttnFactor, mh.RopeAttnFactor)
		}
		checkClose(t, fmt.Sprintf("phi3 longrope ctx %d (%s)", ctx, mg.RopeFactors), logits(t, mh, toks), logits(t, mg, toks), parityTol)
	}
}
