package model

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"nanoserve/llamacpp"
	"nanoserve/safetensors"
	"nanoserve/tensor"
	"nanoserve/tokenizer"
)

// Hugging Face model directories: config.json (architecture and
// hyperparameters), model.safetensors or a sharded index (F32, F16 or BF16
// weights, used in place), generation_config.json (end-of-sequence ids and
// sampling defaults), the tokenizer files (tokenizer.Load) and
// tokenizer_config.json (chat template).
//
// Llama/Mistral/Qwen2 checkpoints rotate RoPE halves (NEOX), so their Q/K
// weights are used unpermuted. GPT-2 stores its linear layers as Conv1D,
// (in, out): those four matrices per layer are transposed into the heap.

// hfConfig is the subset of config.json we read. Pointers tell "absent".
type hfConfig struct {
	Architectures []string `json:"architectures"`
	ModelType     string   `json:"model_type"`

	HiddenSize        int      `json:"hidden_size"`
	IntermediateSize  int      `json:"intermediate_size"`
	NumHiddenLayers   int      `json:"num_hidden_layers"`
	NumAttentionHeads int      `json:"num_attention_heads"`
	NumKeyValueHeads  *int     `json:"num_key_value_heads"`
	HeadDim           *int     `json:"head_dim"`
	RMSNormEps        *float64 `json:"rms_norm_eps"`
	RopeTheta         *float64 `json:"rope_theta"`
	RopeScaling       *struct {
		RopeType        string    `json:"rope_type"`
		Type            string    `json:"type"`
		Factor          float64   `json:"factor"`
		LowFreqFactor   float64   `json:"low_freq_factor"`
		HighFreqFactor  float64   `json:"high_freq_factor"`
		OrigMaxPosition int       `json:"original_max_position_embeddings"`
		BetaFast        float64   `json:"beta_fast"` // yarn (gpt-oss)
		BetaSlow        float64   `json:"beta_slow"`
		LongFactor      []float64 `json:"long_factor"`  // Phi-3 longrope (su)
		ShortFactor     []float64 `json:"short_factor"` // Phi-3 longrope (su)
	} `json:"rope_scaling"`
	MaxPositionEmbeddings int   `json:"max_position_embeddings"`
	TieWordEmbeddings     *bool `json:"tie_word_embeddings"`
	SlidingWindow         *int  `json:"sliding_window"`
	UseSlidingWindow      *bool `json:"use_sliding_window"`

	// SmolLM3 (modeling_smollm3.py): no_rope_layers[l] is 1 where layer l
	// uses RoPE, 0 where it does not (every no_rope_layer_interval-th).
	NoRopeLayers        []int `json:"no_rope_layers"`
	NoRopeLayerInterval int   `json:"no_rope_layer_interval"`

	// Mixture of experts: Mixtral (num_local_experts; intermediate_size is
	// the expert width), Qwen3-MoE (num_experts, moe_intermediate_size,
	// norm_topk_prob).
	NumLocalExperts     *int     `json:"num_local_experts"`
	NumExperts          *int     `json:"num_experts"`
	NumExpertsPerTok    int      `json:"num_experts_per_tok"`
	MoEIntermediateSize int      `json:"moe_intermediate_size"`
	NormTopKProb        *bool    `json:"norm_topk_prob"`
	ExpertsPerToken     int      `json:"experts_per_token"` // GptOssConfig's other name for num_experts_per_tok
	SwigluLimit         *float64 `json:"swiglu_limit"`      // gpt-oss: 7 (llama.cpp's constant)

	// Gemma 2/3 (modeling_gemma2.py, modeling_gemma3.py): queries scaled
	// by query_pre_attn_scalar^-0.5, soft-caps, the windowed-layer pattern
	// (sliding_window_pattern, or the newer per-layer layer_types) and
	// the windowed layers' RoPE base (rope_local_base_freq).
	QueryPreAttnScalar    *float64 `json:"query_pre_attn_scalar"`
	AttnLogitSoftcapping  *float64 `json:"attn_logit_softcapping"`
	FinalLogitSoftcapping *float64 `json:"final_logit_softcapping"`
	SlidingWindowPattern  *int     `json:"sliding_window_pattern"`
	LayerTypes            []string `json:"layer_types"`
	RopeLocalBaseFreq     *float64 `json:"rope_local_base_freq"`

	// Phi-3 (modeling_phi3.py).
	PartialRotaryFactor *float64 `json:"partial_rotary_factor"`
	OrigMaxPosition     int      `json:"original_max_position_embeddings"`

	// Qwen3.5 (Qwen3_5TextConfig): the linear attention's shapes, the
	// layer pattern (layer_types "linear_attention" / "full_attention", or
	// full_attention_interval), rope_parameters; a vision-language
	// checkpoint nests all of it in text_config.
	LinearConvKernelDim   int  `json:"linear_conv_kernel_dim"`
	LinearKeyHeadDim      int  `json:"linear_key_head_dim"`
	LinearValueHeadDim    int  `json:"linear_value_head_dim"`
	LinearNumKeyHeads     int  `json:"linear_num_key_heads"`
	LinearNumValueHeads   int  `json:"linear_num_value_heads"`
	FullAttentionInterval *int `json:"full_attention_interval"`
	// Qwen3.5-MoE (Qwen3_5MoeTextConfig): the shared expert's width.
	SharedExpertIntermediateSize int               `json:"shared_expert_intermediate_size"`
	RopeParameters               *hfRopeParameters `json:"rope_parameters"`
	TextConfig                   json.RawMessage   `json:"text_config"`

	// Gemma 4 (Gemma4TextConfig; load_hf_gemma4.go).
	hfGemma4

	// LFM2 (Lfm2Config): layer_types "conv" / "full_attention".
	NormEps               *float64 `json:"norm_eps"`
	ConvLCache            int      `json:"conv_L_cache"`
	ConvBias              bool     `json:"conv_bias"`
	BlockFFDim            int      `json:"block_ff_dim"`
	BlockMultipleOf       int      `json:"block_multiple_of"`
	BlockFFNDimMultiplier *float64 `json:"block_ffn_dim_multiplier"`
	BlockAutoAdjustFFDim  bool     `json:"block_auto_adjust_ff_dim"`
	// LFM2-MoE (Lfm2MoeConfig; num_experts, num_experts_per_tok,
	// moe_intermediate_size and norm_topk_prob above): intermediate_size
	// is the dense leading layers' width.
	NumDenseLayers      *int     `json:"num_dense_layers"`
	UseExpertBias       *bool    `json:"use_expert_bias"`
	RoutedScalingFactor *float64 `json:"routed_scaling_factor"`
	TieEmbedding        *bool    `json:"tie_embedding"` // LiquidAI's name for tie_word_embeddings

	// Granite (GraniteConfig, GraniteMoeConfig, GraniteMoeSharedConfig;
	// load_hf_granite.go).
	hfGranite

	// GPT-2
	NEmbd            int      `json:"n_embd"`
	NLayer           int      `json:"n_layer"`
	NHead            int      `json:"n_head"`
	NInner           *int     `json:"n_inner"`
	NPositions       int      `json:"n_positions"`
	LayerNormEpsilon *float64 `json:"layer_norm_epsilon"`
}

