// Package llamacpp is the one place that knows llama.cpp's file
// conventions: per architecture, the GGUF metadata keys and tensor names,
// the blocks an architecture enables, and where each convention comes from.
// The model package reads GGUF files through it; adding an architecture is
// an entry in Archs plus whatever blocks the forward pass lacks.
//
// Sources (cited beside the entries): llama.cpp at de3ff81 —
// src/llama-arch.cpp (architecture and tensor names), src/llama-model.cpp
// and src/models/<arch>.cpp (hyperparameters read per architecture and the
// graph each builds), src/llama-hparams.cpp (sliding-window layer
// patterns), gguf-py/gguf/constants.py (metadata keys).
package llamacpp

import (
	"fmt"
	"slices"
	"strings"
)

// Arch describes one llama.cpp architecture: how its GGUF files name
// things and which blocks its graph uses.
type Arch struct {
	Name string // general.architecture

	// RopeNeox: RoPE rotates halves (i, i+d/2) — llama.cpp's
	// LLAMA_ROPE_TYPE_NEOX (llama_model_rope_type in src/llama-model.cpp);
	// false: interleaved pairs (LLAMA_ROPE_TYPE_NORM, whose converter
	// permutes Q/K rows).
	RopeNeox bool
	// QKVBias: attn_{q,k,v}.bias are required (qwen2).
	QKVBias bool
	// QKNorm: attn_q_norm / attn_k_norm (head_dim) RMSNorm before RoPE
	// (src/models/qwen3.cpp, qwen3moe.cpp, gemma3.cpp).
	QKNorm bool
	// FusedQKV: one attn_qkv tensor, rows Q, K, V (gpt2, phi3:
	// create_tensor_qkv / build_qkv in src/models/phi3.cpp).
	FusedQKV bool
	// FusedGateUp: ffn_up holds 2·n_ff rows, gate first then up, the FFN
	// is LLM_FFN_SWIGLU over the split (src/models/phi3.cpp).
	FusedGateUp bool
	// Gemma: embeddings × √n_embd, post_attention_norm and post_ffw_norm,
	// tanh-GELU gated FFN (LLM_FFN_GELU, LLM_FFN_PAR), query scaled by
	// 1/√head_dim (1/√(n_embd/n_head) for the 27B sizes)
	// (src/models/gemma2.cpp, gemma3.cpp).
	Gemma bool
	// SWAPattern: the default sliding-window layer pattern n: layer il is
	// windowed when il % n < n-1 (llama_hparams::set_swa_pattern); 0: no
	// windowed layers unless the file says so (llama/mistral read a
	// model-wide window).
	SWAPattern int
	// DefaultWindow is the window when the file has none (gemma2: 4096).
	DefaultWindow int
	// SoftCaps: attn_logit_softcapping / final_logit_softcapping are read
	// (gemma2 always applies the final one; gemma3 when the key is present).
	SoftCaps bool
	// MoE: expert_count / expert_used_count and the ffn_*_exps tensors may
	// be present (llama: Mixtral; qwen3moe: always).
	MoE bool
	// LongRope: rope_factors_long / rope_factors_short, chosen by the
	// configured context (llama_model::get_rope_factors).
	LongRope bool
	// NoWindow: llama.cpp ignores attention.sliding_window (phi3: "Phi SWA
	// is currently disabled", src/models/phi3.cpp).
	NoWindow bool
	// NoRopeStep: layer il has no RoPE when (il+1) % NoRopeStep == 0
	// (smollm3.cpp: n_no_rope_layer_step = 4, not a GGUF key).
	NoRopeStep int
	// Sinks: attn_sinks (n_head) logits join each softmax's denominator;
	// the FFN input norm is post_attention_norm (openai-moe.cpp).
	Sinks bool
	// OAIMoE: the router and experts carry biases, the weights are the
	// softmax of the chosen experts' logits
	// (LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT) and the activation is
	// LLM_FFN_SWIGLU_OAI_MOE (openai-moe.cpp, llama-graph.cpp).
	OAIMoE bool
	// Gemma4: per-layer token inputs, shared-KV layers, head sizes and
	// RoPE dims per layer kind, unweighted V-norm, layer output scale,
	// attention scale 1 (gemma4.cpp).
	Gemma4 bool
	// Granite: logit_scale (logits ÷ it), residual_scale (each block's
	// output × it before its residual add), embedding_scale and
	// attention.scale, all optional; RoPE only while
	// rope.scaling.finetuned is absent or true (src/models/granite.cpp,
	// granite-hybrid.cpp: rope_finetuned is Granite's RoPE switch).
	Granite bool
	// Hybrid: some layers are recurrent token mixers with a per-sequence
	// state (qwen35: gated delta nets, attention.recurrent_layers or
	// full_attention_interval, ssm.* keys; lfm2: short convolutions where
	// the attention.head_count_kv array is 0, shortconv.l_cache).
	Hybrid bool
}

