// Package model loads decoder-only transformer language models (Llama,
// Mistral, Qwen2, GPT-2) from llama2.c checkpoints, GGUF files and Hugging
// Face directories, and runs their forward pass over a paged KV cache.
//
// # The computation
//
// A token id t at position p becomes a vector x (dim) by looking up row t
// of the embedding matrix (GPT-2 also adds row p of a learned position
// matrix). Each of the Layers blocks then updates x in place:
//
//	h   = norm(x)                               RMSNorm (Llama, Qwen2) or LayerNorm (GPT-2)
//	q   = Wq·h (+bq), k = Wk·h (+bk), v = Wv·h  q: (Heads, HeadDim), k, v: (KVHeads, HeadDim)
//	q,k = RoPE(q, p), RoPE(k, p)                rotate dimension pairs by angle p·θ^(-2i/RopeDim)
//	K[p], V[p] = k, v                           store in the KV cache
//	a_h = Σ_{s≤p} softmax_s(q_h·K_g[s]/√HeadDim) V_g[s]   g = h / (Heads/KVHeads)  (grouped-query)
//	x  += Wo·a (+bo)
//	h   = norm(x)
//	x  += W2·(silu(W1·h) ⊙ W3·h)                SwiGLU (Llama, Qwen2)
//	x  += Wdown·gelu(Wup·h + bup) + bdown       GPT-2 MLP
//
// and the logits are Wout·norm(x) (vocab), where Wout is a separate output
// matrix or the embedding matrix itself ("tied").
//
// RoPE comes in two layouts that rotate different pairs of a head's
// dimensions: interleaved pairs (0,1), (2,3), … (llama2.c, llama-type GGUF
// files, whose converter permutes the Hugging Face Q/K rows) and halves
// (i, i+RopeDim/2) ("NEOX": Hugging Face Llama/Mistral/Qwen2 checkpoints,
// qwen2-type GGUF files). Config.RopeNeox selects the layout, so weights are
// used exactly as stored.
//
// # Batching and the cache
//
// Forward takes a Batch of tokens from any number of sequences. Per layer it
// normalises all n tokens, runs every projection as one matrix-matrix
// product over the (n, dim) activations (so a prompt prefill is a GEMM, not
// n matrix-vector products), writes each token's K and V into its
// sequence's cache slot, and only then attends, each token over its own
// sequence's positions 0..pos. Because K/V are written first, later tokens
// of a sequence in the same batch see the earlier ones.
//
// Invariants the tests pin: logits of the cached, batched forward equal a
// plain full-recompute reference (ForwardRef) within 1e-4; batching several
// sequences gives the same logits as running them one by one; the llama2.c
// and llama.cpp goldens in ../shared reproduce (greedy ids exact).
//
// # Memory
//
// Model files are memory-mapped; weight matrices (tensor.Mat) point into
// the mapping in their file encoding (F32, F16, BF16 or quantized). On the
// Go heap live the decoded small vectors (norm gains, biases), the
// transposed Hugging Face GPT-2 Conv1D weights, and one copy of each
// layer's Q, K and V matrices fused into a single (q_dim+2·kv_dim, dim)
// matrix (fuseQKV: one product per layer instead of three; the separate
// wq, wk, wv then view its rows; the mapped originals are read once, at
// load, and are page cache the kernel may drop afterwards).
//
// # Files
//
// Loading: load.go (Load, Options, LoadTokenizer), load_gguf.go,
// load_hf.go, load_llama2c.go, and weights.go (the weights struct, the
// shape checks every loader shares, QKV fusion). Running: forward.go
// (Batch, Forward, the layer loop), attention.go (over the paged cache),
// rope.go, ops.go (norms, activations), parallel.go (the jobs on the
// model's tensor.Pool) and ref.go (the plain reference forward). The
// per-layer variations of newer architectures are layers.go (head and
// RoPE dims, FFN widths and KV-cache sharing per layer), gptoss.go
// (attention sinks, its experts) and gemma4.go (per-layer inputs), with
// their reference forms in ref_archs.go.
package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sync"

	"nanoserve/internal/mmap"
	"nanoserve/kvcache"
	"nanoserve/llamacpp"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

