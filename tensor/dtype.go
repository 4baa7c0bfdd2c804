// Package tensor holds nanoserve's numeric kernels: the weight element types
// (float and GGUF block-quantized formats), matrix-vector and matrix-matrix
// products over them, and the small vector ops a transformer needs.
//
// Every kernel has a plain Go reference version; fast versions (Go assembly
// behind CPU-feature detection) are tested against it.
//
// Batch invariance: MatMul computes every (weight row, token) product with
// one canonical arithmetic per weight type — the same activation
// quantization and the same reduction order over K whether the token is
// multiplied alone, beside other decodes or inside a prefill chunk of any
// size, whatever the worker count. A token's output row is therefore
// bit-identical for every batch it can share (TestMatMulBatchInvariant),
// and so are a model's logits (model's TestBatchInvariant, engine's
// TestConcurrentGreedyInvariant): greedy output does not change with
// server load. Multi-token kernels (the float tile GEMM, the four-token
// quantized row dots) vectorize along K exactly like the single-token row
// dots and must match them bit for bit; a kernel that puts tokens in its
// vector lanes or reduces in another order may not be added to MatMul.
// The guarantee holds per machine and build: each kernel set — the float
// kernels on zmm (AVX-512F hosts: one 16-lane accumulator per (row,
// token), folded 16→8 first), on ymm (AVX2: 8 lanes), NEON, and the pure-Go
// fallback — is invariant on its own, and the sets agree with each other
// only to rounding, since each reduces in its own order (FloatKernels
// names the one in use; NANOSERVE_NOAVX512=1 forces ymm on AVX-512 hosts).
// Within a set the row dot and every tile share one order bit for bit.
// See matmul.go.
package tensor

import (
	"fmt"
	"math"
	"strings"
)

// DType is a weight element type. The numeric values are GGUF's ggml_type
// ids, so a GGUF tensor's type field converts directly.
type DType uint32

const (
	F32  DType = 0
	F16  DType = 1
	Q4_0 DType = 2
	Q4_1 DType = 3
	Q5_0 DType = 6
	Q5_1 DType = 7
	Q8_0 DType = 8
	Q8_1 DType = 9
	Q2_K DType = 10
	Q3_K DType = 11
	Q4_K DType = 12
	Q5_K DType = 13
	Q6_K DType = 14
	Q8_K DType = 15
	// IQ4_NL, IQ3_S, IQ4_XS: llama.cpp's non-linear "i-quants"; MXFP4: the
	// OCP microscaling 4-bit float format (see dequant_iq.go).
	IQ4_NL DType = 20
	IQ3_S  DType = 21
	IQ4_XS DType = 23
	I8     DType = 24
	I16    DType = 25
	I32    DType = 26
	I64    DType = 27
	F64    DType = 28
	BF16   DType = 30
	MXFP4  DType = 39
)

// typeInfo: a block of blockSize elements takes blockBytes bytes.
type typeInfo struct {
	name       string
	blockSize  int
	blockBytes int
}

// types is indexed by DType; a zero entry means unknown. An array, not a
// map: BlockBytes sits on the kernels' hot path.
var types = [...]typeInfo{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	F64:  {"F64", 1, 8},
	I8:   {"I8", 1, 1},
	I16:  {"I16", 1, 2},
	I32:  {"I32", 1, 4},
	I64:  {"I64", 1, 8},
	Q4_0: {"Q4_0", 32, 2 + 16},
	Q4_1: {"Q4_1", 32, 2 + 2 + 16},
	Q5_0: {"Q5_0", 32, 2 + 4 + 16},
	Q5_1: {"Q5_1", 32, 2 + 2 + 4 + 16},
	Q8_0: {"Q8_0", 32, 2 + 32},
	Q8_1: {"Q8_1", 32, 2 + 2 + 32},
	Q2_K: {"Q2_K", 256, 256/16 + 256/4 + 2 + 2},
	Q3_K: {"Q3_K", 256, 256/8 + 256/4 + 12 + 2},
	Q4_K: {"Q4_K", 256, 2 + 2 + 12 + 256/2},
	Q5_K: {"Q5_K", 256, 2 + 2 + 12 + 256/8 + 256/2},
	Q6_K: {"Q6_K", 256, 256/2 + 256/4 + 256/16 + 2},
	Q8_K: {"Q8_K", 256, 4 + 256 + 256/16*2},
	// i-quants and MXFP4 (dequant_iq.go)
	IQ4_NL: {"IQ4_NL", 32, 2 + 16},
	IQ4_XS: {"IQ4_XS", 256, 2 + 2 + 256/64 + 256/2},
	IQ3_S:  {"IQ3_S", 256, 2 + 256/4 + 256/32 + 256/8 + 256/64},
	MXFP4:  {"MXFP4", 32, 1 + 16},
}

