package llamacpp

import (
	"strings"

	"nanoserve/tensor"
)

// Quantization recipes: llama-quantize's file types (general.file_type =
// llama_ftype) and the per-tensor type choice of llama_tensor_get_type
// (src/llama-quant.cpp) for the types nanoserve can write. convert's
// --quantize and bench's synthetic files both use it.

// FileType is one llama.cpp file type: the type most matrices get; the
// per-tensor exceptions are TensorType's, by Name.
type FileType struct {
	Name string       // llama-quantize's name, lower case (q4_k_m)
	ID   uint32       // general.file_type (LLAMA_FTYPE_*)
	Base tensor.DType // the type of most matrices
}

// FileTypes are the file types nanoserve writes (include/llama.h
// LLAMA_FTYPE_*): every one llama-quantize makes without an importance
// matrix, except those whose types nanoserve does not implement (Q2_K_S,
// IQ3_XS, TQ1_0, ...).
var FileTypes = []FileType{
	{"f32", 0, tensor.F32}, {"f16", 1, tensor.F16}, {"bf16", 32, tensor.BF16},
	{"q8_0", 7, tensor.Q8_0}, {"q4_0", 2, tensor.Q4_0}, {"q4_1", 3, tensor.Q4_1},
	{"q5_0", 8, tensor.Q5_0}, {"q5_1", 9, tensor.Q5_1}, {"q6_k", 18, tensor.Q6_K},
	{"q4_k_s", 14, tensor.Q4_K}, {"q4_k_m", 15, tensor.Q4_K},
	{"q5_k_s", 16, tensor.Q5_K}, {"q5_k_m", 17, tensor.Q5_K},
	{"q2_k", 10, tensor.Q2_K}, {"q3_k_s", 11, tensor.Q3_K}, {"q3_k_m", 12, tensor.Q3_K},
	{"q3_k_l", 13, tensor.Q3_K}, {"iq4_nl", 25, tensor.IQ4_NL}, {"iq4_xs", 30, tensor.IQ4_XS},
	{"iq3_s", 26, tensor.IQ3_S}, {"iq3_m", 27, tensor.IQ3_S}, {"mxfp4_moe", 38, tensor.MXFP4},
}

// ParseFileType looks up a file type by name (case-insensitive, "-" or
// "_").
func ParseFileType(name string) (FileType, bool) {
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	for _, f := range FileTypes {
		if f.Name == n {
			return f, true
		}
	}
	return FileType{}, false
}

// FileTypeByID looks up a file type by its general.file_type value.
func FileTypeByID(id uint32) (FileType, bool) {
	for _, f := range FileTypes {
		if f.ID == id {
			return f, true
		}
	}
	return FileType{}, false
}

// FileTypeNames lists the names, in FileTypes order.
func FileTypeNames() []string {
	out := make([]string, len(FileTypes))
	for i, f := range FileTypes {
		out[i] = f.Name
	}
	return out
}

// Quantized reports whether the file type's matrices are block-quantized.
func (f FileType) Quantized() bool {
	return f.Base != tensor.F32 && f.Base != tensor.F16 && f.Base != tensor.BF16
}

// String is the name.
func (f FileType) String() string { return f.Name }

// TensorKind is what llama_tensor_get_type looks at for one matrix.
type TensorKind struct {
	// Name is the tensor's name without "blk.N." and ".weight" (token_embd,
	// attn_q, attn_v, attn_qkv, attn_output, ffn_down, ffn_down_exps,
	// output, …).
	Name   string
	Layer  int  // its block; -1 outside blocks
	Layers int  // how many tensors of its category the model has (attn_v: count of attn_v/attn_qkv; ffn_down: of ffn_down)
	Cols   int  // row length (ggml ne[0])
	Output bool // the logits are computed with it (output, or a tied token_embd)
	// Experts is the model's expert_count (0 or 1: dense). With 8
	// experts llama.cpp gives attn_v and attn_k Q8_0 and, in most mixes,
	// attn_output Q5_K.
	Experts int
	// Stacked: a 3-D tensor of stacked experts (ne[2] > 1), what
	// mxfp4_moe stores as MXFP4.
	Stacked bool
	// GQA is the query heads per KV head (n_gqa); from 4 up attn_v gets
	// more bits in the q2_k, iq3_s, iq4_nl and iq4_xs mixes.
	GQA int
}