// Architecture names (Config.Arch).
const (
	ArchLlama = "llama" // Llama 1/2/3, Mistral, llama2.c
	ArchQwen2 = "qwen2" // Llama with Q/K/V biases
	ArchGPT2  = "gpt2"  // learned positions, LayerNorm, GELU, fused QKV

	ArchQwen3         = "qwen3"         // QK-norm, head_dim ≠ dim/heads
	ArchQwen3MoE      = "qwen3moe"      // Qwen3 with a mixture-of-experts FFN
	ArchGemma2        = "gemma2"        // GeGLU, scaled embeddings, pre/post norms, soft-caps, alternating windows
	ArchGemma3        = "gemma3"        // Gemma 2's blocks with QK-norm, 5 windowed layers per global one
	ArchPhi3          = "phi3"          // fused QKV and gate/up, long-context RoPE factors
	ArchSmolLM3       = "smollm3"       // Llama blocks, no RoPE in every 4th layer
	ArchGPTOSS        = "gpt-oss"       // attention sinks, YaRN, biased MoE with clamped SwiGLU
	ArchGemma4        = "gemma4"        // per-layer inputs, shared KV layers, per-layer head dims
	ArchQwen35        = "qwen35"        // hybrid: gated delta-net layers and gated full attention (hybrid.go)
	ArchLFM2          = "lfm2"          // hybrid: gated short convolutions and GQA attention (hybrid.go)
	ArchQwen35MoE     = "qwen35moe"     // qwen35 with a mixture of experts and a gated shared expert (hybrid.go)
	ArchGranite       = "granite"       // Llama blocks with Granite's embedding, attention, residual and logit scales
	ArchGraniteMoE    = "granitemoe"    // granite with softmax experts and an optional ungated shared expert
	ArchGraniteHybrid = "granitehybrid" // hybrid: Mamba-2 layers and attention with Granite's scales (mamba2.go)
	ArchLFM2MoE       = "lfm2moe"       // lfm2 with σ-gated experts after leading dense layers (hybrid.go, moe.go)
)

// ErrUnknownArch is returned (wrapped, naming it) for an architecture this
// package cannot run.
var ErrUnknownArch = errors.New("model: unknown architecture")

