package model

import (
	"errors"
	"fmt"
	"math"

	"nanoserve/gguf"
	"nanoserve/llamacpp"
	"nanoserve/tensor"
)

// GGUF files (llama.cpp): hyperparameters under "<arch>.*" metadata keys,
// tensors by llama.cpp's names (token_embd, blk.N.attn_q, …), the
// tokenizer under "tokenizer.ggml.*", the chat template under
// "tokenizer.chat_template". Weights stay in the file mapping in their
// stored type; 1-D tensors (norms, biases) are decoded to float32 (aliased
// when already F32).
//
// Architecture "llama" rotates interleaved RoPE pairs (llama.cpp's
// converter permuted the Q/K rows); "qwen2" rotates halves (NEOX); "gpt2"
// has no RoPE.

func loadGGUF(path string, ctx int) (*Model, error) {
	f, err := gguf.OpenSplit(path) // a single file or the first of a split (…-00001-of-0000N.gguf)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	m, err := modelFromGGUF(f, ctx)
	if err != nil {
		f.Close()
		return nil, err
	}
	m.Files = []string{path}
	if f.Paths != nil {
		m.Files = f.Paths
	}
	m.closers = append(m.closers, f)
	return m, nil
}

// ggufLoader collects the first error while reading tensors and keys.
type ggufLoader struct {
	f *gguf.File
	firstErr
}

// firstErr keeps the first error a loader meets (weightReader's fail and
// error, for ggufLoader and hfLoader alike).
type firstErr struct{ err error }

func (e *firstErr) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *firstErr) error() error { return e.err }

// uint reads "<arch>.suffix"; missing keys give def (or an error when
// required).
func (g *ggufLoader) uint(suffix string, def int, required bool) int {
	key := g.f.Arch() + "." + suffix
	v, err := g.f.Uint(key)
	if errors.Is(err, gguf.ErrMissingKey) && !required {
		return def
	}
	if err != nil {
		g.fail(fmt.Errorf("model: %w", err))
		return def
	}
	if v > 1<<31 {
		g.fail(fmt.Errorf("model: %s = %d is too large", key, v))
		return def
	}
	return int(v)
}

func (g *ggufLoader) float(suffix string, def float64) float64 {
	key := g.f.Arch() + "." + suffix
	v, err := g.f.Float(key)
	if errors.Is(err, gguf.ErrMissingKey) {
		return def
	}
	if err != nil {
		g.fail(fmt.Errorf("model: %w", err))
		return def
	}
	return v
}

// mat returns tensor name as a (rows, cols) matrix; required tensors that
// are missing, mis-shaped or of a type the kernels cannot use are errors
// naming the tensor.
func (g *ggufLoader) mat(name string, rows, cols int, required bool) *tensor.Mat {
	t, ok := g.f.Tensor(name)
	if !ok {
		if required {
			g.fail(fmt.Errorf("model: missing tensor %s", name))
		}
		return nil
	}
	if len(t.Dims) != 2 || t.Cols() != cols || t.Rows() != rows {
		g.fail(fmt.Errorf("model: tensor %s has dims %v, want [%d %d] (hyperparameters)", name, t.Dims, cols, rows))
		return nil
	}
	if !tensor.Computable(t.Type) {
		g.fail(fmt.Errorf("model: tensor %s has unsupported type %s (supported: %s)", name, t.Type, tensor.SupportedTypes()))
		return nil
	}
	m, err := tensor.NewMat(t.Type, rows, cols, t.Data)
	if err != nil {
		g.fail(fmt.Errorf("model: tensor %s: %w", name, err))
		return nil
	}
	return m
}

// vec returns tensor name (n elements) as float32.
func (g *ggufLoader) vec(name string, n int, required bool) []float32 {
	t, ok := g.f.Tensor(name)
	if !ok {
		if required {
			g.fail(fmt.Errorf("model: missing tensor %s", name))
		}
		return nil
	}
	if t.Elements() != uint64(n) || t.Cols() != n {
		g.fail(fmt.Errorf("model: tensor %s has dims %v, want [%d] (hyperparameters)", name, t.Dims, n))
		return nil
	}
	v, err := decodeVec(t.Type, t.Data, n)
	if err != nil {
		g.fail(fmt.Errorf("model: tensor %s: %w", name, err))
	}
	return v
}

