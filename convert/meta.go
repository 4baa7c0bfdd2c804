package convert

import (
	"fmt"
	"math"
	"slices"

	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/model"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

const quantizationVersion = 2 // GGML_QNT_VERSION

// ggufMeta copies a GGUF source's metadata, updating general.file_type and
// general.quantization_version (and replacing the tokenizer when one was
// given).
func (p *plan) ggufMeta(src *source, types map[string]tensor.DType) ([]gguf.KV, error) {
	var srcID uint32
	have := false
	for _, kv := range src.kv {
		if kv.Key == "general.file_type" {
			if v, ok := kv.Value.Uint(); ok {
				srcID, have = uint32(v), true
			}
		}
	}
	ft := p.fileTypeID(types, src.tensors, srcID, have)
	var out []gguf.KV
	seenFT, seenQV := false, false
	for _, kv := range src.kv {
		switch {
		case kv.Key == "general.file_type":
			kv.Value, seenFT = gguf.Uint32(ft), true
		case kv.Key == "general.quantization_version":
			seenQV = true
		case kv.Key == "general.name" && p.opts.Name != "":
			kv.Value = gguf.String(p.opts.Name)
		case src.m != nil && isTokenizerKey(kv.Key):
			continue
		}
		out = append(out, kv)
	}
	if p.opts.Name != "" && !hasKey(out, "general.name") {
		out = insertAfterArch(out, gguf.KV{Key: "general.name", Value: gguf.String(p.opts.Name)})
	}
	if !seenFT {
		out = insertAfterArch(out, gguf.KV{Key: "general.file_type", Value: gguf.Uint32(ft)})
	}
	if !seenQV && p.quant != nil {
		out = insertAfterArch(out, gguf.KV{Key: "general.quantization_version", Value: gguf.Uint32(quantizationVersion)})
	}
	if src.m != nil {
		tk, err := tokenizerMeta(src.m)
		if err != nil {
			return nil, err
		}
		out = append(out, tk...)
	}
	return out, nil
}

func isTokenizerKey(k string) bool {
	return len(k) > len("tokenizer.") && k[:len("tokenizer.")] == "tokenizer."
}

func hasKey(kvs []gguf.KV, key string) bool {
	return slices.ContainsFunc(kvs, func(kv gguf.KV) bool { return kv.Key == key })
}

// insertAfterArch puts kv right after general.architecture (or first).
func insertAfterArch(kvs []gguf.KV, kv gguf.KV) []gguf.KV {
	i := slices.IndexFunc(kvs, func(kv gguf.KV) bool { return kv.Key == "general.architecture" }) + 1
	return slices.Insert(kvs, i, kv)
}

// ggufArch is the llama.cpp architecture name of a model (model's Arch
// names are llama.cpp's).
func ggufArch(c *model.Config) (string, error) {
	if _, ok := llamacpp.Archs[c.Arch]; ok {
		return c.Arch, nil
	}
	return "", fmt.Errorf("%w architecture %q", ErrUnsupported, c.Arch)
}

// modelMeta writes llama.cpp's metadata for a loaded (llama2.c or Hugging
// Face) model: general.*, the "<arch>." hyperparameters (llamacpp.HParams),
// the tokenizer and the chat template.
func (p *plan) modelMeta(src *source, types map[string]tensor.DType) ([]gguf.KV, error) {
	m := src.m
	c := &m.Config
	arch, err := ggufArch(c)
	if err != nil {
		return nil, err
	}
	name := p.opts.Name
	if name == "" {
		name = src.name
	}
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String(arch)},
		{Key: "general.type", Value: gguf.String("model")},
		{Key: "general.name", Value: gguf.String(name)},
		{Key: "general.file_type", Value: gguf.Uint32(p.fileTypeID(types, src.tensors, 0, false))},
		{Key: "general.quantization_version", Value: gguf.Uint32(quantizationVersion)},
	}
	h := llamacpp.HParams{Arch: arch, VocabSize: c.Vocab, ContextLength: c.ContextLen, EmbeddingLength: c.Dim,
		BlockCount: c.Layers, FeedForwardLength: c.HiddenDim, HeadCount: c.Heads, HeadCountKV: c.KVHeads, KeyLength: c.HeadDim,
		SWALayers: c.SWALayers, RopeFreqBaseSWA: c.RopeThetaSWA, AttnSoftcap: float64(c.AttnSoftcap), FinalSoftcap: float64(c.FinalSoftcap),
		ExpertCount: c.Experts, ExpertUsedCount: c.ExpertsUsed, RopeAttnFactor: c.RopeAttnFactor}
	if c.Experts > 0 && c.ExpertHiddenDim != c.HiddenDim {
		h.ExpertFFLength = c.ExpertHiddenDim
	}
	if arch == model.ArchGemma4 {
		gemma4HParams(&h, c)
	}
	if arch == model.ArchGPT2 {
		h.LayerNormEps = float64(c.NormEps)
	} else {
		h.RMSNormEps, h.RopeFreqBase = float64(c.NormEps), c.RopeTheta
		if arch == model.ArchLlama || arch == model.ArchGemma4 || c.RopeDim != c.HeadDim {
			h.RopeDim = c.RopeDim
		}
		h.SlidingWindow = c.SlidingWindow
		switch s := c.RopeScaling; s.Type {
		case "":
		case "linear":
			h.RopeScalingType, h.RopeScalingFactor = "linear", s.Factor
		case "llama3": // written as the rope_freqs.weight tensor (extraTensors)
		default:
			return nil, fmt.Errorf("%w rope scaling %q", ErrUnsupported, s.Type)
		}
		if long, _ := m.LongRopeFactors(); long != nil {
			h.RopeOrigContext = c.RopeScaling.OrigContext // picks the factors (extraTensors)
		}
	}
	kvs = append(kvs, h.KVs()...)
	tk, err := tokenizerMeta(m)
	if err != nil {
		return nil, err
	}
	return append(kvs, tk...), nil
}

