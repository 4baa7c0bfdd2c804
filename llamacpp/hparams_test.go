package llamacpp

import (
	"slices"
	"testing"
)

// TestHParamsKVs: written keys read back (through ReadSWALayers for the
// pattern); defaults are left out.
func TestHParamsKVs(t *testing.T) {
	swa := []bool{true, false, false, true}
	h := HParams{Arch: "gemma3", ContextLength: 64, EmbeddingLength: 32, BlockCount: 4, FeedForwardLength: 96, HeadCount: 4,
		HeadCountKV: 1, KeyLength: 16, RMSNormEps: 1e-6, RopeFreqBase: 1e6, RopeFreqBaseSWA: 25000, SlidingWindow: 8, SWALayers: swa,
		FinalSoftcap: 30, ExpertCount: 0}
	f := parseKVs(t, "gemma3", h.KVs())
	for k, want := range map[string]float64{KeyRopeFreqBaseSWA: 25000, KeyFinalSoftcap: 30, KeyRopeFreqBase: 1e6} {
		if v, err := f.ArchFloat(k); err != nil || v != want {
			t.Errorf("%s = %v %v, want %g", k, v, err, want)
		}
	}
	for k, want := range map[string]uint64{KeySlidingWindow: 8, KeyKeyLength: 16, KeyHeadCountKV: 1} {
		if v, err := f.ArchUint(k); err != nil || v != want {
			t.Errorf("%s = %v %v, want %d", k, v, err, want)
		}
	}
	if _, err := f.ArchUint(KeyExpertCount); err == nil {
		t.Error("expert_count written for a dense model")
	}
	if got, err := ReadSWALayers(f, 4, 6); err != nil || !slices.Equal(got, swa) {
		t.Errorf("pattern %v %v, want %v", got, err, swa)
	}
	h.SWALayers = SWALayers(4, 6) // the default is not written
	for _, kv := range h.KVs() {
		if kv.Key == "gemma3."+KeySWAPattern {
			t.Error("default pattern written")
		}
	}
}
