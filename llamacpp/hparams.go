package llamacpp

import (
	"fmt"
	"slices"

	"nanoserve/gguf"
)

// HParams are the "<arch>." hyperparameters llama.cpp reads
// (llama_model::load_hparams and each architecture's load_arch_hparams);
// KVs writes them under the keys gguf-py's GGUFWriter uses. Zero values
// are not written (llama.cpp's defaults apply), except where noted.
type HParams struct {
	Arch string

	ContextLength     int
	EmbeddingLength   int
	BlockCount        int
	FeedForwardLength int
	HeadCount         int
	HeadCountKV       int
	KeyLength         int // head dim when ≠ embedding_length/head_count (key_length and value_length)
	VocabSize         int

	RMSNormEps   float64 // attention.layer_norm_rms_epsilon (all but gpt2)
	LayerNormEps float64 // attention.layer_norm_epsilon (gpt2)

	RopeFreqBase      float64
	RopeDim           int     // rope.dimension_count
	RopeScalingType   string  // "linear" writes rope.scaling.type and factor
	RopeScalingFactor float64 //
	RopeOrigContext   int     // rope.scaling.original_context_length
	RopeAttnFactor    float64 // rope.scaling.attn_factor
	RopeFreqBaseSWA   float64 // rope.freq_base_swa

	SlidingWindow int    // attention.sliding_window (phi3 writes 0 too, as its converter does)
	SWALayers     []bool // attention.sliding_window_pattern as per-layer flags, when not the architecture's default pattern
	AttnSoftcap   float64
	FinalSoftcap  float64

	ExpertCount     int
	ExpertUsedCount int
	ExpertFFLength  int // expert_feed_forward_length (qwen3moe)

	// Gemma 4 (conversion/gemma.py Gemma4Model.set_gguf_parameters): the
	// windowed layers' head width and rotated dims (key_length_swa,
	// value_length_swa, rope.dimension_count_swa; RopeDim is written too),
	// the shared-KV layers, the per-layer input width, one feed-forward
	// width per layer (FFNLengths, when not all equal) and one KV head
	// count per layer (HeadCountKVs, when the kinds differ); the windowed
	// layers are always written as per-layer flags.
	KeyLengthSWA   int
	RopeDimSWA     int
	SharedKVLayers int
	PerLayerInput  int
	FFNLengths     []int
	HeadCountKVs   []int
}

// KVs returns the metadata entries, keys prefixed by the architecture.
func (h HParams) KVs() []gguf.KV {
	var kvs []gguf.KV
	a := h.Arch + "."
	u32 := func(k string, v int) { kvs = append(kvs, gguf.KV{Key: a + k, Value: gguf.Uint32(uint32(v))}) }
	f32 := func(k string, v float64) { kvs = append(kvs, gguf.KV{Key: a + k, Value: gguf.Float32(float32(v))}) }
	nz := func(k string, v int) {
		if v != 0 {
			u32(k, v)
		}
	}
	nzf := func(k string, v float64) {
		if v != 0 {
			f32(k, v)
		}
	}
	u32(KeyContextLength, h.ContextLength)
	u32(KeyEmbeddingLength, h.EmbeddingLength)
	u32(KeyBlockCount, h.BlockCount)
	if h.FFNLengths != nil {
		kvs = append(kvs, gguf.KV{Key: a + KeyFeedForwardLength, Value: gguf.NewArray(int32s(h.FFNLengths))})
	} else {
		u32(KeyFeedForwardLength, h.FeedForwardLength)
	}
	u32(KeyHeadCount, h.HeadCount)
	if h.HeadCountKVs != nil {
		kvs = append(kvs, gguf.KV{Key: a + KeyHeadCountKV, Value: gguf.NewArray(int32s(h.HeadCountKVs))})
	} else {
		nz(KeyHeadCountKV, h.HeadCountKV)
	}
	gemma4 := h.Arch == "gemma4"
	if h.KeyLength != 0 && (gemma4 || h.HeadCount == 0 || h.KeyLength != h.EmbeddingLength/h.HeadCount || h.EmbeddingLength%h.HeadCount != 0) {
		u32(KeyKeyLength, h.KeyLength)
		u32(KeyValueLength, h.KeyLength)
	}
	nzf(KeyLayerNormEps, h.LayerNormEps)
	nzf(KeyRMSNormEps, h.RMSNormEps)
	nzf(KeyRopeFreqBase, h.RopeFreqBase)
	if gemma4 {
		u32(KeyKeyLengthSWA, h.KeyLengthSWA)
		u32(KeyValueLengthSWA, h.KeyLengthSWA)
	}
	nz(KeyRopeDim, h.RopeDim)
	if gemma4 {
		u32(KeyRopeDimSWA, h.RopeDimSWA)
	}
	nz("vocab_size", h.VocabSize)
	if h.RopeScalingType == "linear" {
		kvs = append(kvs, gguf.KV{Key: a + KeyRopeScalingType, Value: gguf.String("linear")})
		f32(KeyRopeScalingFactor, h.RopeScalingFactor)
	}
	nz(KeyRopeOrigContext, h.RopeOrigContext)
	nzf(KeyRopeAttnFactor, h.RopeAttnFactor)
	nzf(KeyRopeFreqBaseSWA, h.RopeFreqBaseSWA)
	if h.SlidingWindow != 0 || h.Arch == "phi3" {
		u32(KeySlidingWindow, h.SlidingWindow)
	}
	if gemma4 {
		u32(KeySharedKVLayers, h.SharedKVLayers)
		u32(KeyPerLayerInput, h.PerLayerInput)
	}
	if h.SWALayers != nil {
		if ar, ok := Archs[h.Arch]; gemma4 || !ok || !slices.Equal(h.SWALayers, SWALayers(len(h.SWALayers), ar.SWAPattern)) {
			kvs = append(kvs, gguf.KV{Key: a + KeySWAPattern, Value: gguf.NewArray(h.SWALayers)})
		}
	}
	nzf(KeyAttnSoftcap, h.AttnSoftcap)
	nzf(KeyFinalSoftcap, h.FinalSoftcap)
	nz(KeyExpertCount, h.ExpertCount)
	nz(KeyExpertUsedCount, h.ExpertUsedCount)
	nz(KeyExpertFFLength, h.ExpertFFLength)
	return kvs
}

func int32s(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// ReadSWALayers reads "<arch>.attention.sliding_window_pattern" as
// llama_model_base::load_swa_pattern does: an array of per-layer flags, or
// a period n (layer il windowed when il % n < n-1); absent: period def.
func ReadSWALayers(f *gguf.File, layers, def int) ([]bool, error) {
	key := f.Arch() + "." + KeySWAPattern
	v, ok := f.Get(key)
	if !ok {
		return SWALayers(layers, def), nil
	}
	if a, ok := v.Array(); ok {
		if a.Len() != layers {
			return nil, fmt.Errorf("%s has %d entries for %d layers", key, a.Len(), layers)
		}
		out := make([]bool, layers)
		for i := range out {
			b, ok := a.Index(i).Bool()
			if !ok {
				u, ok := a.Index(i).Uint()
				if !ok {
					return nil, fmt.Errorf("%s[%d] is not a flag", key, i)
				}
				b = u != 0
			}
			out[i] = b
		}
		return out, nil
	}
	n, ok := v.Uint()
	if !ok || n > 1<<16 {
		return nil, fmt.Errorf("%s is neither a period nor per-layer flags", key)
	}
	return SWALayers(layers, int(n)), nil
}