// Config holds the hyperparameters of a loaded model.
type Config struct {
	Arch   string // ArchLlama, ArchQwen2, ArchGPT2, ArchQwen3, ArchQwen3MoE, ArchGemma2, ArchGemma3 or ArchPhi3
	Format string // "llama2c", "gguf" or "hf"

	Dim        int // embedding width
	HiddenDim  int // feed-forward inner width
	Layers     int
	Heads      int // query heads
	KVHeads    int // key/value heads (Heads % KVHeads == 0)
	HeadDim    int
	Vocab      int
	ContextLen int // trained context length (maximum positions)

	NormEps float32 // RMSNorm / LayerNorm epsilon

	RopeTheta   float64     // RoPE base frequency
	RopeDim     int         // dimensions rotated per head (≤ HeadDim); 0: no RoPE
	RopeNeox    bool        // rotate halves (i, i+RopeDim/2) instead of interleaved pairs
	RopeScaling RopeScaling // frequency scaling
	RopeFactors string      // the per-pair frequency divisors in use (rope_freqs, rope_factors_long/short; HF: rope_scaling.long/short_factor, Gemma 4's proportional rope_parameters); "" if none

	SlidingWindow int     // windowed layers attend only to the last SlidingWindow positions; 0: no window
	SWALayers     []bool  // which layers are windowed (llama.cpp's layer pattern); nil: every layer
	RopeThetaSWA  float64 // RoPE base of the windowed layers (rope.freq_base_swa); 0: RopeTheta
	// RopeAttnFactor multiplies RoPE's cos and sin (so q·k by its square):
	// llama.cpp's rope.scaling.attn_factor, set by long-context (LongRoPE)
	// conversions. 0: 1.
	RopeAttnFactor float64
	Tied           bool // output matrix is the token embedding
	// Granite's scalars (0: off): each block's output is multiplied by
	// ResidualScale before its residual add, the logits divided by
	// LogitScale.
	ResidualScale, LogitScale float32

	// Blocks enabled per architecture (zero values: off).
	QKNorm          bool    // per-head RMSNorm of q and k (HeadDim gains) before RoPE (Qwen3, Gemma 3)
	PostNorms       bool    // RMSNorm of the attention and FFN outputs before each residual add (Gemma 2/3)
	GELUGate        bool    // gated FFN uses tanh-GELU (GeGLU, Gemma) instead of SiLU (SwiGLU)
	EmbedScale      float32 // token embeddings are multiplied by it (Gemma: √dim); 0: 1
	AttnScale       float64 // attention score scale; 0: 1/√HeadDim
	AttnSoftcap     float32 // attention scores s → c·tanh(s/c) (Gemma 2); 0: none
	FinalSoftcap    float32 // logits z → c·tanh(z/c) (Gemma 2); 0: none
	Experts         int     // mixture of experts: experts per layer; 0: dense FFN
	ExpertsUsed     int     // experts chosen per token (top-k of the router's softmax, renormalised)
	ExpertHiddenDim int     // inner width of one expert's FFN
	// ExpertGating is how router logits r become expert weights: "" (the
	// softmax of moe.go) or GatingSigmoid (lfm2moe: p = σ(r), the experts
	// with the largest p + the layer's selection bias chosen, their p
	// normalised to sum 1).
	ExpertGating string
	// RouterSelBias (lfm2moe): each σ router has a per-layer selection
	// bias (exp_probs_b, which llama.cpp requires; Hugging Face
	// use_expert_bias); false: the experts are chosen by p alone.
	RouterSelBias bool
	DenseLead     int // the first DenseLead layers of an MoE model have a dense FFN (leading_dense_block_count)
	// SharedExpertHiddenDim (qwen35moe): inner width of the shared expert,
	// a SwiGLU FFN every token runs beside its chosen experts, its output
	// scaled by σ(w·x); 0: none.
	SharedExpertHiddenDim int

	// Hybrid models (hybrid.go): Recurrent[l] marks the layers whose token
	// mixer is recurrent (a gated delta net or a short convolution) instead
	// of attention; nil: every layer attends. Only attention layers have
	// K/V in the cache (CacheLayers); the recurrent ones keep a per-sequence
	// state (StateFloats).
	Recurrent  []bool
	ConvKernel int // causal convolution width d_conv (ssm.conv_kernel, shortconv.l_cache)
	// Gated delta net (qwen35): SSMKHeads key heads and SSMVHeads value
	// heads (a multiple; value head h reads key head h mod SSMKHeads), each
	// SSMHeadDim wide. 0: the recurrent layers are short convolutions.
	SSMKHeads, SSMVHeads, SSMHeadDim int
	// Mamba-2 (granitehybrid, mamba2.go): MambaHeads heads of
	// MambaInner/MambaHeads channels, MambaGroups groups of B and C, each
	// MambaState wide; 0: not a Mamba-2 model.
	MambaInner, MambaState, MambaHeads, MambaGroups int
	// AttnGate (qwen35): attn_q yields [query ‖ gate] per head and the
	// attention output is multiplied by σ(gate) before attn_output.
	AttnGate bool

	// Per-layer variations (zero values: off; see layers.go).
	NoRopeStep     int   // layer l has no RoPE when (l+1) % NoRopeStep == 0 (SmolLM3: 4)
	HeadDimSWA     int   // head dim of the windowed layers (Gemma 4); 0: HeadDim
	KVHeadsSWA     int   // KV heads of the windowed layers (Gemma 4 31B); 0: KVHeads
	RopeDimSWA     int   // rotated dims of the windowed layers; 0: RopeDim
	FFNLengths     []int // (Layers) FFN inner width per layer (Gemma 4); nil: HiddenDim everywhere
	SharedKVLayers int   // the last this many layers own no KV cache and read an earlier layer's (Gemma 4)
	PerLayerDim    int   // width of Gemma 4's per-layer token inputs; 0: none
	VNorm          bool  // unweighted RMSNorm of each V head (Gemma 4)
	AttnSinks      bool  // a learned per-head logit joins each softmax's denominator (gpt-oss)
	OAIMoE         bool  // gpt-oss experts: biased router, softmax over the top-k logits, biased experts, clamped SwiGLU

	// Pooling is how Embed pools the final hidden states of a sequence into
	// one embedding: PoolLast, PoolMean, PoolCLS or PoolNone (from the GGUF's
	// {arch}.pooling_type); "" when the file does not say (Embed: PoolLast).
	Pooling string
}

