package convert

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nanoserve/gguf"
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
			hf := filepath.Join(tmp, "hf")
			if err := hfwrite.Gemma4FromGGUF(orig, hf, vl); err != nil {
				t.Fatal(err)
			}
			if err := hfwrite.SentencePieceTokenizer(hf, testshared.Path(t, "models/llama2c/llama2-tokenizer.model"), true); err != nil {
				t.Fatal(err)
			}
			out := mustConvert(t, hf, filepath.Join(tmp, "out.gguf"), Options{})
			sameGemma4File(t, orig, out)
			toks := parityTokens(24, 32000)
			checkClose(t, "gemma4", logits(t, mustLoad(t, orig, model.Options{}), toks), logits(t, mustLoad(t, out, model.Options{}), toks), 0)
		})
	}
}

// sameGemma4File checks that out holds want's tensors (names, dims,
// types, bytes; none more) and its gemma4.* metadata values.
func sameGemma4File(t *testing.T, want, out string) {
	t.Helper()
	fw, err := gguf.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	fo, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	for _, tw := range fw.Tensors {
		to, ok := fo.Tensor(tw.Name)
		switch {
		case !ok:
			t.Errorf("tensor %s missing after conversion", tw.Name)
		case !slices.Equal(to.Dims, tw.Dims) || to.Type != tw.Type:
			t.Errorf("tensor %s: %v %s after conversion, %v %s in the fixture", tw.Name, to.Dims, to.Type, tw.Dims, tw.Type)
		case !slices.Equal(to.Data, tw.Data):
			t.Errorf("tensor %s: bytes differ", tw.Name)
		}
	}
	if len(fo.Tensors) != len(fw.Tensors) {
		t.Errorf("%d tensors after conversion, %d in the fixture", len(fo.Tensors), len(fw.Tensors))
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