// gemma4HParams sets Gemma 4's keys as conversion/gemma.py
// Gemma4Model.set_gguf_parameters writes them: the windowed layers' head
// and rotated widths, the shared-KV layers, the per-layer
// input width, one FFN width per layer when they differ (the double-wide
// shared layers) and one KV head count per layer when the kinds differ.
func gemma4HParams(h *llamacpp.HParams, c *model.Config) {
	h.KeyLengthSWA, h.RopeDimSWA = c.HeadDimSWA, c.RopeDimSWA
	h.SharedKVLayers, h.PerLayerInput = c.SharedKVLayers, c.PerLayerDim
	if c.FFNLengths != nil {
		h.FFNLengths = slices.Clone(c.FFNLengths)
	}
	if c.KVHeadsSWA > 0 && c.KVHeadsSWA != c.KVHeads {
		h.HeadCountKVs = make([]int, c.Layers)
		for l := range h.HeadCountKVs {
			h.HeadCountKVs[l] = c.LayerKVHeads(l)
		}
	}
}

// tokenizerMeta writes the model's vocabulary as tokenizer.ggml.* keys
// (llamacpp.VocabKVs: padded to the model's vocabulary size as llama.cpp's
// converter does), an end-of-generation id the tokenizer would not infer
// itself as eot_token_id, and the chat template.
func tokenizerMeta(m *model.Model) ([]gguf.KV, error) {
	tk := m.Tokenizer
	v := *tk.Vocab() // a copy: Types is replaced below
	if m.Config.Vocab != 0 && len(v.Tokens) > m.Config.Vocab {
		return nil, fmt.Errorf("convert: tokenizer has %d tokens, the model's vocabulary only %d", len(v.Tokens), m.Config.Vocab)
	}
	v.Types = make([]tokenizer.TokenType, len(v.Tokens))
	for id := range v.Types {
		v.Types[id] = tk.TokenType(id)
	}
	size := max(len(v.Tokens), m.Config.Vocab)
	known := tk.EOG()
	var eot []int
	for _, e := range m.Gen.EOG {
		if e >= 0 && e < size && !slices.Contains(known, e) {
			eot = append(eot, e)
		}
	}
	kvs, err := llamacpp.VocabKVs(v, size, eot)
	if err != nil {
		return nil, fmt.Errorf("%w %w", ErrUnsupported, err)
	}
	if m.Gen.ChatTemplate != "" {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template", Value: gguf.String(m.Gen.ChatTemplate)})
	}
	return kvs, nil
}

// extraTensors are tensors a model source implies but does not store: the
// Llama 3 RoPE frequency divisors (rope_freqs.weight, as llama.cpp's
// converter writes them).
func extraTensors(src *source) ([]*srcTensor, error) {
	if src.m == nil || src.kv != nil {
		return nil, nil
	}
	c := &src.m.Config
	if long, short := src.m.LongRopeFactors(); long != nil {
		// Phi-3 longrope: both factor sets, as conversion/phi.py writes them.
		n := uint64(len(long))
		return []*srcTensor{
			{name: llamacpp.RopeLong, dims: []uint64{n}, typ: tensor.F32, f32: long, layer: -1},
			{name: llamacpp.RopeShort, dims: []uint64{n}, typ: tensor.F32, f32: short, layer: -1},
		}, nil
	}
	if f := src.m.RopeFreqFactors(); f != nil && c.Arch == model.ArchGemma4 {
		// Gemma 4's proportional RoPE, as Gemma4Model.generate_extra_tensors
		// writes it (the loader made the same divisors from config.json).
		return []*srcTensor{{name: llamacpp.RopeFreqs, dims: []uint64{uint64(len(f))}, typ: tensor.F32, f32: f, layer: -1}}, nil
	}
	s := c.RopeScaling
	if s.Type != "llama3" {
		return nil, nil
	}
	if s.Factor <= 0 || s.OrigContext <= 0 || s.LowFreqFactor <= 0 || s.HighFreqFactor <= s.LowFreqFactor {
		return nil, fmt.Errorf("convert: invalid llama3 rope scaling %+v", s)
	}
	n := c.RopeDim / 2
	f := make([]float32, n)
	lowWave := float64(s.OrigContext) / s.LowFreqFactor
	highWave := float64(s.OrigContext) / s.HighFreqFactor
	for i := range f {
		freq := math.Pow(c.RopeTheta, -float64(2*i)/float64(c.RopeDim))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			f[i] = 1
		case wave > lowWave:
			f[i] = float32(s.Factor)
		default:
			smooth := (float64(s.OrigContext)/wave - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			f[i] = float32(1 / ((1-smooth)/s.Factor + smooth))
		}
	}
	return []*srcTensor{{name: "rope_freqs.weight", dims: []uint64{uint64(n)}, typ: tensor.F32, f32: f, layer: -1}}, nil
}
