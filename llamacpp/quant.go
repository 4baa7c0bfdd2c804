package llamacpp

import (
	"strings"

	"nanoserve/tensor"
)

// Quantization recipes: llama-quantize's file types (general.file_type =
// llama_ftype) and the per-tensor type choice of llama_tensor_get_type
// (src/llama-quant.cpp) for the types nanoserve can write. convert's
// --quantize and bench's synthetic files both use it.

// FileType is one llama.cpp file type: the type most matrices get, and for
// the K-quant mixes ('S', 'M') which tensors get more bits.
type FileType struct {
	Name  string       // llama-quantize's name, lower case (q4_k_m)
	ID    uint32       // general.file_type (LLAMA_FTYPE_*)
	Base  tensor.DType // the type of most matrices
	mixed byte         // 0: uniform; 'S' or 'M': K-quant small/medium mix
}

// FileTypes are the file types nanoserve writes (include/llama.h
// LLAMA_FTYPE_ALL_F32 = 0 … LLAMA_FTYPE_MOSTLY_BF16 = 32).
var FileTypes = []FileType{
	{"f32", 0, tensor.F32, 0}, {"f16", 1, tensor.F16, 0}, {"bf16", 32, tensor.BF16, 0},
	{"q8_0", 7, tensor.Q8_0, 0}, {"q4_0", 2, tensor.Q4_0, 0}, {"q4_1", 3, tensor.Q4_1, 0},
	{"q5_0", 8, tensor.Q5_0, 0}, {"q5_1", 9, tensor.Q5_1, 0}, {"q6_k", 18, tensor.Q6_K, 0},
	{"q4_k_s", 14, tensor.Q4_K, 'S'}, {"q4_k_m", 15, tensor.Q4_K, 'M'},
	{"q5_k_s", 16, tensor.Q5_K, 'S'}, {"q5_k_m", 17, tensor.Q5_K, 'M'},
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
	// experts llama.cpp gives attn_v and attn_k Q8_0 and, in the Q4_K
	// mixes, attn_output Q5_K.
	Experts int
}

// UseMoreBits is llama.cpp's choice of layers that get a bigger type in
// the _M mixes: the first and last eighth, and every third one between
// (use_more_bits in src/llama-quant.cpp).
func UseMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// TensorType is the type the file type gives a matrix (1-D tensors —
// norms, biases — and the F32 router ffn_gate_inp are not matrices it
// quantizes; callers keep them F32). Like llama_tensor_get_type for these
// file types: quantized types store the output matrix as Q6_K (Q8_0 stays
// Q8_0); _M mixes use Q6_K for attn_v and ffn_down in UseMoreBits layers
// and Q5_K/Q6_K for a fused attn_qkv; _S mixes use Q5_K for attn_v of the
// first four layers (q4_k_s) and ffn_down of the first eighth; 8-expert
// models get Q8_0 attn_v/attn_k and Q5_K attn_output (q4_k_s/m). A type
// whose block does not divide the row length falls back to a legacy type
// (Q4_K→Q5_0, Q5_K→Q5_1, Q6_K→Q8_0), and to F16 if that does not divide
// either.
func (f FileType) TensorType(k TensorKind) tensor.DType {
	t := f.Base
	if !f.Quantized() {
		return t
	}
	v, ffnDown := k.Name == "attn_v", strings.Contains(k.Name, "ffn_down")
	switch {
	case k.Output:
		if t != tensor.Q8_0 {
			t = tensor.Q6_K
		}
	case v || k.Name == "attn_k":
		if v && f.mixed == 'M' && UseMoreBits(k.Layer, k.Layers) {
			t = tensor.Q6_K
		} else if v && f.Name == "q4_k_s" && k.Layer < 4 {
			t = tensor.Q5_K
		}
		if k.Experts == 8 {
			t = tensor.Q8_0
		}
	case k.Name == "attn_output":
		if k.Experts == 8 && (f.Name == "q4_k_s" || f.Name == "q4_k_m") {
			t = tensor.Q5_K
		}
	case f.mixed != 0 && k.Name == "attn_qkv":
		switch f.Name {
		case "q4_k_m":
			t = tensor.Q5_K
		case "q5_k_m":
			t = tensor.Q6_K
		}
	case f.mixed != 0 && ffnDown:
		if f.mixed == 'M' && UseMoreBits(k.Layer, k.Layers) {
			t = tensor.Q6_K
		} else if f.Name == "q4_k_s" && k.Layer < k.Layers/8 {
			t = tensor.Q5_K
		}
	}
	if k.Cols%t.BlockSize() != 0 {
		switch t {
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
