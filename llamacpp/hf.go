package llamacpp

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Hugging Face checkpoints: which llama.cpp architecture a transformers
// class converts to, the name of every tensor on each side, and the value
// transforms between them. Sources: llama.cpp's convert_hf_to_gguf.py
// (the conversion/ modules at de3ff81: @ModelBase.register lists and
// modify_tensors) and gguf-py/gguf/tensor_mapping.py (the HF name of each
// MODEL_TENSOR); the transformers modeling files named beside entries for
// the conventions the weights follow.

// HFArchs maps a config.json "architectures" class to the GGUF
// architecture it converts to.
var HFArchs = map[string]string{
	"LlamaForCausalLM":    "llama",    // conversion/llama.py @ModelBase.register("LLaMAForCausalLM", "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", …)
	"MistralForCausalLM":  "llama",    // idem
	"MixtralForCausalLM":  "llama",    // idem; experts merged into 3-D ffn_*_exps (LlamaModel.modify_tensors)
	"Qwen2ForCausalLM":    "qwen2",    // conversion/qwen.py Qwen2Model
	"Qwen3ForCausalLM":    "qwen3",    // conversion/qwen.py @ModelBase.register("Qwen3ForCausalLM", "Qwen3Model")
	"Qwen3MoeForCausalLM": "qwen3moe", // conversion/qwen.py @ModelBase.register("Qwen3MoeForCausalLM")
	"Gemma2ForCausalLM":   "gemma2",   // conversion/gemma.py @ModelBase.register("Gemma2ForCausalLM")
	"Gemma3ForCausalLM":   "gemma3",   // conversion/gemma.py @ModelBase.register("Gemma3ForCausalLM", …)
	"Phi3ForCausalLM":     "phi3",     // conversion/phi.py @ModelBase.register("Phi3ForCausalLM", …)
	"SmolLM3ForCausalLM":  "smollm3",  // conversion/llama.py SmolLM3Model(LlamaModel): Llama's names, Q/K permuted
	"GptOssForCausalLM":   "gpt-oss",  // conversion/gpt_oss.py GptOssModel (the unquantized form; see GptOssFused)
	"GPT2LMHeadModel":     "gpt2",     // conversion/gpt2.py
	"Qwen3_5ForCausalLM":  "qwen35",   // conversion/qwen.py @ModelBase.register("Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM")
	// The vision-language checkpoint's text model: config.json text_config,
	// tensors under model.language_model. (the loader reads those).
	"Qwen3_5ForConditionalGeneration": "qwen35",
	// Qwen3.5's mixture of experts (the 35B-A3B): the same delta-net and
	// attention layers, routed experts one HF tensor each, a σ-gated
	// shared expert (conversion/qwen.py Qwen3_5MoeTextModel).
	"Qwen3_5MoeForCausalLM":              "qwen35moe",
	"Qwen3_5MoeForConditionalGeneration": "qwen35moe",
	"Lfm2ForCausalLM":                    "lfm2", // conversion/lfm2.py @ModelBase.register("Lfm2ForCausalLM", "LFM2ForCausalLM")
	"LFM2ForCausalLM":                    "lfm2", // idem
	// LFM2-MoE (LFM2-8B-A1B, LFM2-24B-A2B; conversion/lfm2.py LFM2MoeModel):
	// lfm2's layers, σ-gated experts one HF tensor each after
	// num_dense_layers dense ones.
	"Lfm2MoeForCausalLM": "lfm2moe",
	// Gemma 4 (conversion/gemma.py Gemma4Model, registered for both): the
	// text model (Gemma4ForCausalLM, settings at the top of config.json)
	// and the multimodal checkpoint's language model (text_config, tensors
	// under model.language_model.; its vision and audio towers are not
	// read).
	"Gemma4ForCausalLM":              "gemma4",
	"Gemma4ForConditionalGeneration": "gemma4",
	// IBM Granite (conversion/granite.py): GraniteModel(LlamaModel) —
	// Llama's names, Q/K permuted as for Llama whether or not RoPE runs —
	// and GraniteMoeModel, registered for both MoE classes, which splits
	// the fused block_sparse_moe.input_linear / shared_mlp.input_linear
	// (graniteMoE below).
	"GraniteForCausalLM":          "granite",
	"GraniteMoeForCausalLM":       "granitemoe",
	"GraniteMoeSharedForCausalLM": "granitemoe",
}

// hfEntry is one name pair; {bid} is the layer, {xid} the expert. archs
// limits an entry to those GGUF architectures (nil: the Llama-style ones,
// every architecture but gpt2).
type hfEntry struct {
	hf, gguf string
	archs    []string
	re       *regexp.Regexp
}