// decodeVec returns n elements of type t as float32: aliased when t is F32,
// else decoded into a new slice.
func decodeVec(t tensor.DType, data []byte, n int) ([]float32, error) {
	if !tensor.Computable(t) {
		return nil, fmt.Errorf("unsupported type %s", t)
	}
	rb, err := t.RowBytes(n)
	if err != nil {
		return nil, err
	}
	if len(data) != rb {
		return nil, fmt.Errorf("%d bytes, want %d", len(data), rb)
	}
	if t == tensor.F32 {
		return tensor.BytesF32(data), nil
	}
	v := make([]float32, n)
	tensor.DequantizeRow(v, t, data)
	return v, nil
}

// experts returns the (experts, rows, cols) tensor name as one (rows,
// cols) matrix view per expert (ggml dims [cols, rows, experts]: expert e
// is the e-th slab of rows).
func (g *ggufLoader) experts(name string, experts, rows, cols int) []*tensor.Mat {
	t, ok := g.f.Tensor(name)
	if !ok {
		g.fail(fmt.Errorf("model: missing tensor %s", name))
		return nil
	}
	if len(t.Dims) != 3 || int(t.Dims[0]) != cols || int(t.Dims[1]) != rows || int(t.Dims[2]) != experts {
		g.fail(fmt.Errorf("model: tensor %s has dims %v, want [%d %d %d] (hyperparameters)", name, t.Dims, cols, rows, experts))
		return nil
	}
	if !tensor.Computable(t.Type) {
		g.fail(fmt.Errorf("model: tensor %s has unsupported type %s (supported: %s)", name, t.Type, tensor.SupportedTypes()))
		return nil
	}
	rb, err := t.Type.RowBytes(cols)
	if err != nil || len(t.Data) != experts*rows*rb {
		g.fail(fmt.Errorf("model: tensor %s has %d bytes, want %d experts × %d rows of %s", name, len(t.Data), experts, rows, t.Type))
		return nil
	}
	out := make([]*tensor.Mat, experts)
	slab := rows * rb
	for e := range out {
		out[e] = &tensor.Mat{Type: t.Type, Rows: rows, Cols: cols, Data: t.Data[e*slab : (e+1)*slab : (e+1)*slab]}
	}
	return out
}

// modelFromGGUF reads hyperparameters, weights, tokenizer and chat
// template, as the architecture's llamacpp.Arch entry describes them.
// ctx is the configured context per sequence (0: the trained one).
func modelFromGGUF(f *gguf.File, ctx int) (*Model, error) {
	arch, err := llamacpp.Lookup(f.Arch())
	if err != nil {
		return nil, fmt.Errorf("%w %w", ErrUnknownArch, err)
	}
	m := &Model{}
	c := &m.Config
	c.Format = "gguf"
	c.Arch = ggufArchName(arch)
	c.RopeNeox = arch.RopeNeox
	g := &ggufLoader{f: f}
	kvArr, err := readGGUFSizes(g, arch, c)
	if err != nil {
		return nil, err
	}
	readGGUFPositions(g, arch, c)
	if err := readGGUFBlocks(g, arch, c, kvArr); err != nil {
		return nil, err
	}
	if g.err != nil {
		return nil, g.err
	}
	if c.Dim%c.Heads != 0 && c.HeadDim == c.Dim/c.Heads {
		return nil, fmt.Errorf("model: embedding_length %d is not a multiple of head_count %d", c.Dim, c.Heads)
	}
	emb, ok := f.Tensor(llamacpp.TokenEmbd)
	if !ok {
		return nil, fmt.Errorf("model: missing tensor %s", llamacpp.TokenEmbd)
	}
	c.Vocab = emb.Rows()
	if err := c.validate(); err != nil {
		return nil, err
	}

	build := m.buildWeights
	if arch.Hybrid {
		build = func(_ *llamacpp.Arch, g weightReader) error { return m.buildHybridWeights(g) }
	}
	if err := build(arch, g); err != nil {
		return nil, err
	}
	m.readRopeFactors(g, arch, ctx)
	if g.err != nil {
		return nil, g.err
	}
	if err := m.describeGGUF(f); err != nil {
		return nil, err
	}
	return m, nil
}