// Windowed reports whether layer l attends over a sliding window.
func (c *Config) Windowed(l int) bool {
	return c.SlidingWindow > 0 && (c.SWALayers == nil || l < len(c.SWALayers) && c.SWALayers[l])
}

// Window returns how many positions (ending at the query's) layer l
// attends to; 0: all.
func (c *Config) Window(l int) int {
	if c.Windowed(l) {
		return c.SlidingWindow
	}
	return 0
}

// AttentionScale is the factor of q·k before the softmax.
func (c *Config) AttentionScale() float64 { return c.attnScale() }

// FFNActivation names the feed-forward block: "swiglu", "geglu" (tanh
// GELU gate), "gelu" (GPT-2's ungated MLP), "moe-swiglu", "moe-swiglu-oai"
// (gpt-oss) or "geglu+moe-geglu" (Gemma 4's MoE layers).
func (c *Config) FFNActivation() string {
	switch {
	case c.Experts > 0 && c.OAIMoE:
		return "moe-swiglu-oai"
	case c.Experts > 0 && c.GELUGate:
		return "geglu+moe-geglu" // Gemma 4: a dense GeGLU FFN beside GeGLU experts
	case c.Experts > 0:
		return "moe-swiglu"
	case c.Arch == ArchGPT2:
		return "gelu"
	case c.GELUGate:
		return "geglu"
	}
	return "swiglu"
}

// attnScale is the factor of q·k before the softmax.
func (c *Config) attnScale() float64 {
	if c.AttnScale > 0 {
		return c.AttnScale
	}
	return 1 / math.Sqrt(float64(c.HeadDim))
}

// RopeScaling adjusts RoPE frequencies for context extension.
type RopeScaling struct {
	Type   string  // "" (none), "linear" (positions / Factor), "llama3"
	Factor float64 // scaling factor
	// llama3 only: frequencies with wavelength above OrigContext/LowFreqFactor
	// are divided by Factor, below OrigContext/HighFreqFactor kept, and
	// smoothly interpolated in between.
	LowFreqFactor, HighFreqFactor float64
	OrigContext                   int
	// yarn only: the pair ramp between BetaFast and BetaSlow rotations
	// per original context (llama.cpp's yarn_beta_fast/slow; 0: 32, 1).
	BetaFast, BetaSlow float64
}