var gemmas = []string{"gemma2", "gemma3", "gemma4"}

var gemma4 = []string{"gemma4"}

var gptOSS = []string{"gpt-oss"}

// GptOssGateUp is the pseudo llama.cpp name of gpt-oss's fused expert
// tensor: transformers' mlp.experts.gate_up_proj, (experts, dim,
// 2·expert_ffn) used as x·W, whose even columns are the gate and odd
// columns the up projection (and gate_up_proj_bias likewise, (experts,
// 2·expert_ffn)); down_proj is (experts, expert_ffn, dim), also x·W.
// conversion/gpt_oss.py splits and transposes them into ffn_gate_exps,
// ffn_up_exps and ffn_down_exps; the model loader does the same.
const GptOssGateUp = "ffn_gate_up_exps"

var lfm2 = []string{"lfm2", "lfm2moe"}

var lfm2moe = []string{"lfm2moe"}

var qwen35 = []string{"qwen35", "qwen35moe"}

var graniteMoE = []string{"granitemoe"}

// hfNames are the Llama-family names (model.layers.N.…) and GPT-2's. The
// comment names the MODEL_TENSOR of tensor_mapping.py whose list holds the
// HF name, with the model its comment there names.
var hfNames = []*hfEntry{
	// gpt-oss (conversion/gpt_oss.py; transformers modeling_gpt_oss.py),
	// listed first: post_attention_layernorm is its FFN input norm, which
	// llama.cpp names post_attention_norm; the sinks gain ".weight"; the
	// experts are fused 3-D tensors (GptOssFused) under pseudo names.
	{hf: "model.layers.{bid}.post_attention_layernorm.weight", gguf: "blk.{bid}.post_attention_norm.weight", archs: gptOSS},
	{hf: "model.layers.{bid}.self_attn.sinks", gguf: "blk.{bid}.attn_sinks.weight", archs: gptOSS},
	{hf: "model.layers.{bid}.mlp.router.weight", gguf: "blk.{bid}.ffn_gate_inp.weight", archs: gptOSS},
	{hf: "model.layers.{bid}.mlp.router.bias", gguf: "blk.{bid}.ffn_gate_inp.bias", archs: gptOSS},
	{hf: "model.layers.{bid}.mlp.experts.gate_up_proj", gguf: "blk.{bid}." + GptOssGateUp + ".weight", archs: gptOSS},
	{hf: "model.layers.{bid}.mlp.experts.gate_up_proj_bias", gguf: "blk.{bid}." + GptOssGateUp + ".bias", archs: gptOSS},
	{hf: "model.layers.{bid}.mlp.experts.down_proj", gguf: "blk.{bid}.ffn_down_exps.weight", archs: gptOSS},
	{hf: "model.layers.{bid}.mlp.experts.down_proj_bias", gguf: "blk.{bid}.ffn_down_exps.bias", archs: gptOSS},
	// The original release's MXFP4 experts (W·x orientation, rows of
	// 32-value blocks: *_blocks (E, rows, blocks, 16) nibbles, *_scales
	// (E, rows, blocks) E8M0 exponents; conversion/gpt_oss.py repack_mxfp4).
	{hf: "model.layers.{bid}.mlp.experts.gate_up_proj_blocks", gguf: "blk.{bid}." + GptOssGateUp + ".blocks", archs: gptOSS},
	{hf: "model.layers.{bid}.mlp.experts.gate_up_proj_scales", gguf: "blk.{bid}." + GptOssGateUp + ".scales", archs: gptOSS},
	{hf: "model.layers.{bid}.mlp.experts.down_proj_blocks", gguf: "blk.{bid}.ffn_down_exps.blocks", archs: gptOSS},
	{hf: "model.layers.{bid}.mlp.experts.down_proj_scales", gguf: "blk.{bid}.ffn_down_exps.scales", archs: gptOSS},

	{hf: "model.embed_tokens.weight", gguf: "token_embd.weight"},                             // TOKEN_EMBD "model.embed_tokens" (llama-hf)
	{hf: "lm_head.weight", gguf: "output.weight"},                                            // OUTPUT "lm_head" (llama-hf)
	{hf: "model.norm.weight", gguf: "output_norm.weight"},                                    // OUTPUT_NORM "model.norm" (llama-hf)
	{hf: "model.layers.{bid}.input_layernorm.weight", gguf: "blk.{bid}.attn_norm.weight"},    // ATTN_NORM (llama-hf)
	{hf: "model.layers.{bid}.self_attn.q_proj.weight", gguf: "blk.{bid}.attn_q.weight"},      // ATTN_Q (llama-hf)
	{hf: "model.layers.{bid}.self_attn.k_proj.weight", gguf: "blk.{bid}.attn_k.weight"},      // ATTN_K (llama-hf)
	{hf: "model.layers.{bid}.self_attn.v_proj.weight", gguf: "blk.{bid}.attn_v.weight"},      // ATTN_V (llama-hf)
	{hf: "model.layers.{bid}.self_attn.q_proj.bias", gguf: "blk.{bid}.attn_q.bias"},          // ATTN_Q (qwen2 bias)
	{hf: "model.layers.{bid}.self_attn.k_proj.bias", gguf: "blk.{bid}.attn_k.bias"},          // ATTN_K
	{hf: "model.layers.{bid}.self_attn.v_proj.bias", gguf: "blk.{bid}.attn_v.bias"},          // ATTN_V
	{hf: "model.layers.{bid}.self_attn.o_proj.weight", gguf: "blk.{bid}.attn_output.weight"}, // ATTN_OUT (llama-hf)
	{hf: "model.layers.{bid}.self_attn.o_proj.bias", gguf: "blk.{bid}.attn_output.bias"},
	{hf: "model.layers.{bid}.self_attn.qkv_proj.weight", gguf: "blk.{bid}.attn_qkv.weight"},  // ATTN_QKV "# phi3": rows Q, K, V (Phi3Attention splits qkv in that order)
	{hf: "model.layers.{bid}.self_attn.q_norm.weight", gguf: "blk.{bid}.attn_q_norm.weight"}, // ATTN_Q_NORM (qwen3, gemma3)
	{hf: "model.layers.{bid}.self_attn.k_norm.weight", gguf: "blk.{bid}.attn_k_norm.weight"}, // ATTN_K_NORM
	// Gemma 2/3 norm after attention and around the FFN: ATTN_POST_NORM
	// "post_attention_layernorm # gemma2", FFN_PRE_NORM
	// "pre_feedforward_layernorm # gemma2" (→ ffn_norm), FFN_POST_NORM
	// "post_feedforward_layernorm # gemma2". Listed before the Llama
	// meaning of post_attention_layernorm.
	{hf: "model.layers.{bid}.post_attention_layernorm.weight", gguf: "blk.{bid}.post_attention_norm.weight", archs: gemmas},
	{hf: "model.layers.{bid}.pre_feedforward_layernorm.weight", gguf: "blk.{bid}.ffn_norm.weight", archs: gemmas},
	{hf: "model.layers.{bid}.post_feedforward_layernorm.weight", gguf: "blk.{bid}.post_ffw_norm.weight", archs: gemmas},
	{hf: "model.layers.{bid}.post_attention_layernorm.weight", gguf: "blk.{bid}.post_attention_norm.weight", archs: qwen35}, // Qwen3.5: the FFN input norm under this name
	{hf: "model.layers.{bid}.post_attention_layernorm.weight", gguf: "blk.{bid}.ffn_norm.weight"},                           // FFN_NORM (llama-hf)
	{hf: "model.layers.{bid}.mlp.gate_proj.weight", gguf: "blk.{bid}.ffn_gate.weight"},                                      // FFN_GATE (llama-hf)
	{hf: "model.layers.{bid}.mlp.up_proj.weight", gguf: "blk.{bid}.ffn_up.weight"},                                          // FFN_UP (llama-hf)
	{hf: "model.layers.{bid}.mlp.down_proj.weight", gguf: "blk.{bid}.ffn_down.weight"},                                      // FFN_DOWN (llama-hf)
	{hf: "model.layers.{bid}.mlp.gate_proj.bias", gguf: "blk.{bid}.ffn_gate.bias"},
	{hf: "model.layers.{bid}.mlp.up_proj.bias", gguf: "blk.{bid}.ffn_up.bias"},
	{hf: "model.layers.{bid}.mlp.down_proj.bias", gguf: "blk.{bid}.ffn_down.bias"},
	// FFN_UP "model.layers.{bid}.mlp.gate_up_proj # phi3": (2·ffn, dim),
	// gate rows first (Phi3MLP: gate, up = gate_up.chunk(2)), kept as is.
	{hf: "model.layers.{bid}.mlp.gate_up_proj.weight", gguf: "blk.{bid}.ffn_up.weight", archs: []string{"phi3"}},
	// Qwen3.5 (tensor_mapping.py "# qwen3next" entries): the linear
	// attention's projections and state parameters; post_attention_layernorm
	// is the FFN input norm, which llama.cpp names post_attention_norm.
	// Value transforms in the model's loader (conversion/qwen.py
	// Qwen3NextModel.modify_tensors and _LinearAttentionVReorderBase).
	{hf: "model.layers.{bid}.linear_attn.in_proj_qkv.weight", gguf: "blk.{bid}.attn_qkv.weight", archs: qwen35},
	{hf: "model.layers.{bid}.linear_attn.in_proj_z.weight", gguf: "blk.{bid}.attn_gate.weight", archs: qwen35},
	{hf: "model.layers.{bid}.linear_attn.in_proj_b.weight", gguf: "blk.{bid}.ssm_beta.weight", archs: qwen35},
	{hf: "model.layers.{bid}.linear_attn.in_proj_a.weight", gguf: "blk.{bid}.ssm_alpha.weight", archs: qwen35},
	{hf: "model.layers.{bid}.linear_attn.conv1d.weight", gguf: "blk.{bid}.ssm_conv1d.weight", archs: qwen35},
	{hf: "model.layers.{bid}.linear_attn.dt_bias", gguf: "blk.{bid}.ssm_dt.bias", archs: qwen35},
	{hf: "model.layers.{bid}.linear_attn.A_log", gguf: "blk.{bid}.ssm_a", archs: qwen35},
	{hf: "model.layers.{bid}.linear_attn.norm.weight", gguf: "blk.{bid}.ssm_norm.weight", archs: qwen35},
	{hf: "model.layers.{bid}.linear_attn.out_proj.weight", gguf: "blk.{bid}.ssm_out.weight", archs: qwen35},
	// Gemma 4 (tensor_mapping.py "# gemma3n" / "# gemma4" entries;
	// transformers modeling_gemma4.py): the per-layer inputs
	// (PER_LAYER_TOKEN_EMBD "model.embed_tokens_per_layer", used × √P by
	// the graph as by Gemma4TextScaledWordEmbedding; PER_LAYER_MODEL_PROJ,
	// PER_LAYER_PROJ_NORM, PER_LAYER_INP_GATE, PER_LAYER_PROJ,
	// PER_LAYER_POST_NORM), the layer's output scale (LAYER_OUT_SCALE
	// "layer_scalar", a (1) buffer; Gemma4Model.filter_tensors adds
	// ".weight"), and the 26B-A4B's mixture: FFN_GATE_INP "router.proj",
	// the router's input scale and per-expert scale (modify_tensors:
	// router.scale → ffn_gate_inp.scale, router.per_expert_scale →
	// ffn_down_exps.scale, which weighs the expert's output as
	// Gemma4TextRouter weighs its top-k weight), FFN_GATE_UP_EXP
	// "experts.gate_up_proj" (E, 2·ffn, dim: gate rows then up rows per
	// expert, Gemma4TextExperts' chunk(2)) and FFN_DOWN_EXP
	// "experts.down_proj" (E, dim, ffn), both 3-D as they are, and the
	// extra norms FFN_PRE_NORM_2, FFN_POST_NORM_1, FFN_POST_NORM_2.
	// Gemma4RMSNorm multiplies by the weight itself: no shift (NormShift).
	{hf: "model.embed_tokens_per_layer.weight", gguf: "per_layer_token_embd.weight", archs: gemma4},
	{hf: "model.per_layer_model_projection.weight", gguf: "per_layer_model_proj.weight", archs: gemma4},
	{hf: "model.per_layer_projection_norm.weight", gguf: "per_layer_proj_norm.weight", archs: gemma4},
	{hf: "model.layers.{bid}.per_layer_input_gate.weight", gguf: "blk.{bid}.inp_gate.weight", archs: gemma4},
	{hf: "model.layers.{bid}.per_layer_projection.weight", gguf: "blk.{bid}.proj.weight", archs: gemma4},
	{hf: "model.layers.{bid}.post_per_layer_input_norm.weight", gguf: "blk.{bid}.post_norm.weight", archs: gemma4},
	{hf: "model.layers.{bid}.layer_scalar", gguf: "blk.{bid}.layer_output_scale.weight", archs: gemma4},
	{hf: "model.layers.{bid}.router.proj.weight", gguf: "blk.{bid}.ffn_gate_inp.weight", archs: gemma4},
	{hf: "model.layers.{bid}.router.scale", gguf: "blk.{bid}.ffn_gate_inp.scale", archs: gemma4},
	{hf: "model.layers.{bid}.router.per_expert_scale", gguf: "blk.{bid}.ffn_down_exps.scale", archs: gemma4},
	{hf: "model.layers.{bid}.experts.gate_up_proj", gguf: "blk.{bid}.ffn_gate_up_exps.weight", archs: gemma4},
	{hf: "model.layers.{bid}.experts.down_proj", gguf: "blk.{bid}.ffn_down_exps.weight", archs: gemma4},
	{hf: "model.layers.{bid}.pre_feedforward_layernorm_2.weight", gguf: "blk.{bid}.pre_ffw_norm_2.weight", archs: gemma4},
	{hf: "model.layers.{bid}.post_feedforward_layernorm_1.weight", gguf: "blk.{bid}.post_ffw_norm_1.weight", archs: gemma4},
	{hf: "model.layers.{bid}.post_feedforward_layernorm_2.weight", gguf: "blk.{bid}.post_ffw_norm_2.weight", archs: gemma4},
	// LFM2 (tensor_mapping.py "# lfm2" entries; conversion/lfm2.py
	// squeezes conv.conv's (dim, 1, L) to (dim, L), which the reader does).
	{hf: "model.embedding_norm.weight", gguf: "token_embd_norm.weight", archs: lfm2},                           // OUTPUT_NORM_LFM2 "model.embedding_norm"
	{hf: "model.layers.{bid}.operator_norm.weight", gguf: "blk.{bid}.attn_norm.weight", archs: lfm2},           // ATTN_NORM "operator_norm # lfm2"
	{hf: "model.layers.{bid}.ffn_norm.weight", gguf: "blk.{bid}.ffn_norm.weight", archs: lfm2},                 // FFN_NORM
	{hf: "model.layers.{bid}.self_attn.out_proj.weight", gguf: "blk.{bid}.attn_output.weight", archs: lfm2},    // ATTN_OUT "self_attn.out_proj # lfm2"
	{hf: "model.layers.{bid}.self_attn.q_layernorm.weight", gguf: "blk.{bid}.attn_q_norm.weight", archs: lfm2}, // ATTN_Q_NORM
	{hf: "model.layers.{bid}.self_attn.k_layernorm.weight", gguf: "blk.{bid}.attn_k_norm.weight", archs: lfm2}, // ATTN_K_NORM
	{hf: "model.layers.{bid}.conv.in_proj.weight", gguf: "blk.{bid}.shortconv.in_proj.weight", archs: lfm2},    // SHORTCONV_INPROJ
	{hf: "model.layers.{bid}.conv.out_proj.weight", gguf: "blk.{bid}.shortconv.out_proj.weight", archs: lfm2},  // SHORTCONV_OUTPROJ
	{hf: "model.layers.{bid}.conv.conv.weight", gguf: "blk.{bid}.shortconv.conv.weight", archs: lfm2},          // SHORTCONV_CONV
	{hf: "model.layers.{bid}.feed_forward.w1.weight", gguf: "blk.{bid}.ffn_gate.weight", archs: lfm2},          // FFN_GATE "feed_forward.w1"
	{hf: "model.layers.{bid}.feed_forward.w3.weight", gguf: "blk.{bid}.ffn_up.weight", archs: lfm2},            // FFN_UP "feed_forward.w3"
	{hf: "model.layers.{bid}.feed_forward.w2.weight", gguf: "blk.{bid}.ffn_down.weight", archs: lfm2},          // FFN_DOWN "feed_forward.w2"
	// LFM2-MoE's sparse layers (tensor_mapping.py "# lfm2moe" entries;
	// transformers modeling_lfm2_moe.py Lfm2MoeSparseMoeBlock): the router
	// FFN_GATE_INP "feed_forward.gate", the selection bias FFN_EXP_PROBS_B
	// "feed_forward.expert_bias" (a buffer; LFM2MoeModel.filter_tensors
	// renames it …expert_bias.bias), and experts.{xid}.w1/w3/w2, which
	// LFM2MoeModel.modify_tensors stacks as "layers.{bid}.feed_forward.
	// experts.w1" and so on: FFN_GATE_EXP "…experts.w1 # mixtral (merged)",
	// FFN_UP_EXP "…experts.w3", FFN_DOWN_EXP "…experts.w2" (Lfm2MoeMLP:
	// w2(silu(w1·x) ⊙ w3·x)).
	{hf: "model.layers.{bid}.feed_forward.gate.weight", gguf: "blk.{bid}.ffn_gate_inp.weight", archs: lfm2moe},
	{hf: "model.layers.{bid}.feed_forward.expert_bias", gguf: "blk.{bid}.exp_probs_b.bias", archs: lfm2moe},
	{hf: "model.layers.{bid}.feed_forward.experts.{xid}.w1.weight", gguf: "blk.{bid}.ffn_gate_exps.weight", archs: lfm2moe},
	{hf: "model.layers.{bid}.feed_forward.experts.{xid}.w3.weight", gguf: "blk.{bid}.ffn_up_exps.weight", archs: lfm2moe},
	{hf: "model.layers.{bid}.feed_forward.experts.{xid}.w2.weight", gguf: "blk.{bid}.ffn_down_exps.weight", archs: lfm2moe},
	// Granite MoE (transformers modeling_granitemoe.py, JetMoe's parallel
	// experts; modeling_granitemoeshared.py): the router FFN_GATE_INP
	// "block_sparse_moe.router.layer # granitemoe"; the experts' fused
	// input_linear (E, 2·ffn, dim), gate rows then up rows per expert
	// (chunk(2): silu(first) ⊙ second), which GraniteMoeModel.
	// modify_tensors splits into FFN_GATE_EXP and FFN_UP_EXP — the loader
	// reads it as FFN_GATE_UP_EXP, the name llama.cpp keeps it fused under
	// (GraniteMoeSWAModel; Gemma 4's layout) — and output_linear (E, dim,
	// ffn) FFN_DOWN_EXP "block_sparse_moe.output_linear # granitemoe"; the
	// shared expert's fused shared_mlp.input_linear (2·shared, dim), gate
	// rows first (split into FFN_GATE_SHEXP and FFN_UP_SHEXP by the
	// converter; read as ffn_up_shexp of 2·shared rows, GraniteMoeSWA's
	// fused form, like phi3's gate_up_proj as ffn_up) and output_linear
	// FFN_DOWN_SHEXP "shared_mlp.output_linear # granitemoe".
	{hf: "model.layers.{bid}.block_sparse_moe.router.layer.weight", gguf: "blk.{bid}.ffn_gate_inp.weight", archs: graniteMoE},
	{hf: "model.layers.{bid}.block_sparse_moe.input_linear.weight", gguf: "blk.{bid}." + FFNGateUpExps + ".weight", archs: graniteMoE},
	{hf: "model.layers.{bid}.block_sparse_moe.output_linear.weight", gguf: "blk.{bid}.ffn_down_exps.weight", archs: graniteMoE},
	{hf: "model.layers.{bid}.shared_mlp.input_linear.weight", gguf: "blk.{bid}.ffn_up_shexp.weight", archs: graniteMoE},
	{hf: "model.layers.{bid}.shared_mlp.output_linear.weight", gguf: "blk.{bid}.ffn_down_shexp.weight", archs: graniteMoE},
	// Routers: FFN_GATE_INP "block_sparse_moe.gate # mixtral",
	// "mlp.gate # qwen2moe".
	{hf: "model.layers.{bid}.block_sparse_moe.gate.weight", gguf: "blk.{bid}.ffn_gate_inp.weight", archs: []string{"llama"}},
	{hf: "model.layers.{bid}.mlp.gate.weight", gguf: "blk.{bid}.ffn_gate_inp.weight", archs: []string{"qwen3moe", "qwen35moe"}},
	// Qwen3.5-MoE's shared expert (FFN_*_SHEXP "mlp.shared_expert.*
	// # qwen2moe") and its σ gate, an (1, dim) HF linear stored as a
	// dim-vector (FFN_GATE_INP_SHEXP "mlp.shared_expert_gate").
	{hf: "model.layers.{bid}.mlp.shared_expert.gate_proj.weight", gguf: "blk.{bid}.ffn_gate_shexp.weight", archs: []string{"qwen35moe"}},
	{hf: "model.layers.{bid}.mlp.shared_expert.up_proj.weight", gguf: "blk.{bid}.ffn_up_shexp.weight", archs: []string{"qwen35moe"}},
	{hf: "model.layers.{bid}.mlp.shared_expert.down_proj.weight", gguf: "blk.{bid}.ffn_down_shexp.weight", archs: []string{"qwen35moe"}},
	{hf: "model.layers.{bid}.mlp.shared_expert_gate.weight", gguf: "blk.{bid}.ffn_gate_inp_shexp.weight", archs: []string{"qwen35moe"}},
	// Experts, one HF tensor each, merged into 3-D GGUF tensors (expert
	// xid is slab xid): conversion/llama.py merges
	// block_sparse_moe.experts.{xid}.w1/w2/w3 into FFN_GATE_EXP /
	// FFN_DOWN_EXP / FFN_UP_EXP ("feed_forward.experts.w1 # mixtral
	// (merged)"; MixtralBlockSparseTop2MLP: w2(silu(w1·x) ⊙ w3·x));
	// conversion/qwen.py merges mlp.experts.{xid}.gate_proj/up_proj/
	// down_proj ("mlp.experts.gate_proj # qwen2moe (merged)").
	{hf: "model.layers.{bid}.block_sparse_moe.experts.{xid}.w1.weight", gguf: "blk.{bid}.ffn_gate_exps.weight", archs: []string{"llama"}},
	{hf: "model.layers.{bid}.block_sparse_moe.experts.{xid}.w2.weight", gguf: "blk.{bid}.ffn_down_exps.weight", archs: []string{"llama"}},
	{hf: "model.layers.{bid}.block_sparse_moe.experts.{xid}.w3.weight", gguf: "blk.{bid}.ffn_up_exps.weight", archs: []string{"llama"}},
	{hf: "model.layers.{bid}.mlp.experts.{xid}.gate_proj.weight", gguf: "blk.{bid}.ffn_gate_exps.weight", archs: []string{"qwen3moe", "qwen35moe"}},
	{hf: "model.layers.{bid}.mlp.experts.{xid}.up_proj.weight", gguf: "blk.{bid}.ffn_up_exps.weight", archs: []string{"qwen3moe", "qwen35moe"}},
	{hf: "model.layers.{bid}.mlp.experts.{xid}.down_proj.weight", gguf: "blk.{bid}.ffn_down_exps.weight", archs: []string{"qwen3moe", "qwen35moe"}},

	// GPT-2 (TOKEN_EMBD "transformer.wte # gpt2", POS_EMBD "transformer.wpe",
	// ATTN_NORM "transformer.h.{bid}.ln_1", ATTN_QKV "…attn.c_attn", …);
	// the "transformer." prefix is optional in checkpoints.
	{hf: "transformer.wte.weight", gguf: "token_embd.weight", archs: gpt2},
	{hf: "transformer.wpe.weight", gguf: "position_embd.weight", archs: gpt2},
	{hf: "transformer.ln_f.weight", gguf: "output_norm.weight", archs: gpt2},
	{hf: "transformer.ln_f.bias", gguf: "output_norm.bias", archs: gpt2},
	{hf: "lm_head.weight", gguf: "output.weight", archs: gpt2},
	{hf: "transformer.h.{bid}.ln_1.weight", gguf: "blk.{bid}.attn_norm.weight", archs: gpt2},
	{hf: "transformer.h.{bid}.ln_1.bias", gguf: "blk.{bid}.attn_norm.bias", archs: gpt2},
	{hf: "transformer.h.{bid}.attn.c_attn.weight", gguf: "blk.{bid}.attn_qkv.weight", archs: gpt2},
	{hf: "transformer.h.{bid}.attn.c_attn.bias", gguf: "blk.{bid}.attn_qkv.bias", archs: gpt2},
	{hf: "transformer.h.{bid}.attn.c_proj.weight", gguf: "blk.{bid}.attn_output.weight", archs: gpt2},
	{hf: "transformer.h.{bid}.attn.c_proj.bias", gguf: "blk.{bid}.attn_output.bias", archs: gpt2},
	{hf: "transformer.h.{bid}.ln_2.weight", gguf: "blk.{bid}.ffn_norm.weight", archs: gpt2},
	{hf: "transformer.h.{bid}.ln_2.bias", gguf: "blk.{bid}.ffn_norm.bias", archs: gpt2},
	{hf: "transformer.h.{bid}.mlp.c_fc.weight", gguf: "blk.{bid}.ffn_up.weight", archs: gpt2},
	{hf: "transformer.h.{bid}.mlp.c_fc.bias", gguf: "blk.{bid}.ffn_up.bias", archs: gpt2},
	{hf: "transformer.h.{bid}.mlp.c_proj.weight", gguf: "blk.{bid}.ffn_down.weight", archs: gpt2},
	{hf: "transformer.h.{bid}.mlp.c_proj.bias", gguf: "blk.{bid}.ffn_down.bias", archs: gpt2},
}