// ggufArchName is Config.Arch for a llama.cpp architecture: our constants
// are llama.cpp's names, with mistral read as llama.
func ggufArchName(arch *llamacpp.Arch) string {
	switch arch.Name {
	case "llama", "mistral":
		return ArchLlama
	case "qwen2":
		return ArchQwen2
	case "gpt2":
		return ArchGPT2
	default:
		return arch.Name // the constants are llama.cpp's names
	}
}

// readGGUFSizes reads the model's sizes: context, width, layers, FFN
// width(s), heads and KV heads (a Gemma 4 per-layer KV array is returned
// for readGGUFBlocks to resolve), the hybrid layers, and the head size.
func readGGUFSizes(g *ggufLoader, arch *llamacpp.Arch, c *Config) ([]int32, error) {
	f := g.f
	c.ContextLen = g.uint(llamacpp.KeyContextLength, 0, true)
	c.Dim = g.uint(llamacpp.KeyEmbeddingLength, 0, true)
	c.Layers = g.uint(llamacpp.KeyBlockCount, 0, true)
	if ff, err := f.Int32s(f.Arch() + "." + llamacpp.KeyFeedForwardLength); err == nil && arch.Gemma4 {
		// Gemma 4: one width per layer (the shared-KV layers' double-wide MLP).
		c.FFNLengths = make([]int, len(ff))
		for i, v := range ff {
			c.FFNLengths[i] = int(v)
			c.HiddenDim = max(c.HiddenDim, int(v))
		}
	} else {
		c.HiddenDim = g.uint(llamacpp.KeyFeedForwardLength, 0, !(arch.Hybrid && arch.MoE)) // qwen35moe: experts only
	}
	c.Heads = g.uint(llamacpp.KeyHeadCount, 0, true)
	// Gemma 4's converter may write one KV head count per layer (the
	// 31B has other counts on its global layers): resolved per layer
	// kind once the windowed layers are known (kvHeadsByKind). A hybrid
	// model's array marks its recurrent layers with 0 (readKVHeadsArray).
	kvArr, kvErr := f.Int32s(f.Arch() + "." + llamacpp.KeyHeadCountKV)
	if kvErr == nil && arch.Gemma4 && len(kvArr) > 0 {
		c.KVHeads = int(kvArr[0])
	} else {
		kvArr = nil
		if isArr, err := readKVHeadsArray(g, c); err != nil {
			return nil, err
		} else if !isArr {
			c.KVHeads = g.uint(llamacpp.KeyHeadCountKV, c.Heads, false)
		}
	}
	if arch.Hybrid {
		if err := readHybridGGUF(g, c); err != nil {
			return nil, err
		}
	}
	if g.err != nil {
		return nil, g.err
	}
	if c.Heads <= 0 || c.Dim <= 0 {
		return nil, fmt.Errorf("model: invalid GGUF hyperparameters: embedding_length %d, head_count %d", c.Dim, c.Heads)
	}
	c.HeadDim = g.uint(llamacpp.KeyKeyLength, c.Dim/c.Heads, false)
	if v := g.uint(llamacpp.KeyValueLength, c.HeadDim, false); v != c.HeadDim {
		return nil, fmt.Errorf("model: attention.value_length %d != key_length %d is not supported", v, c.HeadDim)
	}
	return kvArr, nil
}

