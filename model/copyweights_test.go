package model

import (
	"errors"
	"math"
	"testing"
	"unsafe"

	"nanoserve/internal/mmap"
	"nanoserve/internal/testshared"
	"nanoserve/tensor"
)

// TestCopyWeights: Options.CopyWeights moves every multiplied matrix into
// the anonymous arena (each matrix's bytes inside it; those the kernels
// repack, gpt-oss's MXFP4 experts, stay mapped: their packed copies are
// what MatMul reads) and the logits are
// bit for bit those of the file-mapped model (Options.MapWeights) and of
// the default placement, on dense Q8_0 (repacked on AVX2: no arena at
// all) and F16 fixtures and mixtures of experts (per-expert slabs).
func TestCopyWeights(t *testing.T) {
	_, moe := archPath(t, "qwen3moe", "F16")
	_, g4 := archPath(t, "gemma4", "F16")
	_, oss := archPath(t, "gpt-oss", "MXFP4_MOE")
	defer func(v int64) { hugeMin = v }(hugeMin)
	hugeMin = 0 // place the small fixtures as a large model
	for _, path := range []string{testshared.Path(t, "testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf"), testshared.Path(t, "testdata/gguf/llama_gqa/llama_gqa-F16.gguf"), moe, g4, oss} {
		mapped := mustLoad(t, path, Options{Threads: 2, MapWeights: true})
		copied := mustLoad(t, path, Options{Threads: 2, CopyWeights: true})
		auto := mustLoad(t, path, Options{Threads: 2})
		if p := mapped.WeightMemory().Placement; p != PlacementMapped {
			t.Errorf("%s: MapWeights placed the weights %q", path, p)
		}
		wm := copied.WeightMemory()
		if wm.Placement != PlacementCopied || wm.Copied+wm.Repacked < wm.Matrices {
			t.Errorf("%s: CopyWeights: %+v", path, wm)
		}
		var lo, hi uintptr // no arena: every matrix repacked
		if copied.arena != nil {
			arena := copied.arena.Bytes()
			lo, hi = uintptr(unsafe.Pointer(&arena[0])), uintptr(unsafe.Pointer(&arena[0]))+uintptr(len(arena))
		}
		inArena := func(name string, w *tensor.Mat) {
			if w == nil || w.Repacked() {
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
			if lw.wqkv != nil {
				inArena("wq", lw.wq) // views of wqkv follow it
			}
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
		for name, m := range map[string]*Model{"copied": copied, "default (" + auto.WeightMemory().Placement + ")": auto} {
			got := runSeqKV(t, m, toks, 0, tensor.F16)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: logit %d: %v %s, %v mapped", path, i, got[i], name, want[i])
				}
			}
		}
	}
}

// TestPlaceWeightsRefused: when the kernel refuses the huge-page advice
// and then the memory for a copy, the default placement falls back to the
// plain mapping — the load succeeds, says why, and computes the same
// logits — while an explicit --no-mmap (CopyWeights) fails with the error.
func TestPlaceWeightsRefused(t *testing.T) {
	// (F16: kept in the file's encoding on every host, so the copy is
	// needed; Q8_0 and Q4_0 are repacked on AVX2.)
	path := testshared.Path(t, "testdata/gguf/llama_gqa/llama_gqa-F16.gguf")
	defer func(v int64, h func(*mmap.Mapping, bool) (mmap.Residency, error), a func(int) (*mmap.Mapping, error)) {
		hugeMin, fileHuge, anonMem = v, h, a
	}(hugeMin, fileHuge, anonMem)
	hugeMin = 0
	refused := errors.New("refused")
	fileHuge = func(mp *mmap.Mapping, _ bool) (mmap.Residency, error) { return mp.Residency(), refused }
	anonMem = func(int) (*mmap.Mapping, error) { return nil, refused }
	mapped := mustLoad(t, path, Options{Threads: 2, MapWeights: true})
	auto := mustLoad(t, path, Options{Threads: 2})
	wm := auto.WeightMemory()
	if wm.Placement != PlacementMapped || wm.Copied != 0 || wm.Why == "" {
		t.Errorf("refused huge pages and copy: %+v, want the plain mapping and why", wm)
	}
	toks := []int{1, 15, 27, 300}
	want, got := runSeqKV(t, mapped, toks, 0, tensor.F16), runSeqKV(t, auto, toks, 0, tensor.F16)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d: %v after the fallback, %v mapped", i, got[i], want[i])
		}
	}
	if m, err := Load(path, Options{Threads: 2, CopyWeights: true}); err == nil || !errors.Is(err, refused) {
		if m != nil {
			m.Close()
		}
		t.Errorf("CopyWeights with the memory refused: err %v, want it", err)
	}
	if _, err := Load(path, Options{MapWeights: true, CopyWeights: true}); err == nil {
		t.Error("MapWeights and CopyWeights together: no error")
	}
}