var gpt2 = []string{"gpt2"}

func init() {
	for _, e := range hfNames {
		p := regexp.QuoteMeta(e.hf)
		p = strings.Replace(p, `\{bid\}`, `(?P<bid>[0-9]+)`, 1)
		p = strings.Replace(p, `\{xid\}`, `(?P<xid>[0-9]+)`, 1)
		e.re = regexp.MustCompile("^" + p + "$")
	}
}

func (e *hfEntry) applies(arch string) bool {
	if e.archs == nil {
		return arch != "gpt2"
	}
	return slices.Contains(e.archs, arch)
}

// HFName is where a Hugging Face tensor goes in a GGUF file.
type HFName struct {
	GGUF   string // llama.cpp tensor name
	Layer  int    // block, -1 outside blocks
	Expert int    // slab of a merged 3-D expert tensor, -1 if not an expert
}

// HFToGGUF maps a Hugging Face tensor name of a checkpoint converting to
// GGUF architecture arch; ok is false for names llama.cpp does not map.
// GPT-2 names may lack their "transformer." prefix.
func HFToGGUF(arch, hf string) (HFName, bool) {
	if arch == "gpt2" && !strings.HasPrefix(hf, "transformer.") && hf != "lm_head.weight" {
		hf = "transformer." + hf
	}
	for _, e := range hfNames {
		if !e.applies(arch) {
			continue
		}
		m := e.re.FindStringSubmatch(hf)
		if m == nil {
			continue
		}
		out := HFName{GGUF: e.gguf, Layer: -1, Expert: -1}
		for i, g := range e.re.SubexpNames() {
			n, err := strconv.Atoi(m[i])
			if err != nil || n > 1<<20 {
				continue
			}
			switch g {
			case "bid":
				out.Layer = n
				out.GGUF = strings.Replace(out.GGUF, "{bid}", m[i], 1)
			case "xid":
				out.Expert = n
			}
		}
		return out, true
	}
	return HFName{}, false
}

