package model

import (
	"math"
	"testing"
	"unsafe"

	"nanoserve/internal/mmap"
	"nanoserve/internal/testshared"
	"nanoserve/tensor"
)

// TestCopyWeights: Options.CopyWeights moves every multiplied matrix into
// the anonymous arena (each matrix's bytes inside it) and the logits are
// bit for bit those of the file-mapped model, on a dense Q8_0 fixture and
// a mixture of experts (per-expert slabs).
func TestCopyWeights(t *testing.T) {
	_, moe := archPath(t, "qwen3moe", "F16")
	_, g4 := archPath(t, "gemma4", "F16")
	_, oss := archPath(t, "gpt-oss", "MXFP4_MOE")
	for _, path := range []string{testshared.Path(t, "testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf"), moe, g4, oss} {
		mapped := mustLoad(t, path, Options{Threads: 2})
		copied := mustLoad(t, path, Options{Threads: 2, CopyWeights: true})
		arena := copied.closers[len(copied.closers)-1].(*mmap.Mapping).Bytes()
		lo, hi := uintptr(unsafe.Pointer(&arena[0])), uintptr(unsafe.Pointer(&arena[0]))+uintptr(len(arena))
		inArena := func(name string, w *tensor.Mat) {
			if w == nil {
				return
			}
			p := uintptr(unsafe.Pointer(&w.Data[0]))
			if p < lo || p+uintptr(len(w.Data)) > hi {
				t.Errorf("%s: %s not in the arena", path, name)
			}
		}
		for l := range copied.w.layers {
			lw := &copied.w.layers[l]
			inArena("wqkv", lw.wqkv)
			inArena("wo", lw.wo)
			inArena("wGate", lw.wGate)
			inArena("wUp", lw.wUp)
			inArena("wDown", lw.wDown)
			inArena("plGate", lw.plGate)
			inArena("plProj", lw.plProj)
			for e := range lw.expGate {
				inArena("expGate", lw.expGate[e])
				inArena("expUp", lw.expUp[e])
				inArena("expDown", lw.expDown[e])
			}
		}
		inArena("output", copied.w.output)
		inArena("perLayerProj", copied.w.perLayerProj)
		toks := []int{1, 15, 27, 300, 42, 9, 77, 1000, 5, 6, 7, 8}
		want := runSeqKV(t, mapped, toks, 0, tensor.F16)
		got := runSeqKV(t, copied, toks, 0, tensor.F16)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: logit %d: %v copied, %v mapped", path, i, got[i], want[i])
			}
		}
	}
}
