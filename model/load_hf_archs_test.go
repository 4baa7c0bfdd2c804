package model

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/internal/hfwrite"
)

// TestHFArchs writes each architecture fixture as a Hugging Face directory
// (hfwrite: transformers' names, un-permuted Llama/Mixtral Q/K, Gemma
// norms as 1 + w − 1, Phi-3's gate_up, one tensor per expert) and checks
// the loaded model's hyperparameters and logits against the GGUF's.
func TestHFArchs(t *testing.T) {
	for _, name := range []string{"qwen3", "qwen3moe", "mixtral", "gemma2", "gemma3", "phi3", "smollm3", "gpt-oss"} {
		t.Run(name, func(t *testing.T) {
			g, path := archPath(t, name, "F16")
			dir := filepath.Join(t.TempDir(), name)
			if err := hfwrite.FromGGUF(path, dir); err != nil {
				t.Fatal(err)
			}
			mg := mustLoad(t, path, Options{Threads: 2})
			mh := mustLoad(t, dir, Options{Threads: 2})
			a, b := mg.Config, mh.Config
			if a.Arch != b.Arch || a.HeadDim != b.HeadDim || a.QKNorm != b.QKNorm || a.Experts != b.Experts || a.ExpertsUsed != b.ExpertsUsed ||
				a.ExpertHiddenDim != b.ExpertHiddenDim || a.SlidingWindow != b.SlidingWindow || !slices.Equal(a.SWALayers, b.SWALayers) ||
				a.RopeThetaSWA != b.RopeThetaSWA || a.attnScale() != b.attnScale() || a.AttnSoftcap != b.AttnSoftcap || a.FinalSoftcap != b.FinalSoftcap ||
				a.EmbedScale != b.EmbedScale || a.PostNorms != b.PostNorms || a.GELUGate != b.GELUGate || a.Tied != b.Tied || a.RopeDim != b.RopeDim ||
				a.NoRopeStep != b.NoRopeStep || a.AttnSinks != b.AttnSinks || a.OAIMoE != b.OAIMoE || name == "gpt-oss" && a.RopeScaling != b.RopeScaling {
				t.Errorf("configs differ:\n gguf %+v\n   hf %+v", a, b)
			}
			p := g.Prompts[0]
			toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
			lg, lh := runSeq(t, mg, toks, 0), runSeq(t, mh, toks, 0)
			// The same weight bytes in the same layout give the same
			// logits bit for bit. Only where llama.cpp permuted Q/K rows
			// to interleaved RoPE pairs (mixtral, smollm3) does the
			// checkpoint, used in place with rotate-half (NEOX) RoPE,
			// keep a different head-dimension order: the same rotated
			// values, but every q·k sums its products in another order.
			// That rounding measured at most 3.2e-5 on these prompts
			// (AVX-512 and NANOSERVE_NOAVX512=1 alike).
			if d, at := maxAbsDiff(lg, lh); mg.RopeNeox == mh.RopeNeox && d != 0 || d > 1e-4 {
				t.Errorf("Hugging Face logits differ from the GGUF's by %g at %d (RoPE NEOX: GGUF %v, HF %v)", d, at, mg.RopeNeox, mh.RopeNeox)
			}
		})
	}
}

