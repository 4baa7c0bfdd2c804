package convert

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/internal/archfix"
	"nanoserve/internal/hfwrite"
	"nanoserve/internal/testshared"
	"nanoserve/model"
)

// TestGemma4Convert: the gemma4 fixture written as a Hugging Face
// directory (hfwrite.Gemma4FromGGUF, both layouts) converts back to the
// fixture's tensors byte for byte — rope_freqs made from
// rope_parameters.full_attention, the shared layers' unused k/v kept, no
// norm shifted — and its gemma4.* metadata (per-kind head widths and
// rotated dims, per-layer FFN widths, window flags, shared-KV layers,
// per-layer input width, soft-cap); the converted file's logits equal the
// fixture's.
func TestGemma4Convert(t *testing.T) {
	orig := archFixture(t, "gemma4")
	for _, vl := range []bool{false, true} {
		t.Run(fmt.Sprint("vl=", vl), func(t *testing.T) {
			tmp := t.TempDir()
			hf := gemma4HF(t, orig, filepath.Join(tmp, "hf"), vl)
			out := mustConvert(t, hf, filepath.Join(tmp, "out.gguf"), Options{})
			sameGemma4File(t, orig, out, nil)
			toks := parityTokens(24, 32000)
			checkClose(t, "gemma4", logits(t, mustLoad(t, orig, model.Options{}), toks), logits(t, mustLoad(t, out, model.Options{}), toks), 0)
		})
	}
}

// TestGemma4ConvertSaved: a checkpoint as transformers saves it, without
// K/V weights in the shared-KV layers, converts to the fixture less those
// 9 tensors (llama.cpp's gemma4 graph does not require them either), with
// the same logits.
func TestGemma4ConvertSaved(t *testing.T) {
	orig := archFixture(t, "gemma4")
	tmp := t.TempDir()
	hf := gemma4HF(t, orig, filepath.Join(tmp, "hf"), false)
	sharedKV := func(name string) bool {
		for _, l := range []string{"3", "4", "5"} {
			for _, w := range []string{"k_proj", "v_proj", "k_norm"} {
				if strings.HasSuffix(name, "layers."+l+".self_attn."+w+".weight") {
					return true
				}
			}
		}
		return false
	}
	if err := hfwrite.DropTensors(hf, sharedKV); err != nil {
		t.Fatal(err)
	}
	out := mustConvert(t, hf, filepath.Join(tmp, "out.gguf"), Options{})
	skip := func(name string) bool {
		for _, l := range []string{"3", "4", "5"} {
			for _, w := range []string{"attn_k.weight", "attn_v.weight", "attn_k_norm.weight"} {
				if name == "blk."+l+"."+w {
					return true
				}
			}
		}
		return false
	}
	sameGemma4File(t, orig, out, skip)
	toks := parityTokens(24, 32000)
	checkClose(t, "gemma4 saved", logits(t, mustLoad(t, orig, model.Options{}), toks), logits(t, mustLoad(t, out, model.Options{}), toks), 0)
}

// gemma4HF writes the Gemma 4 GGUF at path as a Hugging Face directory
// with the fixture's SentencePiece vocabulary.
func gemma4HF(t *testing.T, path, dir string, vl bool) string {
	t.Helper()
	if err := hfwrite.Gemma4FromGGUF(path, dir, vl); err != nil {
		t.Fatal(err)
	}
	if err := hfwrite.SentencePieceTokenizer(dir, testshared.Path(t, "models/llama2c/llama2-tokenizer.model"), true); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sameGemma4File checks that out holds want's tensors (names, dims,
// types, bytes; none more) but those skip names (nil: none), and its
// gemma4.* metadata values.
func sameGemma4File(t *testing.T, want, out string, skip func(string) bool) {
	t.Helper()
	fw, fo := openGGUF(t, want), openGGUF(t, out)
	n := 0
	for _, tw := range fw.Tensors {
		to, ok := fo.Tensor(tw.Name)
		switch {
		case skip != nil && skip(tw.Name):
			if ok {
				t.Errorf("tensor %s written, want it absent", tw.Name)
			}
			continue
		case !ok:
			t.Errorf("tensor %s missing after conversion", tw.Name)
		case !slices.Equal(to.Dims, tw.Dims) || to.Type != tw.Type:
			t.Errorf("tensor %s: %v %s after conversion, %v %s in the fixture", tw.Name, to.Dims, to.Type, tw.Dims, tw.Type)
		case !slices.Equal(to.Data, tw.Data):
			t.Errorf("tensor %s: bytes differ", tw.Name)
		}
		n++
	}
	if len(fo.Tensors) != n {
		t.Errorf("%d tensors after conversion, %d in the fixture", len(fo.Tensors), n)
	}
	for _, kv := range fw.KV {
		if !strings.HasPrefix(kv.Key, "gemma4.") {
			continue
		}
		v, ok := fo.Get(kv.Key)
		if !ok || !v.Equal(kv.Value) {
			t.Errorf("%s = %v after conversion, %v in the fixture", kv.Key, v, kv.Value)
		}
	}
}

// TestGemma4ConvertLarger: the larger Gemma 4s' forms (archfix: the
// 26B-A4B's mixture — fused and separate expert gate/up in the GGUF, fused
// experts.gate_up_proj in the checkpoint — and the 31B's global layers
// without v_proj and their own KV head count) round-trip GGUF → Hugging
// Face → GGUF: the same logits, and every tensor byte for byte except
// the odd layers' separate expert gate and up, which the checkpoint holds
// fused as llama.cpp's converter writes them back (ffn_gate_up_exps).
func TestGemma4ConvertLarger(t *testing.T) {
	src := archFixture(t, "gemma4")
	for name, write := range map[string]func(src, dst string) error{"moe": archfix.Gemma4MoE, "k_eq_v": archfix.Gemma4KEqV} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			orig := filepath.Join(tmp, "orig.gguf")
			if err := write(src, orig); err != nil {
				t.Fatal(err)
			}
			hf := gemma4HF(t, orig, filepath.Join(tmp, "hf"), false)
			out := mustConvert(t, hf, filepath.Join(tmp, "out.gguf"), Options{})
			fo, fc := openGGUF(t, orig), openGGUF(t, out)
			for _, ti := range fo.Tensors {
				tc, ok := fc.Tensor(ti.Name)
				if strings.Contains(ti.Name, "ffn_gate_exps") || strings.Contains(ti.Name, "ffn_up_exps") {
					if ok {
						t.Errorf("%s: written separately, want it in ffn_gate_up_exps", ti.Name)
					}
					continue
				}
				if !ok || !slices.Equal(tc.Dims, ti.Dims) || tc.Type != ti.Type || !slices.Equal(tc.Data, ti.Data) {
					t.Errorf("tensor %s differs after the round trip (%v)", ti.Name, tc)
				}
			}
			for _, kv := range fo.KV {
				if v, ok := fc.Get(kv.Key); strings.HasPrefix(kv.Key, "gemma4.") && (!ok || !v.Equal(kv.Value)) {
					t.Errorf("%s = %v after conversion, %v before", kv.Key, v, kv.Value)
				}
			}
			toks := parityTokens(24, 32000)
			checkClose(t, "gemma4 "+name, logits(t, mustLoad(t, orig, model.Options{}), toks), logits(t, mustLoad(t, out, model.Options{}), toks), 0)
		})
	}
}