// readGGUFPositions reads the norm epsilon and how positions are encoded:
// RoPE (base, dims, scaling, YaRN, LongRoPE's original context), the
// pooling type and the sliding window. Errors collect in g.err.
func readGGUFPositions(g *ggufLoader, arch *llamacpp.Arch, c *Config) {
	f := g.f
	if c.Arch == ArchGPT2 {
		c.NormEps = float32(g.float(llamacpp.KeyLayerNormEps, 1e-5))
	} else {
		c.NormEps = float32(g.float(llamacpp.KeyRMSNormEps, 1e-5))
		c.RopeTheta = g.float(llamacpp.KeyRopeFreqBase, 10000)
		c.RopeDim = g.uint(llamacpp.KeyRopeDim, c.HeadDim, false)
		// llama.cpp's enum llama_pooling_type: 0 none, 1 mean, 2 cls, 3 last, 4 rank.
		switch pt := g.uint("pooling_type", -1, false); pt {
		case -1:
		case 0:
			c.Pooling = PoolNone
		case 1:
			c.Pooling = PoolMean
		case 2:
			c.Pooling = PoolCLS
		case 3:
			c.Pooling = PoolLast
		default:
			c.Pooling = fmt.Sprintf("unsupported(%d)", pt)
		}
		if !arch.NoWindow {
			c.SlidingWindow = g.uint(llamacpp.KeySlidingWindow, arch.DefaultWindow, false)
		}
		if st, err := f.String(f.Arch() + "." + llamacpp.KeyRopeScalingType); err == nil && st != "none" {
			c.RopeScaling.Type = st
			c.RopeScaling.Factor = g.float(llamacpp.KeyRopeScalingFactor, 1)
		}
		// Read with or without a scaling type: llama.cpp's
		// n_ctx_orig_yarn also picks LongRoPE factors.
		c.RopeScaling.OrigContext = g.uint(llamacpp.KeyRopeOrigContext, 0, false)
		c.RopeAttnFactor = g.float(llamacpp.KeyRopeAttnFactor, 0)
		c.RopeScaling.BetaFast = g.float(llamacpp.KeyRopeYarnBetaFast, 0)
		c.RopeScaling.BetaSlow = g.float(llamacpp.KeyRopeYarnBetaSlow, 0)
		if c.RopeScaling.Type == "yarn" && c.RopeScaling.OrigContext == 0 {
			c.RopeScaling.OrigContext = c.ContextLen // llama.cpp's n_ctx_orig_yarn default
		}
	}
}

// readGraniteScales reads Granite's scalars (granite.cpp's
// load_arch_hparams, all optional here: 0 leaves a scale off), its shared
// expert's width, and its RoPE switch: rope.scaling.finetuned false means
// no RoPE (Granite 4.0's "nope" attention). Errors collect in g.err.
func readGraniteScales(g *ggufLoader, c *Config) {
	c.EmbedScale = float32(g.float(llamacpp.KeyEmbeddingScale, 0))
	if s := g.float(llamacpp.KeyAttentionScale, 0); s != 0 {
		c.AttnScale = float64(float32(s))
	}
	c.ResidualScale = float32(g.float(llamacpp.KeyResidualScale, 0))
	c.LogitScale = float32(g.float(llamacpp.KeyLogitScale, 0))
	if c.Experts > 0 {
		c.SharedExpertHiddenDim = g.uint(llamacpp.KeySharedExpertFF, 0, false)
	}
	key := g.f.Arch() + "." + llamacpp.KeyRopeFinetuned
	if v, ok := g.f.Get(key); ok {
		b, isBool := v.Bool()
		if !isBool {
			g.fail(fmt.Errorf("model: %s is not a boolean", key))
			return
		}
		if !b {
			c.RopeDim = 0
		}
	}
}