func loadHF(dir string, ctx int) (*Model, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	var hc hfConfig
	if err := json.Unmarshal(raw, &hc); err != nil {
		return nil, fmt.Errorf("model: %s: %w", filepath.Join(dir, "config.json"), err)
	}
	if len(hc.TextConfig) > 0 { // a vision-language checkpoint: its language model's settings
		if err := json.Unmarshal(hc.TextConfig, &hc); err != nil {
			return nil, fmt.Errorf("model: %s: text_config: %w", filepath.Join(dir, "config.json"), err)
		}
	}
	m := &Model{}
	c := &m.Config
	c.Format = "hf"
	if len(hc.Architectures) == 0 {
		return nil, fmt.Errorf("%w: config.json names no architectures (model_type %q)", ErrUnknownArch, hc.ModelType)
	}
	class := hc.Architectures[0]
	ggufArch, ok := llamacpp.HFArchs[class]
	if !ok {
		names := make([]string, 0, len(llamacpp.HFArchs))
		for n := range llamacpp.HFArchs {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w %q (supported: %s)", ErrUnknownArch, class, strings.Join(names, ", "))
	}
	arch := llamacpp.Archs[ggufArch]
	c.Arch = archOf(arch)
	if err := hc.fill(c, arch); err != nil {
		return nil, err
	}

	st, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if err := m.hfWeights(st, &hc, arch, ctx); err != nil {
		st.Close()
		return nil, err
	}
	m.closers = append(m.closers, st)
	m.Files = hfWeightFiles(dir)
	for _, t := range st.Tensors {
		ty, err := t.Type()
		if err != nil {
			ty = tensor.DType(^uint32(0))
		}
		m.Tensors = append(m.Tensors, TensorDesc{Name: t.Name, Type: ty, Shape: slices.Clone(t.Shape)})
	}

	if err := m.hfExtras(dir); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// fill sets the Config's hyperparameters from config.json.
func (hc *hfConfig) fill(c *Config, arch *llamacpp.Arch) error {
	if c.Arch == ArchGPT2 {
		c.Dim, c.Layers, c.Heads, c.KVHeads = hc.NEmbd, hc.NLayer, hc.NHead, hc.NHead
		c.HiddenDim = 4 * hc.NEmbd
		if hc.NInner != nil {
			c.HiddenDim = *hc.NInner
		}
		c.ContextLen = hc.NPositions
		c.NormEps = 1e-5
		if hc.LayerNormEpsilon != nil {
			c.NormEps = float32(*hc.LayerNormEpsilon)
		}
		c.Tied = true
		if c.Heads <= 0 || c.Dim%c.Heads != 0 {
			return fmt.Errorf("model: config.json: n_embd %d is not a multiple of n_head %d", c.Dim, c.Heads)
		}
		c.HeadDim = c.Dim / c.Heads
		return nil
	}
	c.Dim, c.HiddenDim, c.Layers, c.Heads = hc.HiddenSize, hc.IntermediateSize, hc.NumHiddenLayers, hc.NumAttentionHeads
	c.KVHeads = c.Heads
	if hc.NumKeyValueHeads != nil {
		c.KVHeads = *hc.NumKeyValueHeads
	}
	if c.Heads <= 0 {
		return fmt.Errorf("model: config.json: invalid num_attention_heads %d", c.Heads)
	}
	c.HeadDim = c.Dim / c.Heads
	if hc.HeadDim != nil {
		c.HeadDim = *hc.HeadDim
	} else if c.Dim%c.Heads != 0 {
		return fmt.Errorf("model: config.json: hidden_size %d is not a multiple of num_attention_heads %d", c.Dim, c.Heads)
	}
	c.ContextLen = hc.MaxPositionEmbeddings
	c.NormEps = 1e-6
	if hc.RMSNormEps != nil {
		c.NormEps = float32(*hc.RMSNormEps)
	}
	c.RopeTheta = 10000
	if hc.RopeTheta != nil {
		c.RopeTheta = *hc.RopeTheta
	}
	c.RopeDim, c.RopeNeox = c.HeadDim, true
	if arch.NoRopeStep > 0 {
		if err := hc.noRope(c, arch.NoRopeStep); err != nil {
			return err
		}
	}
	if rs := hc.RopeScaling; rs != nil {
		typ := rs.RopeType
		if typ == "" {
			typ = rs.Type
		}
		switch typ {
		case "default", "":
		case "longrope", "su": // Phi-3: per-pair factors, read in hfWeights
			c.RopeScaling.OrigContext = cmp.Or(rs.OrigMaxPosition, hc.OrigMaxPosition)
		case "linear", "llama3":
			c.RopeScaling = RopeScaling{Type: typ, Factor: rs.Factor, LowFreqFactor: rs.LowFreqFactor,
				HighFreqFactor: rs.HighFreqFactor, OrigContext: rs.OrigMaxPosition}
		case "yarn":
			// As llama.cpp runs it: the correction dims floored and ceiled
			// (transformers' truncate=false for gpt-oss is not followed).
			c.RopeScaling = RopeScaling{Type: typ, Factor: rs.Factor, OrigContext: cmp.Or(rs.OrigMaxPosition, c.ContextLen),
				BetaFast: rs.BetaFast, BetaSlow: rs.BetaSlow}
		default:
			return fmt.Errorf("model: config.json: unsupported rope_scaling type %q", typ)
		}
	}
	if hc.TieWordEmbeddings != nil {
		c.Tied = *hc.TieWordEmbeddings
	}
	if hc.SlidingWindow != nil && (c.Arch == ArchLlama || hc.UseSlidingWindow != nil && *hc.UseSlidingWindow) {
		c.SlidingWindow = *hc.SlidingWindow
	}
	return hc.fillArch(c, arch)
}

// fillArch reads the hyperparameters of the blocks the newer
// architectures add, with transformers' field names and defaults.
func (hc *hfConfig) fillArch(c *Config, arch *llamacpp.Arch) error {
	c.QKNorm = arch.QKNorm
	if arch.MoE {
		n := hc.NumLocalExperts // MixtralConfig
		if n == nil {
			n = hc.NumExperts // Qwen3MoeConfig
		}
		if n != nil && *n > 0 {
			c.Experts, c.ExpertsUsed = *n, hc.NumExpertsPerTok
			c.ExpertHiddenDim = c.HiddenDim // Mixtral's experts are intermediate_size wide
			if hc.MoEIntermediateSize > 0 {
				c.ExpertHiddenDim = hc.MoEIntermediateSize
			}
		}
		// llama.cpp renormalises the top-k weights (build_moe_ffn norm_w =
		// true for qwen3moe, qwen35moe and lfm2moe); a checkpoint that does
		// not is another model.
		if hc.NormTopKProb != nil && !*hc.NormTopKProb {
			return fmt.Errorf("model: config.json: norm_topk_prob false is not supported (llama.cpp renormalises)")
		}
	}
	if arch.Gemma {
		c.PostNorms, c.GELUGate = true, true
		c.EmbedScale = float32(math.Sqrt(float64(c.Dim)))
		if hc.QueryPreAttnScalar != nil && *hc.QueryPreAttnScalar > 0 {
			c.AttnScale = 1 / math.Sqrt(*hc.QueryPreAttnScalar)
		}
		if hc.FinalLogitSoftcapping != nil {
			c.FinalSoftcap = float32(*hc.FinalLogitSoftcapping)
		}
		if hc.AttnLogitSoftcapping != nil && arch.Name == "gemma2" {
			c.AttnSoftcap = float32(*hc.AttnLogitSoftcapping)
		}
		c.SlidingWindow = 0
		if hc.SlidingWindow != nil {
			c.SlidingWindow = *hc.SlidingWindow
		}
		switch {
		case len(hc.LayerTypes) == c.Layers:
			c.SWALayers = make([]bool, c.Layers)
			for l, t := range hc.LayerTypes {
				c.SWALayers[l] = t == "sliding_attention"
			}
		case hc.SlidingWindowPattern != nil:
			c.SWALayers = llamacpp.SWALayers(c.Layers, *hc.SlidingWindowPattern)
		default:
			c.SWALayers = llamacpp.SWALayers(c.Layers, arch.SWAPattern)
		}
		if arch.Name == "gemma3" {
			c.RopeThetaSWA = 10000 // Gemma3TextConfig.rope_local_base_freq's default
			if hc.RopeLocalBaseFreq != nil {
				c.RopeThetaSWA = *hc.RopeLocalBaseFreq
			}
		}
	}
	if arch.OAIMoE {
		if err := hc.fillGptOss(c, arch); err != nil {
			return err
		}
	}
	if arch.NoWindow {
		c.SlidingWindow = 0 // as llama.cpp runs Phi-3 (src/models/phi3.cpp)
	}
	if arch.Name == "lfm2" || arch.Name == "lfm2moe" {
		if err := hc.fillLFM2(c); err != nil {
			return err
		}
	}
	if arch.Name == "qwen35" || arch.Name == "qwen35moe" {
		if err := hc.fillQwen35(c); err != nil {
			return err
		}
	}
	if arch.Gemma4 {
		if err := hc.fillGemma4(c); err != nil {
			return err
		}
	}
	if arch.Granite {
		if err := hc.fillGranite(c); err != nil {
			return err
		}
	}
	if arch.Name == "phi3" && hc.PartialRotaryFactor != nil {
		c.RopeDim = int(*hc.PartialRotaryFactor*float64(c.Dim)) / c.Heads
	}
	return nil
}

// fillGptOss reads GptOssConfig: experts of intermediate_size, sinks,
// windows on the layer_types' sliding layers (llama.cpp: every even
// layer, load_swa_pattern(ml, 2)), the clamped SwiGLU's limit.
func (hc *hfConfig) fillGptOss(c *Config, arch *llamacpp.Arch) error {
	n := hc.NumLocalExperts
	if n == nil || *n <= 0 {
		return fmt.Errorf("model: config.json: gpt-oss needs num_local_experts")
	}
	c.Experts, c.ExpertsUsed = *n, cmp.Or(hc.NumExpertsPerTok, hc.ExpertsPerToken)
	c.ExpertHiddenDim = c.HiddenDim
	c.AttnSinks, c.OAIMoE = arch.Sinks, arch.OAIMoE
	if hc.SwigluLimit != nil && *hc.SwigluLimit != oaiLimit {
		return fmt.Errorf("model: config.json: swiglu_limit %g, llama.cpp's gpt-oss runs %g", *hc.SwigluLimit, float64(oaiLimit))
	}
	c.SlidingWindow = 0
	if hc.SlidingWindow != nil {
		c.SlidingWindow = *hc.SlidingWindow
	}
	c.SWALayers = llamacpp.SWALayers(c.Layers, arch.SWAPattern)
	if hc.LayerTypes != nil {
		if len(hc.LayerTypes) != c.Layers {
			return fmt.Errorf("model: config.json: layer_types has %d entries for %d layers", len(hc.LayerTypes), c.Layers)
		}
		for l, t := range hc.LayerTypes {
			if (t == "sliding_attention") != c.SWALayers[l] {
				return fmt.Errorf("model: config.json: layer_types[%d] = %q, but llama.cpp windows gpt-oss's even layers", l, t)
			}
		}
	}
	return nil
}

// noRope reads SmolLM3's RoPE-less layers. llama.cpp fixes them at every
// step-th layer (smollm3.cpp; no GGUF key), so a config.json saying
// otherwise is refused rather than run differently from its GGUF form.
func (hc *hfConfig) noRope(c *Config, step int) error {
	c.NoRopeStep = step
	if hc.NoRopeLayerInterval != 0 && hc.NoRopeLayerInterval != step {
		return fmt.Errorf("model: config.json: no_rope_layer_interval %d, llama.cpp's %s runs %d", hc.NoRopeLayerInterval, c.Arch, step)
	}
	if hc.NoRopeLayers == nil {
		return nil
	}
	if len(hc.NoRopeLayers) != c.Layers {
		return fmt.Errorf("model: config.json: no_rope_layers has %d entries for %d layers", len(hc.NoRopeLayers), c.Layers)
	}
	for l, r := range hc.NoRopeLayers {
		if want := (l+1)%step != 0; (r != 0) != want {
			return fmt.Errorf("model: config.json: no_rope_layers[%d] = %d, but llama.cpp's %s has RoPE on layer %d: %v", l, r, c.Arch, l, want)
		}
	}
	return nil
}

// archOf is the Config.Arch of a llama.cpp architecture.
func archOf(a *llamacpp.Arch) string {
	switch a.Name {
	case "llama", "mistral":
		return ArchLlama
	case "qwen2":
		return ArchQwen2
	case "gpt2":
		return ArchGPT2
	}
	return a.Name
}

// hfLoader reads safetensors tensors, keeping the first error.
type hfLoader struct {
	st *safetensors.File
	firstErr
}

func (h *hfLoader) get(name string, required bool) *safetensors.Tensor {
	t, ok := h.st.Tensor(name)
	if rest, isModel := strings.CutPrefix(name, "model."); !ok && isModel {
		t, ok = h.st.Tensor(lmPrefix + rest) // a vision-language checkpoint's language model
	}
	if !ok && required {
		h.fail(fmt.Errorf("model: missing tensor %s", name))
	}
	return t
}

// mat returns a Linear weight (out, in) = (rows, cols) in place.
func (h *hfLoader) mat(name string, rows, cols int, required bool) *tensor.Mat {
	t := h.get(name, required)
	if t == nil {
		return nil
	}
	ty, err := computableType(t, name)
	if err != nil {
		h.fail(err)
		return nil
	}
	shape := t.Shape
	if len(shape) == 3 && shape[1] == 1 { // a Conv1d kernel (out, 1, width): squeezed, same bytes
		shape = []int{shape[0], shape[2]}
	}
	if len(shape) != 2 || shape[0] != rows || shape[1] != cols {
		h.fail(fmt.Errorf("model: tensor %s has shape %v, want [%d %d] (config.json)", name, t.Shape, rows, cols))
		return nil
	}
	data := f32Aligned(ty, t.Data)
	m, err := tensor.NewMat(ty, rows, cols, data)
	if err != nil {
		h.fail(fmt.Errorf("model: tensor %s: %w", name, err))
	}
	return m
}

// computableType is the element type of checkpoint tensor t (name), or an
// error when it is not one the tensor kernels multiply by (tensor.Computable).
func computableType(t *safetensors.Tensor, name string) (tensor.DType, error) {
	ty, err := t.Type()
	if err == nil && !tensor.Computable(ty) {
		err = fmt.Errorf("model: tensor %s has unsupported type %s", name, t.DType)
	}
	return ty, err
}

// f32Aligned is data, copied to a new (aligned) buffer when ty is F32 and
// data does not start on a 4-byte boundary: a safetensors header may
// leave the data misaligned, and the kernels view F32 bytes as []float32.
func f32Aligned(ty tensor.DType, data []byte) []byte {
	if ty == tensor.F32 && uintptr(unsafe.Pointer(unsafe.SliceData(data)))%4 != 0 {
		return slices.Clone(data)
	}
	return data
}

// conv1D returns a GPT-2 Conv1D weight stored (in, out) as an (out, in)
// matrix: transposed into a new buffer, same element type.
func (h *hfLoader) conv1D(name string, in, out int) *tensor.Mat {
	t := h.get(name, true)
	if t == nil {
		return nil
	}
	src := h.mat(name, in, out, true)
	if src == nil {
		return nil
	}
	es := len(src.Data) / (in * out)
	dst := make([]byte, len(src.Data)+4)
	// Align the copy for float32 views.
	off := int((4 - uintptr(unsafe.Pointer(&dst[0]))%4) % 4)
	dst = dst[off : off+len(src.Data)]
	for i := range in {
		for o := range out {
			copy(dst[(o*in+i)*es:(o*in+i+1)*es], src.Data[(i*out+o)*es:(i*out+o+1)*es])
		}
	}
	return &tensor.Mat{Type: src.Type, Rows: out, Cols: in, Data: dst}
}

// vec returns a 1-D tensor of n elements as float32.
func (h *hfLoader) vec(name string, n int, required bool) []float32 {
	t := h.get(name, required)
	if t == nil {
		return nil
	}
	ty, err := t.Type()
	if err != nil {
		h.fail(err)
		return nil
	}
	// A one-output linear layer's (1, n) weight is a vector too
	// (Qwen3.5-MoE's shared_expert_gate; the converter squeezes it).
	if !slices.Equal(t.Shape, []int{n}) && !slices.Equal(t.Shape, []int{1, n}) {
		h.fail(fmt.Errorf("model: tensor %s has shape %v, want [%d] (config.json)", name, t.Shape, n))
		return nil
	}
	data := t.Data
	if ty == tensor.F32 && uintptr(unsafe.Pointer(unsafe.SliceData(data)))%4 != 0 {
		ty, data = tensor.F32, slices.Clone(data)
		v := make([]float32, n)
		tensor.DequantizeRow(v, ty, data)
		return v
	}
	v, err := decodeVec(ty, data, n)
	if err != nil {
		h.fail(fmt.Errorf("model: tensor %s: %w", name, err))
	}
	return v
}

// hfWeights maps the checkpoint's tensors into m.w.
func (m *Model) hfWeights(st *safetensors.File, hc *hfConfig, arch *llamacpp.Arch, ctx int) error {
	c := &m.Config
	h := &hfLoader{st: st}
	w := &m.w
	dim, qd, kvd, hid := c.Dim, c.QDim(), c.KVDim(), c.HiddenDim
	if c.Arch == ArchGPT2 {
		pre := "transformer."
		if _, ok := st.Tensor(pre + "wte.weight"); !ok {
			pre = "" // checkpoints saved from GPT2Model
		}
		emb := h.get(pre+"wte.weight", true)
		if emb == nil || len(emb.Shape) != 2 {
			return h.errOr(fmt.Errorf("model: tensor %swte.weight is not a matrix", pre))
		}
		c.Vocab = emb.Shape[0]
		w.tokEmb = h.mat(pre+"wte.weight", c.Vocab, dim, true)
		w.posEmb = h.mat(pre+"wpe.weight", c.ContextLen, dim, true)
		w.layers = make([]layerWeights, c.Layers)
		for i := range w.layers {
			l := &w.layers[i]
			p := fmt.Sprintf("%sh.%d.", pre, i)
			l.attnNorm = h.vec(p+"ln_1.weight", dim, true)
			l.attnNormB = h.vec(p+"ln_1.bias", dim, true)
			l.wqkv = h.conv1D(p+"attn.c_attn.weight", dim, qd+2*kvd)
			l.bqkv = h.vec(p+"attn.c_attn.bias", qd+2*kvd, false)
			l.wo = h.conv1D(p+"attn.c_proj.weight", qd, dim)
			l.bo = h.vec(p+"attn.c_proj.bias", dim, false)
			l.ffnNorm = h.vec(p+"ln_2.weight", dim, true)
			l.ffnNormB = h.vec(p+"ln_2.bias", dim, true)
			l.wUp = h.conv1D(p+"mlp.c_fc.weight", dim, hid)
			l.bUp = h.vec(p+"mlp.c_fc.bias", hid, false)
			l.wDown = h.conv1D(p+"mlp.c_proj.weight", hid, dim)
			l.bDown = h.vec(p+"mlp.c_proj.bias", dim, false)
		}
		w.outNorm = h.vec(pre+"ln_f.weight", dim, true)
		w.outNormB = h.vec(pre+"ln_f.bias", dim, true)
		w.output = w.tokEmb
		return h.err
	}

	emb := h.get("model.embed_tokens.weight", true)
	if emb == nil || len(emb.Shape) != 2 {
		return h.errOr(errors.New("model: tensor model.embed_tokens.weight is not a matrix"))
	}
	c.Vocab = emb.Shape[0]
	if err := c.validate(); err != nil {
		return err
	}
	r, err := newHFReader(st, arch.Name)
	if err != nil {
		return err
	}
	if llamacpp.PermutesQK(arch.Name) && !c.RopeNeox {
		// Run in llama.cpp's layout (Granite): Q/K rows permuted as the
		// converter permutes them, RoPE or not, so q·k sums in its order.
		r.qkHeadDim = c.HeadDim
	}
	build := m.buildWeights
	if arch.Hybrid {
		build = func(_ *llamacpp.Arch, r weightReader) error { return m.buildHybridWeights(r) }
	}
	if err := build(arch, r); err != nil {
		return err
	}
	if arch.Gemma4 {
		m.w.ropeFreqs = gemma4RopeFreqs(c, hc.gemma4FullRopeFraction)
		c.RopeFactors = "rope_parameters.full_attention (proportional)"
	}
	if rs := hc.RopeScaling; rs != nil && len(rs.LongFactor) > 0 {
		// Phi-3 longrope: the factors llama.cpp's converter writes as
		// rope_factors_long/short, chosen like llama_model::get_rope_factors,
		// and the attention factor it computes (conversion/phi.py:
		// √(1 + ln(scale)/ln(orig)) for scale = max positions / orig).
		orig := c.RopeScaling.OrigContext
		if orig <= 0 || len(rs.LongFactor) != c.RopeDim/2 || len(rs.ShortFactor) != c.RopeDim/2 {
			return fmt.Errorf("model: config.json: longrope needs original_max_position_embeddings and %d long and short factors", c.RopeDim/2)
		}
		if ctx == 0 {
			ctx = c.ContextLen
		}
		f, name := rs.ShortFactor, "short_factor"
		if ctx > orig {
			f, name = rs.LongFactor, "long_factor"
		}
		m.w.ropeFreqs = make([]float32, len(f))
		for i, v := range f {
			m.w.ropeFreqs[i] = float32(v)
		}
		for i, v := range rs.LongFactor {
			m.longRope[0] = append(m.longRope[0], float32(v))
			m.longRope[1] = append(m.longRope[1], float32(rs.ShortFactor[i]))
		}
		c.RopeFactors = "rope_scaling." + name
		if scale := float64(c.ContextLen) / float64(orig); scale > 1 {
			// rounded to the float32 the converter writes (rope.scaling.attn_factor)
			c.RopeAttnFactor = float64(float32(math.Sqrt(1 + math.Log(scale)/math.Log(float64(orig)))))
		}
	}
	return nil
}

// hfReader reads a Hugging Face checkpoint by llama.cpp tensor names
// (llamacpp.HFToGGUF): per-expert tensors become one matrix per expert,
// and Gemma's norm gains get llama.cpp's +1 (llamacpp.NormShift).
type hfReader struct {
	hfLoader
	arch  string
	names map[string][]string // llama.cpp name → HF name (per expert for the merged expert tensors)
	// qkHeadDim > 0: the Q and K projections' rows (and biases) are
	// permuted within heads of that many rows from transformers' halves to
	// llama.cpp's interleaved pairs (llamacpp.QKRowSource), as
	// conversion/llama.py LlamaModel.permute does.
	qkHeadDim int
}

// permutesQK reports whether tensor name is a Q or K projection (weight
// or bias) r permutes, and the row order: row i of the result is row
// perm[i] of the checkpoint's.
func (r *hfReader) permutesQK(name string, rows int) ([]int, bool) {
	hd := r.qkHeadDim
	if hd <= 0 || !strings.HasSuffix(name, ".attn_q.weight") && !strings.HasSuffix(name, ".attn_k.weight") &&
		!strings.HasSuffix(name, ".attn_q.bias") && !strings.HasSuffix(name, ".attn_k.bias") {
		return nil, false
	}
	if rows%hd != 0 || hd%2 != 0 {
		r.fail(fmt.Errorf("model: tensor %s: %d rows are not heads of %d (an even number)", name, rows, hd))
		return nil, false
	}
	perm := make([]int, rows)
	for i := range perm {
		perm[i] = llamacpp.QKRowSource(i, hd)
	}
	return perm, true
}

func newHFReader(st *safetensors.File, arch string) (*hfReader, error) {
	r := &hfReader{hfLoader: hfLoader{st: st}, arch: arch, names: map[string][]string{}}
	for _, t := range st.Tensors {
		hn := t.Name
		if rest, ok := strings.CutPrefix(hn, lmPrefix); ok {
			hn = "model." + rest
		}
		n, ok := llamacpp.HFToGGUF(arch, hn)
		if !ok {
			continue // buffers and tensors llama.cpp does not use
		}
		if n.Expert < 0 {
			r.names[n.GGUF] = []string{t.Name}
			continue
		}
		if n.Expert >= 1<<16 {
			return nil, fmt.Errorf("model: tensor %s: expert index %d out of range", t.Name, n.Expert)
		}
		hs := r.names[n.GGUF]
		for len(hs) <= n.Expert {
			hs = append(hs, "")
		}
		hs[n.Expert] = t.Name
		r.names[n.GGUF] = hs
	}
	return r, nil
}

// hfName is the checkpoint's name for llama.cpp tensor name ("" if
// absent), or, for the error, the name it should have had.
func (r *hfReader) hfName(name string) (string, bool) {
	if hs := r.names[name]; len(hs) == 1 && hs[0] != "" {
		return hs[0], true
	}
	want, _ := llamacpp.GGUFToHF(r.arch, name, 0)
	return cmp.Or(want, name), false
}

func (r *hfReader) mat(name string, rows, cols int, required bool) *tensor.Mat {
	hn, ok := r.hfName(name)
	if !ok {
		if required {
			r.fail(fmt.Errorf("model: missing tensor %s", hn))
		}
		return nil
	}
	m := r.hfLoader.mat(hn, rows, cols, required)
	if perm, ok := r.permutesQK(name, rows); ok && m != nil {
		p, err := permuteRows(m, 0, 1, perm)
		if err != nil {
			r.fail(fmt.Errorf("model: tensor %s: %w", hn, err))
			return nil
		}
		return p
	}
	return m
}

func (r *hfReader) vec(name string, n int, required bool) []float32 {
	hn, ok := r.hfName(name)
	if !ok {
		if required {
			r.fail(fmt.Errorf("model: missing tensor %s", hn))
		}
		return nil
	}
	v := r.hfLoader.vec(hn, n, required)
	if perm, ok := r.permutesQK(name, n); ok && v != nil {
		v = permuteVec(v, 0, 1, perm)
	}
	if shift := llamacpp.NormShift(r.arch, name); shift != 0 && v != nil {
		v = slices.Clone(v) // may alias the read-only mapping
		for i := range v {
			v[i] += shift
		}
	}
	return v
}

func (r *hfReader) experts(name string, experts, rows, cols int) []*tensor.Mat {
	if r.arch == "gpt-oss" {
		return r.gptOssExperts(name, experts, rows, cols)
	}
	hs := r.names[name]
	if len(hs) == 1 && hs[0] != "" {
		if t, ok := r.st.Tensor(hs[0]); ok && len(t.Shape) == 3 {
			return r.stackedExperts(hs[0], experts, rows, cols)
		}
	}
	if len(hs) != experts || slices.Contains(hs, "") {
		want, _ := llamacpp.GGUFToHF(r.arch, name, len(hs))
		r.fail(fmt.Errorf("model: have %d of the %d experts' %s tensors (missing e.g. %s)", len(hs)-countEmpty(hs), experts, name, want))
		return nil
	}
	out := make([]*tensor.Mat, experts)
	for e, hn := range hs {
		out[e] = r.hfLoader.mat(hn, rows, cols, true)
	}
	return out
}

// stackedExperts views a 3-D (experts, rows, cols) checkpoint tensor
// (Gemma 4's experts.gate_up_proj and experts.down_proj) as one (rows,
// cols) matrix per expert: slab e is expert e, as in llama.cpp's
// ffn_*_exps.
func (r *hfReader) stackedExperts(hn string, experts, rows, cols int) []*tensor.Mat {
	t := r.get(hn, true)
	if t == nil {
		return nil
	}
	ty, err := computableType(t, hn)
	if err == nil && !slices.Equal(t.Shape, []int{experts, rows, cols}) {
		err = fmt.Errorf("model: tensor %s has shape %v, want [%d %d %d] (config.json)", hn, t.Shape, experts, rows, cols)
	}
	if err != nil {
		r.fail(err)
		return nil
	}
	data := f32Aligned(ty, t.Data)
	slab := len(data) / experts
	out := make([]*tensor.Mat, experts)
	for e := range out {
		m, err := tensor.NewMat(ty, rows, cols, data[e*slab:(e+1)*slab:(e+1)*slab])
		if err != nil {
			r.fail(fmt.Errorf("model: tensor %s, expert %d: %w", hn, e, err))
			return nil
		}
		out[e] = m
	}
	return out
}

func countEmpty(s []string) int {
	n := 0
	for _, x := range s {
		if x == "" {
			n++
		}
	}
	return n
}

func (r *hfReader) rows(name string) (int, bool) {
	hn, ok := r.hfName(name)
	if !ok {
		return 0, false
	}
	t, ok := r.st.Tensor(hn)
	if !ok || len(t.Shape) == 0 {
		return 0, false
	}
	return t.Shape[0], true
}

// vecN reads gpt-oss's expert biases (no other Hugging Face architecture
// has (experts, width) vectors): the gate's and up's interleaved in
// gate_up_proj_bias (even and odd columns), down_proj_bias as it is.
func (r *hfReader) vecN(name string, n int) []float32 {
	if r.arch != "gpt-oss" {
		r.fail(fmt.Errorf("model: tensor %s: (experts, width) biases are not read from %s Hugging Face files", name, r.arch))
		return nil
	}
	src, parity := gptOssSource(name)
	hn, ok := r.hfName(src)
	if !ok {
		r.fail(fmt.Errorf("model: missing tensor %s", hn))
		return nil
	}
	t := r.get(hn, true)
	if t == nil {
		return nil
	}
	width := 1
	if parity >= 0 {
		width = 2
	}
	ty, err := t.Type()
	numel := 1
	for _, d := range t.Shape {
		numel *= d
	}
	if err == nil && (len(t.Shape) != 2 || numel != width*n) {
		err = fmt.Errorf("model: tensor %s has shape %v, want %d elements (config.json)", hn, t.Shape, width*n)
	}
	var all []float32
	if err == nil {
		all, err = decodeVec(ty, slices.Clone(t.Data), width*n)
	}
	if err != nil {
		r.fail(fmt.Errorf("model: tensor %s: %w", hn, err))
		return nil
	}
	if parity < 0 {
		return all
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = all[2*i+parity]
	}
	return out
}

// gptOssSource is the llama.cpp-style name of the gpt-oss tensor that
// holds name, and which interleaved half of it (0 gate, 1 up; -1 whole).
func gptOssSource(name string) (string, int) {
	switch {
	case strings.Contains(name, llamacpp.FFNGateExps+"."):
		return strings.Replace(name, llamacpp.FFNGateExps, llamacpp.GptOssGateUp, 1), 0
	case strings.Contains(name, llamacpp.FFNUpExps+"."):
		return strings.Replace(name, llamacpp.FFNUpExps, llamacpp.GptOssGateUp, 1), 1
	}
	return name, -1
}

// gptOssExperts builds each expert's (rows, cols) matrix of a gpt-oss
// checkpoint from the fused, x·W-oriented 3-D tensors (see
// llamacpp.GptOssGateUp): gate row j is column 2j of gate_up_proj[e], up
// row j column 2j+1, down row o column o of down_proj[e]. The transposed
// copies live on the heap in the checkpoint's element type.
func (r *hfReader) gptOssExperts(name string, experts, rows, cols int) []*tensor.Mat {
	src, parity := gptOssSource(name)
	hn, ok := r.hfName(src)
	if !ok {
		if bn, ok := r.hfName(strings.TrimSuffix(src, ".weight") + ".blocks"); ok {
			return r.gptOssMXFP4(bn, strings.TrimSuffix(src, ".weight")+".scales", parity, experts, rows, cols)
		}
		r.fail(fmt.Errorf("model: missing tensor %s", hn))
		return nil
	}
	t := r.get(hn, true)
	if t == nil {
		return nil
	}
	outW := rows // columns of W per input row
	if parity >= 0 {
		outW = 2 * rows
	}
	ty, err := computableType(t, hn)
	if err == nil && (len(t.Shape) != 3 || t.Shape[0] != experts || t.Shape[1] != cols || t.Shape[2] != outW) {
		err = fmt.Errorf("model: tensor %s has shape %v, want [%d %d %d] (config.json)", hn, t.Shape, experts, cols, outW)
	}
	if err != nil {
		r.fail(err)
		return nil
	}
	es := len(t.Data) / (experts * cols * outW)
	if es*experts*cols*outW != len(t.Data) || es == 0 {
		r.fail(fmt.Errorf("model: tensor %s: %d bytes for %v", hn, len(t.Data), t.Shape))
		return nil
	}
	out := make([]*tensor.Mat, experts)
	slab := cols * outW * es
	for e := range out {
		w := t.Data[e*slab : (e+1)*slab]
		buf := make([]byte, rows*cols*es+4)
		off := int((4 - uintptr(unsafe.Pointer(&buf[0]))%4) % 4) // aligned for float32 views
		dst := buf[off : off+rows*cols*es]
		for j := range rows {
			c := j
			if parity >= 0 {
				c = 2*j + parity
			}
			for i := range cols {
				copy(dst[(j*cols+i)*es:(j*cols+i+1)*es], w[(i*outW+c)*es:(i*outW+c+1)*es])
			}
		}
		out[e] = &tensor.Mat{Type: ty, Rows: rows, Cols: cols, Data: dst}
	}
	return out
}

func (h *hfLoader) errOr(err error) error {
	if h.err != nil {
		return h.err
	}
	return err
}

// hfWeightFiles lists the safetensors files of dir (shards in name order).
func hfWeightFiles(dir string) []string {
	raw, err := os.ReadFile(filepath.Join(dir, safetensors.IndexFile))
	if err != nil {
		return []string{filepath.Join(dir, safetensors.SingleFile)}
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	_ = json.Unmarshal(raw, &idx)
	var files []string
	for _, f := range idx.WeightMap {
		p := filepath.Join(dir, f)
		if !slices.Contains(files, p) {
			files = append(files, p)
		}
	}
	sort.Strings(files)
	return files
}

// hfExtras reads generation_config.json, the tokenizer and the chat template.
func (m *Model) hfExtras(dir string) error {
	if raw, err := os.ReadFile(filepath.Join(dir, "generation_config.json")); err == nil {
		var gc struct {
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if err := json.Unmarshal(raw, &gc); err != nil {
			return fmt.Errorf("model: generation_config.json: %w", err)
		}
		m.Gen.Sampling = raw
		m.Gen.EOG = append(m.Gen.EOG, parseIDs(gc.EOS)...)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("model: %w", err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer.model", "vocab.json", "encoder.json", "tokenizer.bin"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			tk, err := tokenizer.Load(dir)
			if err != nil {
				return fmt.Errorf("model: %w", err)
			}
			m.Tokenizer = tk
			break
		}
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		var tc struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(raw, &tc); err != nil {
			return fmt.Errorf("model: tokenizer_config.json: %w", err)
		}
		m.Gen.ChatTemplate = parseChatTemplate(tc.ChatTemplate)
	}
	if m.Gen.ChatTemplate == "" {
		if raw, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
			m.Gen.ChatTemplate = string(raw)
		}
	}
	return nil
}

// parseIDs reads a token id or a list of ids (null: none).
func parseIDs(raw json.RawMessage) []int {
	var one int
	if json.Unmarshal(raw, &one) == nil && len(raw) > 0 && string(raw) != "null" {
		return []int{one}
	}
	var many []int
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}

// parseChatTemplate reads chat_template: a string, or a list of
// {name, template} from which "default" (else the first) is taken.
func parseChatTemplate(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return ""
	}
	for _, t := range list {
		if t.Name == "default" {
			return t.Template
		}
	}
	return list[0].Template
}

// gptOssMXFP4 builds each expert's (rows, cols) MXFP4 matrix from the
// original gpt-oss release's *_blocks (E, rows', cols/32, 16) and *_scales
// (E, rows', cols/32) (rows' = 2·rows for gate_up_proj, whose even rows
// are the gate and odd rows the up projection). A ggml MXFP4 block is the
// scale byte then 16 bytes whose byte m holds values m (low nibble) and
// m+16 (high); the checkpoint's byte k holds values 2k (low) and 2k+1
// (high) (conversion/gpt_oss.py transform_nibble_layout).
func (r *hfReader) gptOssMXFP4(blocksName, scalesLC string, parity, experts, rows, cols int) []*tensor.Mat {
	bt := r.get(blocksName, true)
	sn, ok := r.hfName(scalesLC)
	if !ok {
		r.fail(fmt.Errorf("model: missing tensor %s", sn))
		return nil
	}
	sc := r.get(sn, true)
	if bt == nil || sc == nil {
		return nil
	}
	outW, nb := rows, cols/32
	if parity >= 0 {
		outW = 2 * rows
	}
	switch {
	case cols%32 != 0:
		r.fail(fmt.Errorf("model: tensor %s: rows of %d values are not whole MXFP4 blocks", blocksName, cols))
		return nil
	case bt.DType != "U8" || sc.DType != "U8":
		r.fail(fmt.Errorf("model: tensors %s, %s: dtypes %s, %s, want U8", blocksName, sn, bt.DType, sc.DType))
		return nil
	case !slices.Equal(bt.Shape, []int{experts, outW, nb, 16}) || len(bt.Data) != experts*outW*nb*16:
		r.fail(fmt.Errorf("model: tensor %s has shape %v, want [%d %d %d 16] (config.json)", blocksName, bt.Shape, experts, outW, nb))
		return nil
	case !slices.Equal(sc.Shape, []int{experts, outW, nb}) || len(sc.Data) != experts*outW*nb:
		r.fail(fmt.Errorf("model: tensor %s has shape %v, want [%d %d %d] (config.json)", sn, sc.Shape, experts, outW, nb))
		return nil
	}
	out := make([]*tensor.Mat, experts)
	for e := range out {
		dst := make([]byte, rows*nb*17)
		for j := range rows {
			c := j
			if parity >= 0 {
				c = 2*j + parity
			}
			for b := range nb {
				src := bt.Data[((e*outW+c)*nb+b)*16:][:16]
				d := dst[(j*nb+b)*17:][:17]
				d[0] = sc.Data[(e*outW+c)*nb+b]
				mxfp4FromHF(d[1:], src)
			}
		}
		out[e] = &tensor.Mat{Type: tensor.MXFP4, Rows: rows, Cols: cols, Data: dst}
	}
	return out
}

// mxfp4FromHF writes ggml's 16 nibble bytes of one MXFP4 block (byte m:
// value m low, value m+16 high) from the checkpoint's (byte k: value 2k
// low, 2k+1 high).
func mxfp4FromHF(dst, src []byte) {
	nib := func(i int) byte { return src[i/2] >> (4 * (i % 2)) & 0xF }
	for m := range 16 {
		dst[m] = nib(m) | nib(m+16)<<4
	}
}

// fillLFM2 reads an Lfm2Config or an Lfm2MoeConfig: the conv / attention
// layer pattern, the convolution width, RoPE's base (rope_theta, or
// rope_parameters' in newer files; 1e6 by default), and the FFN width: for
// lfm2 as llama.cpp's converter derives it (conversion/lfm2.py
// _add_feed_forward_length: with block_auto_adjust_ff_dim, 2/3 of
// block_ff_dim, times the multiplier, rounded up to block_multiple_of),
// for lfm2moe the dense layers' intermediate_size (fillLFM2MoE).
func (hc *hfConfig) fillLFM2(c *Config) error {
	if len(hc.LayerTypes) != c.Layers {
		return fmt.Errorf("model: config.json: layer_types has %d entries for %d layers", len(hc.LayerTypes), c.Layers)
	}
	if hc.ConvBias {
		return fmt.Errorf("model: config.json: conv_bias true is not supported (llama.cpp's %s graph has no conv bias)", c.Arch)
	}
	c.Recurrent = make([]bool, c.Layers)
	for l, t := range hc.LayerTypes {
		c.Recurrent[l] = t == "conv"
	}
	c.ConvKernel = cmp.Or(hc.ConvLCache, 3)
	if hc.NormEps != nil {
		c.NormEps = float32(*hc.NormEps)
	}
	if hc.TieWordEmbeddings == nil {
		// Lfm2Config and Lfm2MoeConfig tie by default, and take the
		// original configs' tie_embedding for it.
		c.Tied = hc.TieEmbedding == nil || *hc.TieEmbedding
	}
	if hc.RopeTheta == nil {
		c.RopeTheta = 1e6 // their default
		if rp := hc.RopeParameters; rp != nil && rp.RopeTheta != nil {
			c.RopeTheta = *rp.RopeTheta
		}
	}
	if rp := hc.RopeParameters; rp != nil && rp.RopeType != "" && rp.RopeType != "default" {
		return fmt.Errorf("model: config.json: rope_parameters.rope_type %q is not supported (llama.cpp's %s runs plain RoPE)", rp.RopeType, c.Arch)
	}
	if c.Arch == ArchLFM2MoE {
		return hc.fillLFM2MoE(c)
	}
	ff := cmp.Or(hc.BlockFFDim, hc.IntermediateSize)
	if hc.BlockAutoAdjustFFDim {
		ff = 2 * ff / 3
		if m := hc.BlockFFNDimMultiplier; m != nil {
			ff = int(*m * float64(ff))
		}
		if mo := hc.BlockMultipleOf; mo > 0 {
			ff = mo * ((ff + mo - 1) / mo)
		}
	}
	c.HiddenDim = ff
	return nil
}

// fillLFM2MoE reads an Lfm2MoeConfig's mixture, with its defaults, as
// conversion/lfm2.py LFM2MoeModel writes it: num_dense_layers (2) leading
// dense layers of intermediate_size (7168), then num_experts (32) experts
// of moe_intermediate_size (1792), num_experts_per_tok (4) of them chosen
// by σ(router) + expert_bias and weighted by their σ renormalised. The
// Lfm2MoeSparseMoeBlock settings llama.cpp's graph does not follow are
// refused (norm_topk_prob false in fillArch, routed_scaling_factor ≠ 1);
// use_expert_bias false (a checkpoint without expert_bias) routes by σ
// alone.
func (hc *hfConfig) fillLFM2MoE(c *Config) error {
	c.HiddenDim = cmp.Or(hc.IntermediateSize, 7168)
	c.Experts, c.ExpertsUsed, c.ExpertHiddenDim = 32, cmp.Or(hc.NumExpertsPerTok, 4), cmp.Or(hc.MoEIntermediateSize, 1792)
	if hc.NumExperts != nil {
		c.Experts = *hc.NumExperts
	}
	c.DenseLead = 2
	if hc.NumDenseLayers != nil {
		c.DenseLead = *hc.NumDenseLayers
	}
	c.ExpertGating = GatingSigmoid // LFM2MoeModel: add_expert_gating_func(SIGMOID) always
	c.RouterSelBias = hc.UseExpertBias == nil || *hc.UseExpertBias
	if f := hc.RoutedScalingFactor; f != nil && *f != 1 {
		return fmt.Errorf("model: config.json: routed_scaling_factor %g is not supported (llama.cpp's lfm2moe graph does not scale the expert weights)", *f)
	}
	return nil
}