// Known reports whether t is a type this package can size.
func (t DType) Known() bool { return t.info().blockSize != 0 }

func (t DType) info() typeInfo {
	if int(t) < len(types) {
		return types[t]
	}
	return typeInfo{}
}

// String is the type's ggml name (also for the ggml types this package
// does not implement, e.g. IQ2_XXS), else "type(N)".
func (t DType) String() string {
	if ti := t.info(); ti.blockSize != 0 {
		return ti.name
	}
	if int(t) < len(ggmlNames) && ggmlNames[t] != "" {
		return ggmlNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// ggmlNames names every ggml_type id (ggml.h), implemented or not, so an
// unsupported tensor type is reported by name.
var ggmlNames = [...]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 4: "Q4_2", 5: "Q4_3", 6: "Q5_0", 7: "Q5_1",
	8: "Q8_0", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K",
	15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL",
	21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64",
	28: "F64", 29: "IQ1_M", 30: "BF16", 31: "Q4_0_4_4", 32: "Q4_0_4_8", 33: "Q4_0_8_8",
	34: "TQ1_0", 35: "TQ2_0", 36: "IQ4_NL_4_4", 37: "IQ4_NL_4_8", 38: "IQ4_NL_8_8",
	39: "MXFP4", 40: "NVFP4", 41: "Q1_0", 42: "Q2_0",
}

// IsGGML reports whether t is a ggml type id, implemented here or not.
func (t DType) IsGGML() bool { return int(t) < len(ggmlNames) && ggmlNames[t] != "" }

// SupportedTypes lists, in id order, the weight types MatMul and
// DequantizeRow support (Computable), for error messages.
func SupportedTypes() string {
	var names []string
	for t := range DType(len(types)) {
		if Computable(t) {
			names = append(names, t.String())
		}
	}
	return strings.Join(names, ", ")
}

// BlockSize is the number of elements in one block (1 for plain types).
func (t DType) BlockSize() int { return t.info().blockSize }

// blockBytes is the size in bytes of one block.
func (t DType) blockBytes() int { return t.info().blockBytes }

// RowBytes returns the byte size of n elements of type t. n must be a
// multiple of the block size.
func (t DType) RowBytes(n int) (int, error) {
	ti := t.info()
	if ti.blockSize == 0 {
		return 0, fmt.Errorf("tensor: unknown type %d", uint32(t))
	}
	if n%ti.blockSize != 0 {
		return 0, fmt.Errorf("tensor: %d elements of %s is not a whole number of %d-element blocks", n, ti.name, ti.blockSize)
	}
	return n / ti.blockSize * ti.blockBytes, nil
}

// F16ToF32 converts an IEEE 754 half-precision value to float32 (exact).
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: value = man * 2^-24
		f := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	case exp == 0x1f: // inf or nan
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// F32ToF16 converts float32 to half precision, rounding to nearest even.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff { // inf / nan
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal or zero in half
		if e < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint32(14 - e)
		half := man >> shift
		rem := man & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is still correct
	}
	return sign | uint16(half)
}

// bf16ToF32 converts bfloat16 to float32 (exact).
func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f32ToBF16 converts float32 to bfloat16, rounding to nearest even.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // nan
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