// QDim is the width of all query heads, Heads·HeadDim.
func (c *Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is the width of all key (or value) heads, KVHeads·HeadDim.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// validate checks the shape relations the forward pass relies on.
func (c *Config) validate() error {
	switch {
	case c.Dim <= 0 || c.HiddenDim <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.Vocab <= 0 || c.HeadDim <= 0:
		return fmt.Errorf("model: invalid dimensions dim=%d hidden=%d layers=%d heads=%d kv_heads=%d head_dim=%d vocab=%d",
			c.Dim, c.HiddenDim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.Vocab)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("model: %d heads is not a multiple of %d kv heads", c.Heads, c.KVHeads)
	case c.ContextLen <= 0:
		return fmt.Errorf("model: invalid context length %d", c.ContextLen)
	case c.RopeDim < 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return fmt.Errorf("model: invalid rope dimension %d for head dim %d", c.RopeDim, c.HeadDim)
	case c.SlidingWindow < 0:
		return fmt.Errorf("model: invalid sliding window %d", c.SlidingWindow)
	case c.SWALayers != nil && len(c.SWALayers) != c.Layers:
		return fmt.Errorf("model: sliding-window pattern has %d layers, model %d", len(c.SWALayers), c.Layers)
	case c.Experts < 0 || c.ExpertsUsed < 0 || c.Experts > 0 && (c.ExpertsUsed == 0 || c.ExpertsUsed > c.Experts || c.ExpertHiddenDim <= 0):
		return fmt.Errorf("model: invalid mixture of experts: %d experts, %d used, expert width %d", c.Experts, c.ExpertsUsed, c.ExpertHiddenDim)
	case c.DenseLead < 0 || c.DenseLead > c.Layers || c.DenseLead > 0 && (c.Experts == 0 || c.HiddenDim <= 0):
		return fmt.Errorf("model: invalid leading dense layers: %d of %d layers (%d experts, dense width %d)", c.DenseLead, c.Layers, c.Experts, c.HiddenDim)
	case c.ExpertGating != "" && c.ExpertGating != GatingSigmoid:
		return fmt.Errorf("model: unknown expert gating %q", c.ExpertGating)
	case c.AttnSoftcap < 0 || c.FinalSoftcap < 0 || c.AttnScale < 0 || c.RopeAttnFactor < 0 || c.RopeThetaSWA < 0:
		return fmt.Errorf("model: invalid soft-cap, attention scale, rope attention factor or rope base")
	}
	if err := c.validateLayers(); err != nil {
		return err
	}
	if c.RopeDim > 0 && !(c.RopeTheta > 0) {
		return fmt.Errorf("model: invalid rope theta %g", c.RopeTheta)
	}
	if err := c.validateHybrid(); err != nil {
		return err
	}
	if c.Arch == ArchGPT2 && c.Dim != c.QDim() {
		return fmt.Errorf("model: gpt2 needs heads·head_dim = dim, have %d·%d != %d", c.Heads, c.HeadDim, c.Dim)
	}
	return nil
}

// GenerationDefaults are the model's own generation settings.
type GenerationDefaults struct {
	EOG          []int           // token ids that end generation
	ChatTemplate string          // Jinja chat template; "" if none
	Sampling     json.RawMessage // Hugging Face generation_config.json as given (nil if none)
}

// TensorDesc describes one weight tensor of the file(s).
type TensorDesc struct {
	Name  string
	Type  tensor.DType
	Shape []int // row-major (outermost first); a matrix is (rows, cols)
}

// Model is a loaded model ready to run.
type Model struct {
	Config
	Tokenizer *tokenizer.Tokenizer // nil when the model carries none and Options.Tokenizer is empty
	Gen       GenerationDefaults

	Files   []string     // the weight files, in load order
	Tensors []TensorDesc // every tensor in the weight files, in file order

	pool    *tensor.Pool
	ownPool bool // pool was created by Load and is closed by Close
	w       weights
	invFreq []float64 // (RopeDim/2) RoPE angular frequency per dimension pair
	// invFreqSWA is invFreq of the windowed layers when they have their own
	// base (RopeThetaSWA); nil otherwise.
	invFreqSWA []float64
	longRope   [2][]float32 // (RopeDim/2) LongRoPE factors long, short, when the model has both (Phi-3)
	closers    []io.Closer
	arena      *mmap.Mapping // the anonymous copy of the matrices (weightmem.go); nil when they are mapped
	// placement and placementWhy: where the weights are (WeightMemory).
	placement, placementWhy string

	mu  sync.Mutex // serialises Forward (ws and moe are shared)
	ws  workspace
	moe moeWork
	hw  hybridWork // recurrent mixers' activations (hybrid.go)
	job parJob     // the For job of attention, norms, RoPE, activations; reused
}

// Close releases the file mappings and the worker
// pool Load created (not one passed in Options.Pool). The Model must not be
// used afterwards.
func (m *Model) Close() error {
	m.mu.Lock()
	if m.ownPool && m.pool != nil {
		m.pool.Close()
		m.pool = nil
	}
	m.mu.Unlock()
	var first error
	for _, c := range m.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	m.closers = nil
	return first
}

// LongRopeFactors returns the model's LongRoPE per-pair frequency
// divisors (llama.cpp's rope_factors_long and rope_factors_short), nil if
// it has none; the ones in use are Config.RopeFactors.
func (m *Model) LongRopeFactors() (long, short []float32) { return m.longRope[0], m.longRope[1] }

// RopeFreqFactors returns the per-pair frequency divisors the global
// layers use (llama.cpp's rope_freqs tensor: Llama 3 scaling read from a
// GGUF, Gemma 4's proportional RoPE), nil if none; a copy.
func (m *Model) RopeFreqFactors() []float32 {
	if m.w.ropeFreqs == nil || m.RopeFactors != llamacpp.RopeFreqs && m.Arch != ArchGemma4 {
		return nil
	}
	return slices.Clone(m.w.ropeFreqs)
}

// layerFreqs returns the RoPE frequencies of layer l.
func (m *Model) layerFreqs(l int) []float64 {
	if m.invFreqSWA != nil && m.Windowed(l) {
		return m.invFreqSWA
	}
	return m.invFreq
}

// Pool is the worker pool the model runs its kernels on.
func (m *Model) Pool() *tensor.Pool { return m.pool }

// KVBytesPerToken is the KV-cache memory one position takes in a cache of
// type t (K and V, all layers: 2·layers·kv_dim values, 4 bytes each for
// F32, 2 for F16, 34 per 32 for Q8_0).
//
// Only layers that own a cache count (Gemma 4's shared-KV layers read an
// earlier layer's), and each cache row is CacheKVDim wide.
func (m *Model) KVBytesPerToken(t tensor.DType) int64 {
	return int64(2*m.CacheLayers()) * int64(kvcache.RowBytes(t, m.CacheKVDim()))
}

// CheckKVType reports whether the attention can read a cache of type t:
// F32 and F16 always, Q8_0 when each head is whole 32-value blocks.
func (m *Model) CheckKVType(t tensor.DType) error {
	if err := kvcache.CheckType(t, m.CacheKVDim()); err != nil {
		return err
	}
	for l := range m.Layers {
		if hd := m.LayerHeadDim(l); t == tensor.Q8_0 && hd%32 != 0 {
			return fmt.Errorf("model: a q8_0 KV cache needs head_dim a multiple of 32, the model has %d (use f16)", hd)
		}
	}
	return nil
}

// NewCache allocates a float32 paged KV cache for ctxSize positions in
// total (ctxSize ≤ 0: the model's context length). The exact type the
// 1e-4 parity tests pin; NewCacheType takes another.
func (m *Model) NewCache(ctxSize int) (*kvcache.Cache, error) {
	return m.NewCacheType(ctxSize, tensor.F32)
}

// NewCacheType is NewCache with K and V stored as t (F32, F16 or Q8_0).
func (m *Model) NewCacheType(ctxSize int, t tensor.DType) (*kvcache.Cache, error) {
	if ctxSize <= 0 {
		ctxSize = m.ContextLen
	}
	if err := m.CheckKVType(t); err != nil {
		return nil, err
	}
	return m.NewCacheSeqs(ctxSize, t, DefaultStateSlots)
}

// DefaultStateSlots is the number of recurrent-state slots NewCacheType
// gives a hybrid model's cache (sequences holding a state at once).
const DefaultStateSlots = 16

// NewCacheSeqs is NewCacheType with, for a hybrid model, seqs
// recurrent-state slots (StateBytes each) beside the blocks; other models
// ignore seqs.
func (m *Model) NewCacheSeqs(ctxSize int, t tensor.DType, seqs int) (*kvcache.Cache, error) {
	if ctxSize <= 0 {
		ctxSize = m.ContextLen
	}
	if err := m.CheckKVType(t); err != nil {
		return nil, err
	}
	c, err := kvcache.ForTokensType(t, m.CacheLayers(), m.CacheKVDim(), ctxSize)
	if err != nil {
		return nil, err
	}
	if f := m.StateFloats(); f > 0 {
		if err := c.EnableStates(f, max(seqs, 1)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ParamCount is the number of weight elements in the files.
func (m *Model) ParamCount() int64 {
	var n int64
	for _, t := range m.Tensors {
		e := int64(1)
		for _, d := range t.Shape {
			e *= int64(d)
		}
		n += e
	}
	return n
}

// baseName is filepath.Base for error messages.
func baseName(p string) string { return filepath.Base(p) }