// Archs are the architectures nanoserve runs, by general.architecture.
var Archs = map[string]*Arch{
	"llama":         {Name: "llama", MoE: true},                     // src/models/llama.cpp (Mixtral files are llama with experts)
	"mistral":       {Name: "mistral"},                              // older converters
	"qwen2":         {Name: "qwen2", RopeNeox: true, QKVBias: true}, // src/models/qwen2.cpp
	"gpt2":          {Name: "gpt2", FusedQKV: true},                 // src/models/gpt2.cpp
	"qwen3":         {Name: "qwen3", RopeNeox: true, QKNorm: true},  // src/models/qwen3.cpp
	"qwen3moe":      {Name: "qwen3moe", RopeNeox: true, QKNorm: true, MoE: true},
	"gemma2":        {Name: "gemma2", RopeNeox: true, Gemma: true, SWAPattern: 2, DefaultWindow: 4096, SoftCaps: true}, // load_swa_pattern(ml, 2), n_swa = 4096
	"gemma3":        {Name: "gemma3", RopeNeox: true, Gemma: true, QKNorm: true, SWAPattern: 6, SoftCaps: true},        // load_swa_pattern(ml, 6) when sliding_window > 0
	"phi3":          {Name: "phi3", RopeNeox: true, FusedQKV: true, FusedGateUp: true, LongRope: true, NoWindow: true},
	"smollm3":       {Name: "smollm3", NoWindow: true, NoRopeStep: 4},                                                                    // src/models/smollm3.cpp
	"gpt-oss":       {Name: "gpt-oss", RopeNeox: true, MoE: true, SWAPattern: 2, Sinks: true, OAIMoE: true},                              // src/models/openai-moe.cpp: load_swa_pattern(ml, 2)
	"gemma4":        {Name: "gemma4", RopeNeox: true, Gemma: true, QKNorm: true, SWAPattern: 6, SoftCaps: true, Gemma4: true, MoE: true}, // src/models/gemma4.cpp: the pattern is the file's sliding_window_pattern array
	"qwen35":        {Name: "qwen35", RopeNeox: true, QKNorm: true, NoWindow: true, Hybrid: true},                                        // src/models/qwen35.cpp, delta-net-base.cpp (IMROPE: NEOX pairs for text)
	"lfm2":          {Name: "lfm2", RopeNeox: true, QKNorm: true, NoWindow: true, Hybrid: true},                                          // src/models/lfm2.cpp (no SWA in lfm2 1.x files)
	"qwen35moe":     {Name: "qwen35moe", RopeNeox: true, QKNorm: true, NoWindow: true, Hybrid: true, MoE: true},                          // src/models/qwen35moe.cpp
	"granite":       {Name: "granite", Granite: true},                                                                                    // src/models/granite.cpp (LLAMA_ROPE_TYPE_NORM)
	"granitemoe":    {Name: "granitemoe", Granite: true, MoE: true},                                                                      // granite.cpp's MoE branch: softmax experts and an ungated shared expert
	"granitehybrid": {Name: "granitehybrid", Granite: true, MoE: true, Hybrid: true, NoWindow: true},                                     // src/models/granite-hybrid.cpp: Mamba-2 layers (head_count_kv 0) and attention, dense or MoE FFN
	"lfm2moe":       {Name: "lfm2moe", RopeNeox: true, QKNorm: true, NoWindow: true, Hybrid: true, MoE: true},                            // src/models/lfm2moe.cpp: lfm2 with σ-gated experts after leading dense layers
}