// readGGUFBlocks reads which blocks the layers have, as the architecture
// entry and the metadata say: RoPE-less layers, sinks, windowed layers and
// their RoPE base, QK-norm, Gemma's norms and scales, KV heads per layer
// kind, Gemma 4's per-layer geometry, soft-caps and experts.
func readGGUFBlocks(g *ggufLoader, arch *llamacpp.Arch, c *Config, kvArr []int32) error {
	f := g.f
	var err error
	c.NoRopeStep = arch.NoRopeStep
	c.AttnSinks = arch.Sinks
	c.OAIMoE = arch.OAIMoE
	if arch.SWAPattern > 0 && c.SlidingWindow > 0 {
		if c.Layers > 1<<16 {
			return fmt.Errorf("model: block_count %d is too large", c.Layers)
		}
		if c.SWALayers, err = llamacpp.ReadSWALayers(f, c.Layers, arch.SWAPattern); err != nil {
			return fmt.Errorf("model: %w", err)
		}
		c.RopeThetaSWA = g.float(llamacpp.KeyRopeFreqBaseSWA, 0)
		if (arch.Name == "gemma3" || arch.Gemma4) && c.RopeThetaSWA == 0 {
			c.RopeThetaSWA = 10000 // llama_hparams::rope_freq_base_train_swa's default
		}
	}
	c.QKNorm = arch.QKNorm
	if arch.Gemma {
		c.PostNorms, c.GELUGate = true, true
		c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
		// gemma2.cpp/gemma3.cpp: the 27B sizes (46 and 62 layers) scale
		// queries by 1/√(n_embd/n_head), the others by 1/√head_dim.
		if arch.Name == "gemma2" && c.Layers == 46 || arch.Name == "gemma3" && c.Layers == 62 {
			c.AttnScale = 1 / math.Sqrt(float64(c.Dim/c.Heads))
		}
	}
	if kvArr != nil {
		if err := kvHeadsByKind(c, kvArr); err != nil {
			return err
		}
	}
	if arch.Gemma4 {
		c.AttnScale = 1 // gemma4.cpp: f_attention_scale = 1 (the QK-norm sets the scale)
		c.VNorm = true
		c.HeadDimSWA = g.uint(llamacpp.KeyKeyLengthSWA, 0, false)
		if v := g.uint(llamacpp.KeyValueLengthSWA, c.HeadDimSWA, false); v != c.HeadDimSWA {
			return fmt.Errorf("model: attention.value_length_swa %d != key_length_swa %d is not supported", v, c.HeadDimSWA)
		}
		c.RopeDimSWA = g.uint(llamacpp.KeyRopeDimSWA, c.HeadDimSWA, false)
		c.SharedKVLayers = g.uint(llamacpp.KeySharedKVLayers, 0, false)
		c.PerLayerDim = g.uint(llamacpp.KeyPerLayerInput, 0, false)
	}
	if arch.SoftCaps {
		c.AttnSoftcap = float32(g.float(llamacpp.KeyAttnSoftcap, 0))
		c.FinalSoftcap = float32(g.float(llamacpp.KeyFinalSoftcap, 0))
		if arch.Name == "gemma3" || arch.Gemma4 {
			c.AttnSoftcap = 0 // gemma3.cpp and gemma4.cpp pass no attention soft-cap
		}
	}
	if arch.MoE {
		c.Experts = g.uint(llamacpp.KeyExpertCount, 0, false)
		if c.Experts > 0 {
			c.ExpertsUsed = g.uint(llamacpp.KeyExpertUsedCount, 0, true)
			c.ExpertHiddenDim = g.uint(llamacpp.KeyExpertFFLength, c.HiddenDim, false)
		}
		if c.HiddenDim == 0 {
			c.HiddenDim = c.ExpertHiddenDim // qwen35moe: no dense FFN width
		}
	}
	if arch.Granite {
		readGraniteScales(g, c) // after the experts: the shared expert's width
	}
	return nil
}

// readRopeFactors reads the RoPE frequency factors: rope_freqs, else
// LongRoPE's long or short factors for a context of ctx positions per
// sequence (0: the trained one). Errors collect in g.err.
func (m *Model) readRopeFactors(g *ggufLoader, arch *llamacpp.Arch, ctx int) {
	c := &m.Config
	w := &m.w
	if c.RopeDim > 0 {
		w.ropeFreqs = g.vec(llamacpp.RopeFreqs, c.RopeDim/2, false)
		if w.ropeFreqs != nil {
			c.RopeFactors = llamacpp.RopeFreqs
		}
		if arch.LongRope && w.ropeFreqs == nil {
			// llama_model::get_rope_factors: long factors when the
			// context per sequence exceeds the original training
			// context, else short.
			orig := c.RopeScaling.OrigContext
			if orig == 0 {
				orig = c.ContextLen
			}
			if ctx == 0 {
				ctx = c.ContextLen
			}
			name := llamacpp.RopeShort
			if ctx > orig {
				name = llamacpp.RopeLong
			}
			w.ropeFreqs = g.vec(name, c.RopeDim/2, false)
			if w.ropeFreqs != nil {
				c.RopeFactors = name
				m.longRope = [2][]float32{g.vec(llamacpp.RopeLong, c.RopeDim/2, true), g.vec(llamacpp.RopeShort, c.RopeDim/2, true)}
			}
		}
	}
}

// describeGGUF lists the file's tensors (for inspect) and reads its
// tokenizer and chat template.
func (m *Model) describeGGUF(f *gguf.File) error {
	for _, t := range f.Tensors {
		shape := make([]int, len(t.Dims))
		for i, d := range t.Dims {
			shape[len(t.Dims)-1-i] = int(d)
		}
		m.Tensors = append(m.Tensors, TensorDesc{Name: t.Name, Type: t.Type, Shape: shape})
	}

	if _, err := f.Strings("tokenizer.ggml.tokens"); err == nil {
		tk, err := llamacpp.TokenizerFromGGUF(f)
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		m.Tokenizer = tk
	}
	m.Gen.ChatTemplate, _ = f.String("tokenizer.chat_template")
	return nil
}

