package convert

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/testshared"
	"nanoserve/tensor"
)

// TestQuantizeLikeLlamaQuantize: `convert --quantize T` of the shared
// llamaq F16 model writes, for every type llama-quantize made of it
// without an importance matrix (testdata/gguf-quants), the same tensor
// types and bytes as llama-quantize's file, and the same general.file_type.
// gpt-oss's F16 file quantized mxfp4_moe holds the MXFP4 experts of the
// shared MXFP4_MOE file byte for byte; that file keeps its other matrices
// F16 (shared/README.md), where llama-quantize's mxfp4_moe recipe
// (llama_tensor_get_type_impl) makes them Q8_0, as convert does.
func TestQuantizeLikeLlamaQuantize(t *testing.T) {
	types := []string{"Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_1", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS"}
	if tensor.CanQuantize(tensor.IQ3_S) {
		types = append(types, "IQ3_S", "IQ3_M")
	}
	if testing.Short() {
		types = []string{"Q2_K", "IQ4_XS"}
	}
	src := testshared.Path(t, "testdata/gguf-quants/F16/llamaq-F16.gguf")
	tmp := t.TempDir()
	for _, q := range types {
		t.Run(q, func(t *testing.T) {
			want := testshared.Path(t, "testdata/gguf-quants/"+q+"/llamaq-"+q+".gguf")
			out := mustConvert(t, src, filepath.Join(tmp, filepath.Base(want)), Options{Quantize: strings.ToLower(q)})
			sameTensors(t, want, out)
			if a, b := fileType(t, want), fileType(t, out); a != b {
				t.Errorf("general.file_type %d, llama-quantize %d", b, a)
			}
		})
	}
	t.Run("MXFP4_MOE", func(t *testing.T) {
		dir := testshared.Path(t, "testdata/gguf-archs/gpt-oss")
		out := mustConvert(t, filepath.Join(dir, "gpt-oss-F16.gguf"), filepath.Join(tmp, "oss.gguf"), Options{Quantize: "mxfp4_moe"})
		a, err := gguf.Open(filepath.Join(dir, "gpt-oss-MXFP4_MOE.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		experts := 0
		for _, ta := range b.Tensors {
			tb, _ := a.Tensor(ta.Name)
			switch {
			case strings.Contains(ta.Name, "_exps.weight"):
				experts++
				if ta.Type != tensor.MXFP4 || tb == nil || tb.Type != tensor.MXFP4 || !bytes.Equal(ta.Data, tb.Data) {
					t.Errorf("%s: %s, not the shared file's MXFP4 bytes", ta.Name, ta.Type)
				}
			case len(ta.Dims) >= 2 && strings.HasSuffix(ta.Name, "weight") && !strings.Contains(ta.Name, "ffn_gate_inp") && ta.Type != tensor.Q8_0:
				t.Errorf("%s: %s, llama-quantize's recipe gives Q8_0", ta.Name, ta.Type)
			}
		}
		if experts == 0 {
			t.Error("no expert tensors")
		}
	})
}

func fileType(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := f.Uint("general.file_type")
	if err != nil {
		t.Fatal(err)
	}
	return v
}