// UseMoreBits is llama.cpp's choice of layers that get a bigger type in
// the _M mixes: the first and last eighth, and every third one between
// (use_more_bits in src/llama-quant.cpp).
func UseMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// TensorType is the type the file type gives a matrix (1-D tensors —
// norms, biases — and the F32 router ffn_gate_inp are not matrices it
// quantizes; callers keep them F32): llama_tensor_get_type_impl of
// llama.cpp de3ff81 for these file types on non-Falcon models without an
// importance matrix, then tensor_type_fallback. By category (llama.cpp
// tensor_get_category; attn_v, attn_qkv and attn_kv_b count as attn_v):
//
//	output (or a tied token_embd)  Q6_K, Q8_0 for q8_0/mxfp4_moe or a row
//	                               that is no whole number of blocks
//	mxfp4_moe                      MXFP4 for stacked experts, else Q8_0
//	attn_v                         q2_k: Q4_K if GQA ≥ 4 else Q3_K;
//	                               iq3_s: Q4_K if GQA ≥ 4; iq3_m: Q4_K;
//	                               q3_k_m: Q5_K for the first two, then Q4_K;
//	                               q3_k_l: Q5_K; iq4_nl/iq4_xs: Q5_K if GQA ≥ 4;
//	                               q4_k_m/q5_k_m: Q6_K in UseMoreBits layers;
//	                               q4_k_s: Q5_K for the first four;
//	                               8 experts: Q8_0
//	attn_k                         8 experts: Q8_0
//	ffn_down (and _exps)           q2_k: Q3_K; q3_k_m: Q5_K in the first
//	                               sixteenth, else Q4_K; iq3_m: Q4_K in the
//	                               first eighth (8 experts: also UseMoreBits);
//	                               q3_k_l: Q5_K; q4_k_m/q5_k_m: Q6_K in
//	                               UseMoreBits layers; iq4_nl/iq4_xs and
//	                               q4_k_s: Q5_K in the first eighth
//	attn_output                    8 experts: Q5_K (q2_k, q3_k_s/m, iq4_nl,
//	                               q4_k_s/m, iq3_s/m, iq4_xs); else q2_k:
//	                               Q3_K, q3_k_m/iq3_m: Q4_K, q3_k_l: Q5_K
//
// A type whose block does not divide the row length falls back (IQ3_S,
// IQ4_XS → IQ4_NL; Q2_K, Q3_K → Q4_0; Q4_K → Q5_0; Q5_K → Q5_1; Q6_K →
// Q8_0), and to F16 if that does not divide either. (llama.cpp's 70B rule,
// attn_v Q3_K/Q4_K → Q5_K on models it sizes as 70B, is not applied.)
func (f FileType) TensorType(k TensorKind) tensor.DType {
	t := f.Base
	if !f.Quantized() {
		return t
	}
	n := f.Name
	eightExperts := k.Experts == 8
	attnV := k.Name == "attn_v" || k.Name == "attn_qkv" || k.Name == "attn_kv_b"
	switch {
	case k.Output:
		if n == "mxfp4_moe" || k.Cols%t.BlockSize() != 0 {
			t = tensor.Q8_0
		} else if t != tensor.Q8_0 {
			t = tensor.Q6_K
		}
	case n == "mxfp4_moe":
		t = tensor.Q8_0
		if k.Stacked {
			t = tensor.MXFP4
		}
	case k.Name == "token_embd":
	case attnV:
		switch {
		case n == "q2_k":
			t = tensor.Q3_K
			if k.GQA >= 4 {
				t = tensor.Q4_K
			}
		case n == "iq3_s" && k.GQA >= 4, n == "iq3_m":
			t = tensor.Q4_K
		case n == "q3_k_m":
			t = tensor.Q4_K
			if k.Layer < 2 {
				t = tensor.Q5_K
			}
		case n == "q3_k_l":
			t = tensor.Q5_K
		case (n == "iq4_nl" || n == "iq4_xs") && k.GQA >= 4:
			t = tensor.Q5_K
		case (n == "q4_k_m" || n == "q5_k_m") && UseMoreBits(k.Layer, k.Layers):
			t = tensor.Q6_K
		case n == "q4_k_s" && k.Layer < 4:
			t = tensor.Q5_K
		}
		if eightExperts {
			t = tensor.Q8_0
		}
	case k.Name == "attn_k":
		if eightExperts {
			t = tensor.Q8_0
		}
	case strings.Contains(k.Name, "ffn_down"):
		i, l := k.Layer, k.Layers
		switch {
		case n == "q2_k":
			t = tensor.Q3_K
		case n == "q3_k_m":
			t = tensor.Q4_K
			if i < l/16 {
				t = tensor.Q5_K
			}
		case n == "iq3_m" && (i < l/8 || eightExperts && UseMoreBits(i, l)):
			t = tensor.Q4_K
		case n == "q3_k_l":
			t = tensor.Q5_K
		case n == "q4_k_m":
			if UseMoreBits(i, l) {
				t = tensor.Q6_K
			}
		case i < l/8 && (n == "iq4_nl" || n == "iq4_xs"):
			t = tensor.Q5_K
		case n == "q5_k_m" && UseMoreBits(i, l):
			t = tensor.Q6_K
		case n == "q4_k_s" && i < l/8:
			t = tensor.Q5_K
		}
	case k.Name == "attn_output":
		if eightExperts {
			switch n {
			case "q2_k", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s", "q4_k_m", "iq3_s", "iq3_m", "iq4_xs":
				t = tensor.Q5_K
			}
			break
		}
		switch n {
		case "q2_k":
			t = tensor.Q3_K
		case "q3_k_m", "iq3_m":
			t = tensor.Q4_K
		case "q3_k_l":
			t = tensor.Q5_K
		}
	}
	if k.Cols%t.BlockSize() != 0 {
		switch t {
		case tensor.IQ3_S, tensor.IQ4_XS:
			t = tensor.IQ4_NL
		case tensor.Q2_K, tensor.Q3_K:
			t = tensor.Q4_0
		case tensor.Q4_K:
			t = tensor.Q5_0
		case tensor.Q5_K:
			t = tensor.Q5_1
		case tensor.Q6_K:
			t = tensor.Q8_0
		}
		if k.Cols%t.BlockSize() != 0 {
			t = tensor.F16
		}
	}
	return t
}

// KindOf splits a GGUF tensor name into the recipe's kind and layer:
// "blk.3.attn_v.weight" → ("attn_v", 3), "output.weight" → ("output", -1).
// A name without a well-formed "blk.<digits>." prefix has layer -1.
func KindOf(name string) (kind string, layer int) {
	kind = strings.TrimSuffix(name, ".weight")
	rest, ok := strings.CutPrefix(kind, "blk.")
	if !ok {
		return kind, -1
	}
	n, i := 0, 0
	for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
		n = n*10 + int(rest[i]-'0')
		if n > 1<<20 {
			return kind, -1
		}
	}
	if i == 0 || i >= len(rest) || rest[i] != '.' {
		return kind, -1
	}
	return rest[i+1:], n
}