// TestHFSmolLM3NoRopeLayers: a config.json whose RoPE-less layers are not
// llama.cpp's fixed every-4th pattern is refused, naming the field.
func TestHFSmolLM3NoRopeLayers(t *testing.T) {
	_, path := archPath(t, "smollm3", "F16")
	dir := filepath.Join(t.TempDir(), "smollm3")
	if err := hfwrite.FromGGUF(path, dir); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"no_rope_layers": []int{1, 1, 0, 1}}, "no_rope_layers[2]"},
		{map[string]any{"no_rope_layers": []int{1, 1, 1}}, "3 entries for 4 layers"},
		{map[string]any{"no_rope_layer_interval": 3}, "no_rope_layer_interval 3"},
	} {
		if err := hfwrite.SetConfig(dir, tc.fields); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir, Options{Threads: 1})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.fields, err, tc.want)
		}
		if err := hfwrite.SetConfig(dir, map[string]any{"no_rope_layers": []int{1, 1, 1, 0}, "no_rope_layer_interval": 4}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHFGptOssConfig: a gpt-oss config.json that llama.cpp would run
// differently (other windowed layers, another SwiGLU clamp) is refused by
// name.
func TestHFGptOssConfig(t *testing.T) {
	_, path := archPath(t, "gpt-oss", "F16")
	dir := filepath.Join(t.TempDir(), "gpt-oss")
	if err := hfwrite.FromGGUF(path, dir); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"layer_types": []string{"full_attention", "sliding_attention", "full_attention", "sliding_attention"}}, "layer_types[0]"},
		{map[string]any{"layer_types": []string{"sliding_attention"}}, "layer_types has 1 entries for 4 layers"},
		{map[string]any{"swiglu_limit": 5.0}, "swiglu_limit 5"},
		{map[string]any{"num_local_experts": nil}, "needs num_local_experts"},
	} {
		orig, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := hfwrite.SetConfig(dir, tc.fields); err != nil {
			t.Fatal(err)
		}
		_, err = Load(dir, Options{Threads: 1})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.fields, err, tc.want)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHFGptOssMXFP4: the original gpt-oss release's MXFP4 experts
// (*_blocks nibbles two values a byte in order, *_scales, gate and up rows
// interleaved), written by hfwrite from the MXFP4 fixture, load into the
// same ggml MXFP4 blocks: logits equal the GGUF's bit for bit.
func TestHFGptOssMXFP4(t *testing.T) {
	_, path := archPath(t, "gpt-oss", "MXFP4_MOE")
	dir := filepath.Join(t.TempDir(), "gpt-oss-mxfp4")
	if err := hfwrite.FromGGUF(path, dir); err != nil {
		t.Fatal(err)
	}
	mg := mustLoad(t, path, Options{Threads: 2})
	mh := mustLoad(t, dir, Options{Threads: 2})
	toks := []int{1, 450, 7483, 310, 3444, 338, 263, 4996, 17354, 1701, 29916, 432, 17204, 975, 278}
	lg, lh := runSeq(t, mg, toks, 0), runSeq(t, mh, toks, 0)
	if d, at := maxAbsDiff(lg, lh); d != 0 {
		t.Errorf("Hugging Face MXFP4 logits differ from the GGUF's by %g at %d", d, at)
	}
}

// TestMXFP4NibbleLayout checks mxfp4FromHF against a step-by-step port of
// llama.cpp's conversion/gpt_oss.py transform_nibble_layout (swap each
// byte's nibbles; split the block in halves a, b; spread a's nibbles into
// the high nibbles of 16 bytes and b's into the low; or them; swap again)
// on random blocks, an anchor independent of hfwrite's inverse.
func TestMXFP4NibbleLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 7))
	for range 200 {
		var src [16]byte
		for i := range src {
			src[i] = byte(rng.IntN(256))
		}
		var sw [16]byte
		for i, v := range src {
			sw[i] = v&0x0F<<4 | v&0xF0>>4
		}
		a, b := sw[:8], sw[8:]
		var blkA, blkB [16]byte
		for k := range 8 {
			blkA[2*k], blkA[2*k+1] = a[k]&0xF0, a[k]<<4
			blkB[2*k], blkB[2*k+1] = b[k]>>4, b[k]&0x0F
		}
		var want [16]byte
		for i := range want {
			o := blkA[i] | blkB[i]
			want[i] = o&0xF0>>4 | o&0x0F<<4
		}
		var got [16]byte
		mxfp4FromHF(got[:], src[:])
		if got != want {
			t.Fatalf("block %x: mxfp4FromHF %x, transform_nibble_layout %x", src, got, want)
		}
	}
}