// Lookup returns the architecture named name, or an error listing the
// supported ones.
func Lookup(name string) (*Arch, error) {
	if a, ok := Archs[name]; ok {
		return a, nil
	}
	names := make([]string, 0, len(Archs))
	for n := range Archs {
		names = append(names, n)
	}
	slices.Sort(names)
	if name == "" {
		return nil, fmt.Errorf("GGUF file has no general.architecture (supported: %s)", strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("%q (supported: %s)", name, strings.Join(names, ", "))
}

// SWALayers returns llama.cpp's windowed-layer pattern for n layers with
// period p: layer il is windowed when il % p < p-1
// (llama_hparams::set_swa_pattern, dense_first false); p == 0 windows
// every layer.
func SWALayers(layers, p int) []bool {
	out := make([]bool, layers)
	for il := range out {
		out[il] = p == 0 || il%p < p-1
	}
	return out
}

// Metadata key suffixes below "<arch>." (gguf-py/gguf/constants.py Keys.LLM,
// Keys.Attention, Keys.Rope).
const (
	KeyContextLength     = "context_length"
	KeyEmbeddingLength   = "embedding_length"
	KeyBlockCount        = "block_count"
	KeyFeedForwardLength = "feed_forward_length"
	KeyExpertFFLength    = "expert_feed_forward_length"
	KeyExpertCount       = "expert_count"
	KeyExpertUsedCount   = "expert_used_count"
	KeyExpertGatingFunc  = "expert_gating_func" // 1 softmax, 2 sigmoid, 3 softmax over the chosen (llama_expert_gating_func_type)
	KeyLogitScale        = "logit_scale"
	KeyResidualScale     = "residual_scale"
	KeyEmbeddingScale    = "embedding_scale"
	KeyAttentionScale    = "attention.scale"
	KeyRopeFinetuned     = "rope.scaling.finetuned"
	KeySharedExpertFF    = "expert_shared_feed_forward_length"
	KeyLeadingDense      = "leading_dense_block_count" // the first this many layers have a dense FFN
	KeyHeadCount         = "attention.head_count"
	KeyHeadCountKV       = "attention.head_count_kv"
	KeyKeyLength         = "attention.key_length"
	KeyValueLength       = "attention.value_length"
	KeyLayerNormEps      = "attention.layer_norm_epsilon"
	KeyRMSNormEps        = "attention.layer_norm_rms_epsilon"
	KeySlidingWindow     = "attention.sliding_window"
	KeySWAPattern        = "attention.sliding_window_pattern"
	KeyAttnSoftcap       = "attn_logit_softcapping"
	KeyFinalSoftcap      = "final_logit_softcapping"
	KeyRopeDim           = "rope.dimension_count"
	KeyRopeFreqBase      = "rope.freq_base"
	KeyRopeFreqBaseSWA   = "rope.freq_base_swa"
	KeyRopeScalingType   = "rope.scaling.type"
	KeyRopeScalingFactor = "rope.scaling.factor"
	KeyRopeOrigContext   = "rope.scaling.original_context_length"
	KeyRopeAttnFactor    = "rope.scaling.attn_factor"
	KeyRopeYarnBetaFast  = "rope.scaling.yarn_beta_fast"
	KeyRopeYarnBetaSlow  = "rope.scaling.yarn_beta_slow"
	KeyKeyLengthSWA      = "attention.key_length_swa"
	KeyValueLengthSWA    = "attention.value_length_swa"
	KeyRopeDimSWA        = "rope.dimension_count_swa"
	KeySharedKVLayers    = "attention.shared_kv_layers"
	KeyPerLayerInput     = "embedding_length_per_layer_input"
)

// Tensor names (src/llama-arch.cpp LLM_TENSOR_NAMES); per-layer names are
// "blk.N." + the suffix, see Blk.
const (
	TokenEmbd         = "token_embd.weight"
	PositionEmbd      = "position_embd.weight"
	OutputNorm        = "output_norm"
	Output            = "output.weight"
	RopeFreqs         = "rope_freqs.weight"
	RopeLong          = "rope_factors_long.weight"
	RopeShort         = "rope_factors_short.weight"
	AttnNorm          = "attn_norm"
	AttnQ             = "attn_q"
	AttnK             = "attn_k"
	AttnV             = "attn_v"
	AttnQKV           = "attn_qkv"
	AttnQNorm         = "attn_q_norm"
	AttnKNorm         = "attn_k_norm"
	AttnOut           = "attn_output"
	AttnPostNorm      = "post_attention_norm"
	FFNNorm           = "ffn_norm"
	FFNGate           = "ffn_gate"
	FFNUp             = "ffn_up"
	FFNDown           = "ffn_down"
	FFNPostNorm       = "post_ffw_norm"
	FFNRouter         = "ffn_gate_inp"
	FFNGateExps       = "ffn_gate_exps"
	FFNUpExps         = "ffn_up_exps"
	FFNDownExps       = "ffn_down_exps"
	FFNGateUpExps     = "ffn_gate_up_exps"
	FFNPreNorm2       = "pre_ffw_norm_2"
	FFNPostNorm1      = "post_ffw_norm_1"
	FFNPostNorm2      = "post_ffw_norm_2"
	AttnSinks         = "attn_sinks"
	LayerOutScale     = "layer_output_scale"
	PerLayerTokenEmbd = "per_layer_token_embd.weight"
	PerLayerModelProj = "per_layer_model_proj.weight"
	PerLayerProjNorm  = "per_layer_proj_norm.weight"
	PerLayerInpGate   = "inp_gate"
	PerLayerProj      = "proj"
	PerLayerPostNorm  = "post_norm"
)

// Blk is the name of layer i's tensor: "blk.<i>.<name>.<kind>" (kind
// "weight" or "bias").
func Blk(i int, name, kind string) string {
	return fmt.Sprintf("blk.%d.%s.%s", i, name, kind)
}
