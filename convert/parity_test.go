package convert

import (
	"math"
	"path/filepath"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/tinyhf"
	"nanoserve/model"
)

// parityTokens is a token sequence within every tiny model's vocabulary and
// context.
func parityTokens(n, vocab int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i*131 + 7) % vocab
	}
	return out
}

const parityTol = 1e-4

func checkClose(t *testing.T, what string, a, b []float32, tol float64) {
	t.Helper()
	d := maxAbsDiff(a, b)
	t.Logf("%s: max |Δ logit| = %.3g", what, d)
	if d > tol {
		t.Errorf("%s: logits differ by %g > %g", what, d, tol)
	}
}

// Format parity: the same seeded weights as a Hugging Face directory, as
// the GGUF convert writes from it, as a llama2.c checkpoint (Llama), and as
// the GGUF convert writes from that, give the same logits. The generator
// writes each format's layout itself (Llama Q/K rows in halves order for
// HF, interleaved for llama2.c; GPT-2 Conv1D transposed), so a wrong RoPE
// permutation or a missing transpose in convert shows up as a mismatch.
func TestFormatParity(t *testing.T) {
	for _, spec := range []tinyhf.Spec{tinyhf.LlamaSpec(), tinyhf.Qwen2Spec(), tinyhf.GPT2Spec()} {
		t.Run(spec.Arch, func(t *testing.T) {
			tmp := t.TempDir()
			hf := filepath.Join(tmp, "hf")
			w, err := tinyhf.Generate(spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.WriteHF(hf); err != nil {
				t.Fatal(err)
			}
			tokens := parityTokens(min(spec.Ctx, 40), tinyhf.TokenizerSize())
			mHF := mustLoad(t, hf, model.Options{})
			ref := logits(t, mHF, tokens)

			g := mustConvert(t, hf, filepath.Join(tmp, "hf.gguf"), Options{})
			mG := mustLoad(t, g, model.Options{})
			if mG.Arch != mHF.Arch || mG.Vocab != mHF.Vocab || mG.Tied != mHF.Tied || mG.RopeNeox != mHF.RopeNeox && spec.Arch != tinyhf.Llama {
				t.Errorf("GGUF config %+v differs from HF %+v", mG.Config, mHF.Config)
			}
			checkClose(t, "HF vs GGUF(HF)", ref, logits(t, mG, tokens), parityTol)

			// F16 conversion is exact too (the generator's values are F16-exact).
			g16 := mustConvert(t, hf, filepath.Join(tmp, "hf16.gguf"), Options{Type: "f16"})
			checkClose(t, "HF vs GGUF(HF, f16)", ref, logits(t, mustLoad(t, g16, model.Options{}), tokens), parityTol)

			if spec.Arch == tinyhf.Llama {
				l2c := filepath.Join(tmp, "model.bin")
				if err := w.WriteLlama2C(l2c); err != nil {
					t.Fatal(err)
				}
				checkClose(t, "HF vs llama2.c", ref, logits(t, mustLoad(t, l2c, model.Options{}), tokens), parityTol)
				gl := mustConvert(t, l2c, filepath.Join(tmp, "l2c.gguf"), Options{Tokenizer: hf})
				checkClose(t, "HF vs GGUF(llama2.c)", ref, logits(t, mustLoad(t, gl, model.Options{}), tokens), parityTol)
				// Both conversions hold the same tensors (the tokenizer differs
				// only in its source).
				sameTensors(t, g, gl)
			}

			// The converted tokenizer encodes like the source's.
			text := "the cat sat on the mat, and then it went out."
			if a, b := mHF.Tokenizer.Encode(text, false), mG.Tokenizer.Encode(text, false); !equalInts(a, b) {
				t.Errorf("tokenizers differ: HF %v, GGUF %v", a, b)
			}
		})
	}
}

// The parity test has teeth: a Llama converted without the Q/K
// permutation (as if convert treated it like Qwen2) gives different logits.
func TestFormatParityCatchesUnpermutedQK(t *testing.T) {
	tmp := t.TempDir()
	hf := filepath.Join(tmp, "hf")
	if err := tinyhf.Write(hf, tinyhf.LlamaSpec()); err != nil {
		t.Fatal(err)
	}
	tokens := parityTokens(20, tinyhf.TokenizerSize())
	ref := logits(t, mustLoad(t, hf, model.Options{}), tokens)

	src, err := openSource(hf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.close()
	n := 0
	for _, ts := range src.tensors {
		if ts.perm != nil {
			ts.perm = nil
			n++
		}
	}
	if n != 2*tinyhf.LlamaSpec().Layers {
		t.Fatalf("%d permuted tensors, want Q and K of every layer", n)
	}
	p, _ := newPlan(Options{})
	w, err := p.build(src)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "bad.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	d := maxAbsDiff(ref, logits(t, mustLoad(t, out, model.Options{}), tokens))
	var scale float64
	for _, v := range ref {
		scale = max(scale, math.Abs(float64(v)))
	}
	t.Logf("unpermuted Q/K: max |Δ logit| = %.3g (max |logit| %.3g)", d, scale)
	if d < 1e-2 {
		t.Errorf("unpermuted Q/K changed logits by only %g", d)
	}
}

// Cache parity on the generated Qwen2 and GPT-2, in both formats: decoding
// one token at a time through the KV cache, a single batched prefill and
// the full-recompute reference give the same logits.
func TestCacheParity(t *testing.T) {
	for _, spec := range []tinyhf.Spec{tinyhf.Qwen2Spec(), tinyhf.GPT2Spec()} {
		t.Run(spec.Arch, func(t *testing.T) {
			tmp := t.TempDir()
			hf := filepath.Join(tmp, "hf")
			if err := tinyhf.Write(hf, spec); err != nil {
				t.Fatal(err)
			}
			g := mustConvert(t, hf, filepath.Join(tmp, "m.gguf"), Options{})
			tokens := parityTokens(min(spec.Ctx, 33), tinyhf.TokenizerSize())
			for _, path := range []string{hf, g} {
				m := mustLoad(t, path, model.Options{Threads: 2})
				ref, err := m.ForwardRef(tokens)
				if err != nil {
					t.Fatal(err)
				}
				name := filepath.Base(path)
				checkClose(t, name+": cached decode vs reference", ref, decodeLogits(t, m, tokens), parityTol)
				checkClose(t, name+": prefill vs reference", ref, logits(t, m, tokens), parityTol)
			}
		})
	}
}

// The generated GGUF metadata follows llama.cpp's conventions.
func TestMetadataConventions(t *testing.T) {
	tmp := t.TempDir()
	for _, spec := range []tinyhf.Spec{tinyhf.LlamaSpec(), tinyhf.Qwen2Spec(), tinyhf.GPT2Spec()} {
		hf := filepath.Join(tmp, spec.Arch)
		if err := tinyhf.Write(hf, spec); err != nil {
			t.Fatal(err)
		}
		out := mustConvert(t, hf, filepath.Join(tmp, spec.Arch+".gguf"), Options{Quantize: "q8_0", Name: "tiny " + spec.Arch})
		f, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		a := spec.Arch
		wantU := map[string]uint64{
			"general.file_type": 7, "general.quantization_version": 2,
			a + ".embedding_length": uint64(spec.Dim), a + ".block_count": uint64(spec.Layers),
			a + ".feed_forward_length": uint64(spec.Hidden), a + ".attention.head_count": uint64(spec.Heads),
			a + ".attention.head_count_kv": uint64(spec.KVHeads), a + ".context_length": uint64(spec.Ctx),
			a + ".vocab_size": uint64(spec.Vocab),
		}
		for k, want := range wantU {
			if got, err := f.Uint(k); err != nil || got != want {
				t.Errorf("%s: %s = %d (%v), want %d", a, k, got, err, want)
			}
		}
		if s, _ := f.String("general.name"); s != "tiny "+a {
			t.Errorf("%s: general.name %q", a, s)
		}
		epsKey := a + ".attention.layer_norm_rms_epsilon"
		if a == tinyhf.GPT2 {
			epsKey = a + ".attention.layer_norm_epsilon"
		}
		if v, err := f.Float(epsKey); err != nil || float32(v) != float32(spec.NormEps) {
			t.Errorf("%s: %s = %g (%v)", a, epsKey, v, err)
		}
		toks, err := f.Strings("tokenizer.ggml.tokens")
		if err != nil || len(toks) != spec.Vocab {
			t.Errorf("%s: %d tokens (%v), want %d (padded)", a, len(toks), err, spec.Vocab)
		}
		if pre, _ := f.String("tokenizer.ggml.pre"); pre != "gpt-2" {
			t.Errorf("%s: tokenizer.ggml.pre %q, want gpt-2", a, pre)
		}
		for _, ti := range f.Tensors {
			if len(ti.Dims) == 1 && ti.Type != 0 {
				t.Errorf("%s: 1-D tensor %s is %s, want F32", a, ti.Name, ti.Type)
			}
			if ti.Name == "position_embd.weight" && ti.Type != 0 {
				t.Errorf("%s: position_embd quantized to %s", a, ti.Type)
			}
		}
		if _, ok := f.Tensor("output.weight"); ok == spec.Tied {
			t.Errorf("%s: output.weight present = %v with tied = %v", a, ok, spec.Tied)
		}
		f.Close()
		mustLoad(t, out, model.Options{}) // loads and validates
	}
}