// kvHeadsByKind sets KVHeads (global layers) and KVHeadsSWA (windowed
// layers) from a per-layer head_count_kv array, which must hold one count
// per layer kind.
func kvHeadsByKind(c *Config, kv []int32) error {
	if len(kv) != c.Layers {
		return fmt.Errorf("model: attention.head_count_kv has %d entries for %d layers", len(kv), c.Layers)
	}
	glob, swa := -1, -1
	for l, v := range kv {
		p := &glob
		if c.Windowed(l) {
			p = &swa
		}
		if *p >= 0 && *p != int(v) {
			return fmt.Errorf("model: attention.head_count_kv %v: layers of one kind (windowed or global) with different counts are not supported", kv)
		}
		*p = int(v)
	}
	if glob >= 0 {
		c.KVHeads = glob
	}
	if swa >= 0 && swa != c.KVHeads {
		c.KVHeadsSWA = swa
	}
	return nil
}

// weightReader yields a model's tensors by llama.cpp name, whatever the
// file's own naming: ggufLoader reads GGUF files, hfReader maps Hugging
// Face names and conventions through llamacpp's table. Errors are kept
// (the first one) and returned by error.
type weightReader interface {
	mat(name string, rows, cols int, required bool) *tensor.Mat
	vec(name string, n int, required bool) []float32
	experts(name string, experts, rows, cols int) []*tensor.Mat
	vecN(name string, n int) []float32 // a required tensor of n elements, any shape (gpt-oss's (experts, width) biases)
	rows(name string) (int, bool)      // a present matrix's row count
	fail(err error)
	error() error
}

func (g *ggufLoader) rows(name string) (int, bool) {
	t, ok := g.f.Tensor(name)
	if !ok {
		return 0, false
	}
	return t.Rows(), true
}

func (g *ggufLoader) vecN(name string, n int) []float32 {
	t, ok := g.f.Tensor(name)
	if !ok {
		g.fail(fmt.Errorf("model: missing tensor %s", name))
		return nil
	}
	if t.Elements() != uint64(n) {
		g.fail(fmt.Errorf("model: tensor %s has dims %v, want %d elements (hyperparameters)", name, t.Dims, n))
		return nil
	}
	v, err := decodeVec(t.Type, t.Data, n)
	if err != nil {
		g.fail(fmt.Errorf("model: tensor %s: %w", name, err))
	}
	return v
}

// buildWeights reads every weight of the architecture's blocks from r into
// m.w, by llama.cpp's tensor names and the shapes the Config implies.
// splitGateUp views a fused (2·n, cols) gate-and-up matrix, rows [0, n)
// the gate and [n, 2·n) the up projection (phi3's ffn_up; Gemma 4's and
// Granite MoE checkpoints' experts; Granite's shared expert), as its two
// halves, sharing its bytes.
func splitGateUp(gu *tensor.Mat) (gate, up *tensor.Mat) {
	half, n := len(gu.Data)/2, gu.Rows/2
	return &tensor.Mat{Type: gu.Type, Rows: n, Cols: gu.Cols, Data: gu.Data[:half:half]},
		&tensor.Mat{Type: gu.Type, Rows: n, Cols: gu.Cols, Data: gu.Data[half:]}
}

// expertsGateUp reads layer i's experts' gate and up matrices: from the
// fused ffn_gate_up_exps (per expert (2·eh, dim), gate rows first) when the
// file has it, else from ffn_gate_exps and ffn_up_exps. Not for gpt-oss,
// whose checkpoint's interleaved gate_up_proj (llamacpp.GptOssGateUp, the
// same name) the reader splits by ffn_gate_exps and ffn_up_exps.
func expertsGateUp(g weightReader, arch *llamacpp.Arch, i, experts, eh, dim int) (gate, up []*tensor.Mat) {
	name := llamacpp.Blk(i, llamacpp.FFNGateUpExps, "weight")
	if _, ok := g.rows(name); !ok || arch.OAIMoE {
		return g.experts(llamacpp.Blk(i, llamacpp.FFNGateExps, "weight"), experts, eh, dim),
			g.experts(llamacpp.Blk(i, llamacpp.FFNUpExps, "weight"), experts, eh, dim)
	}
	gu := g.experts(name, experts, 2*eh, dim)
	if gu == nil {
		return nil, nil
	}
	gate, up = make([]*tensor.Mat, experts), make([]*tensor.Mat, experts)
	for e, x := range gu {
		gate[e], up[e] = splitGateUp(x)
	}
	return gate, up
}