// GGUFToHF is the inverse: the Hugging Face name of GGUF tensor gguf (of
// expert xid for a merged expert tensor, else xid is ignored).
func GGUFToHF(arch, gguf string, xid int) (string, bool) {
	_, layer := KindOf(gguf)
	// Entries for named architectures first (phi3's gate_up_proj over
	// the generic up_proj).
	entries := slices.Clone(hfNames)
	slices.SortStableFunc(entries, func(a, b *hfEntry) int {
		if (a.archs != nil) == (b.archs != nil) {
			return 0
		}
		if a.archs != nil {
			return -1
		}
		return 1
	})
	for _, e := range entries {
		if !e.applies(arch) {
			continue
		}
		g := e.gguf
		if layer >= 0 {
			g = strings.Replace(g, "{bid}", strconv.Itoa(layer), 1)
		}
		if g != gguf {
			continue
		}
		h := strings.Replace(e.hf, "{bid}", strconv.Itoa(layer), 1)
		return strings.Replace(h, "{xid}", strconv.Itoa(xid), 1), true
	}
	return "", false
}

// NormShift is what llama.cpp's converter adds to a Hugging Face tensor
// converting to GGUF tensor gguf: Gemma's RMSNorm multiplies by (1 + w)
// (transformers GemmaRMSNorm / Gemma3RMSNorm: x·(1 + weight)), and the
// converter stores 1 + w for every "…norm.weight" (conversion/gemma.py
// Gemma2Model.modify_tensors, Gemma3Model.norm_shift), q/k norms
// included, so llama.cpp multiplies by the stored value.
func NormShift(arch, gguf string) float32 {
	if (arch == "gemma2" || arch == "gemma3") && strings.HasSuffix(gguf, "norm.weight") {
		return 1
	}
	// Gemma 4 is not shifted: Gemma4RMSNorm multiplies by the weight
	// (Gemma4Model.norm_shift is 0).
	// Qwen3.5's RMSNorms multiply by 1 + weight, except the delta net's
	// gated norm (Qwen3NextModel.modify_tensors adds 1 to every
	// norm.weight but linear_attn.norm.weight).
	if (arch == "qwen35" || arch == "qwen35moe") && strings.HasSuffix(gguf, "norm.weight") && !strings.HasSuffix(gguf, "ssm_norm.weight") {
		return 1
	}
	return 0
}

// PermutesQK reports whether converting arch's Hugging Face Q/K rows to
// GGUF permutes them from the rotate-halves layout to interleaved pairs
// (LlamaModel.permute in conversion/llama.py; the NEOX architectures keep
// them as they are).
func PermutesQK(arch string) bool {
	a, ok := Archs[arch]
	return ok && !a.RopeNeox && arch != "gpt2"
}

// QKRowSource is the Hugging Face row that row r of a permuted Q or K
// matrix (heads of hd rows) comes from: within a head, row 2i+j is row
// j·hd/2+i (LlamaModel.permute: reshape(heads, 2, hd/2, …).swapaxes(1, 2)).
func QKRowSource(r, hd int) int {
	h, local := r/hd, r%hd
	return h*hd + (local%2)*(hd/2) + local/2
}