func (m *Model) buildWeights(arch *llamacpp.Arch, g weightReader) error {
	c := &m.Config
	dim := c.Dim
	w := &m.w
	w.tokEmb = g.mat(llamacpp.TokenEmbd, c.Vocab, dim, true)
	if pl := c.PerLayerDim; pl > 0 {
		w.perLayerEmb = g.mat(llamacpp.PerLayerTokenEmbd, c.Vocab, c.Layers*pl, true)
		w.perLayerProj = g.mat(llamacpp.PerLayerModelProj, c.Layers*pl, dim, true)
		w.perLayerNorm = g.vec(llamacpp.PerLayerProjNorm, pl, true)
	}
	gpt2 := c.Arch == ArchGPT2
	if gpt2 {
		if rows, ok := g.rows(llamacpp.PositionEmbd); ok {
			w.posEmb = g.mat(llamacpp.PositionEmbd, rows, dim, true)
		} else {
			g.fail(fmt.Errorf("model: missing tensor %s", llamacpp.PositionEmbd))
		}
	}
	w.layers = make([]layerWeights, c.Layers)
	for i := range w.layers {
		l := &w.layers[i]
		wt := func(name string) string { return llamacpp.Blk(i, name, "weight") }
		bs := func(name string) string { return llamacpp.Blk(i, name, "bias") }
		qd, kvd, hid, hd := c.LayerQDim(i), c.LayerKVDim(i), c.LayerHidden(i), c.LayerHeadDim(i)
		owns := c.OwnsKV(i)
		l.attnNorm = g.vec(wt(llamacpp.AttnNorm), dim, true)
		l.attnNormB = g.vec(bs(llamacpp.AttnNorm), dim, gpt2)
		if arch.FusedQKV {
			l.wqkv = g.mat(wt(llamacpp.AttnQKV), qd+2*kvd, dim, true)
			l.bqkv = g.vec(bs(llamacpp.AttnQKV), qd+2*kvd, false)
		} else {
			l.wq = g.mat(wt(llamacpp.AttnQ), qd, dim, true)
			l.bq = g.vec(bs(llamacpp.AttnQ), qd, arch.QKVBias)
			if owns { // a shared-KV layer's K and V projections go unused
				l.wk = g.mat(wt(llamacpp.AttnK), kvd, dim, true)
				// gemma4.cpp: without attn_v (the 26B/31B global layers)
				// the values are the keys' projection (vFromK).
				l.wv = g.mat(wt(llamacpp.AttnV), kvd, dim, !arch.Gemma4)
				l.bk = g.vec(bs(llamacpp.AttnK), kvd, arch.QKVBias)
				l.bv = g.vec(bs(llamacpp.AttnV), kvd, arch.QKVBias)
			}
		}
		if arch.QKNorm {
			l.qNorm = g.vec(wt(llamacpp.AttnQNorm), hd, true)
			if owns {
				l.kNorm = g.vec(wt(llamacpp.AttnKNorm), hd, true)
			}
		}
		if arch.Sinks {
			l.sinks = g.vec(wt(llamacpp.AttnSinks), c.Heads, true)
		}
		if arch.Gemma4 {
			l.outScale = g.vec(wt(llamacpp.LayerOutScale), 1, false)
			if pl := c.PerLayerDim; pl > 0 {
				l.plGate = g.mat(wt(llamacpp.PerLayerInpGate), pl, dim, true)
				l.plProj = g.mat(wt(llamacpp.PerLayerProj), dim, pl, true)
				l.plPostNorm = g.vec(wt(llamacpp.PerLayerPostNorm), dim, true)
			}
		}
		l.wo = g.mat(wt(llamacpp.AttnOut), dim, qd, true)
		l.bo = g.vec(bs(llamacpp.AttnOut), dim, false)
		if arch.Sinks { // openai-moe.cpp: post_attention_norm is the FFN's input norm
			l.ffnNorm = g.vec(wt(llamacpp.AttnPostNorm), dim, true)
		} else {
			l.ffnNorm = g.vec(wt(llamacpp.FFNNorm), dim, true)
			l.ffnNormB = g.vec(bs(llamacpp.FFNNorm), dim, gpt2)
		}
		if arch.Gemma {
			l.attnPostNorm = g.vec(wt(llamacpp.AttnPostNorm), dim, true)
			l.ffnPostNorm = g.vec(wt(llamacpp.FFNPostNorm), dim, true)
		}
		_, hasRouter := g.rows(wt(llamacpp.FFNRouter))
		switch {
		case arch.Gemma4 && c.Experts > 0 && hasRouter:
			l.wGate = g.mat(wt(llamacpp.FFNGate), hid, dim, true)
			l.wUp = g.mat(wt(llamacpp.FFNUp), hid, dim, true)
			m.gemma4MoEWeights(l, i, g)
		case c.Experts > 0 && !arch.Gemma4:
			l.router = g.mat(wt(llamacpp.FFNRouter), c.Experts, dim, true)
			eh := c.ExpertHiddenDim
			l.expGate, l.expUp = expertsGateUp(g, arch, i, c.Experts, eh, dim)
			l.expDown = g.experts(wt(llamacpp.FFNDownExps), c.Experts, dim, eh)
			if sh := c.SharedExpertHiddenDim; sh > 0 { // granitemoe: an ungated shared expert
				_, split := g.rows(wt("ffn_gate_shexp"))
				if rows, ok := g.rows(wt("ffn_up_shexp")); !split && ok && rows == 2*sh {
					// fused, gate rows first (a Granite MoE checkpoint's
					// shared_mlp.input_linear)
					if gu := g.mat(wt("ffn_up_shexp"), 2*sh, dim, true); gu != nil {
						l.shGate, l.shUp = splitGateUp(gu)
					}
				} else {
					l.shGate = g.mat(wt("ffn_gate_shexp"), sh, dim, true)
					l.shUp = g.mat(wt("ffn_up_shexp"), sh, dim, true)
				}
				l.shDown = g.mat(wt("ffn_down_shexp"), dim, sh, true)
			}
			if arch.OAIMoE {
				l.routerB = g.vec(bs(llamacpp.FFNRouter), c.Experts, true)
				l.expGateB = g.vecN(bs(llamacpp.FFNGateExps), c.Experts*eh)
				l.expUpB = g.vecN(bs(llamacpp.FFNUpExps), c.Experts*eh)
				l.expDownB = g.vecN(bs(llamacpp.FFNDownExps), c.Experts*dim)
			}
		case arch.FusedGateUp:
			// ffn_up is (2·hidden, dim): rows [0, hidden) gate, then up.
			if gu := g.mat(wt(llamacpp.FFNUp), 2*hid, dim, true); gu != nil {
				l.wGate, l.wUp = splitGateUp(gu)
			}
		default:
			if !gpt2 {
				l.wGate = g.mat(wt(llamacpp.FFNGate), hid, dim, true)
			}
			l.wUp = g.mat(wt(llamacpp.FFNUp), hid, dim, true)
			l.bUp = g.vec(bs(llamacpp.FFNUp), hid, false)
		}
		if c.Experts == 0 || arch.Gemma4 {
			l.wDown = g.mat(wt(llamacpp.FFNDown), dim, hid, true)
			l.bDown = g.vec(bs(llamacpp.FFNDown), dim, false)
		}
		if err := g.error(); err != nil {
			return err
		}
	}
	w.outNorm = g.vec(llamacpp.OutputNorm+".weight", dim, true)
	w.outNormB = g.vec(llamacpp.OutputNorm+".bias", dim, gpt2)
	if _, ok := g.rows(llamacpp.Output); ok && arch.Name != "gemma2" && !c.Tied { // gemma2.cpp always ties
		w.output = g.mat(llamacpp.Output, c.Vocab, dim, true)
	} else {
		w.output, c.Tied = w.tokEmb, true
	}
	return g.error()
}
