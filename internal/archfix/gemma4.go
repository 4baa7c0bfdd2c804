// Package archfix writes variants of the shared architecture fixtures
// (../shared/testdata/gguf-archs) for the forms no llama.cpp golden
// covers, so that the model, convert and Hugging Face tests of several
// packages run the same files. Values are seeded: every run writes the
// same bytes.
package archfix

import (
	"fmt"
	"math/rand/v2"

	"nanoserve/gguf"
	"nanoserve/tensor"
)

// Gemma4MoE writes the gemma4 fixture at src with a mixture of experts in
// every layer, as the 26B-A4B has (4 experts, 2 used, expert ffn 16):
// router and its input scale, pre/post norms around the two branches,
// fused gate_up experts on even layers and separate ones on odd layers,
// per-expert output scales on all layers but layer 1.
func Gemma4MoE(src, dst string) error {
	f, err := gguf.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	w := gguf.NewWriter()
	if err := w.AddFile(f); err != nil { // the fixture's keys and tensors, then the experts'
		return err
	}
	const E, used, eh, dim = 4, 2, 16, 32
	for _, kv := range []gguf.KV{
		{Key: "gemma4.expert_count", Value: gguf.Uint32(E)},
		{Key: "gemma4.expert_used_count", Value: gguf.Uint32(used)},
		{Key: "gemma4.expert_feed_forward_length", Value: gguf.Uint32(eh)},
	} {
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(26, 4))
	vals := func(n int, center, spread float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(center + spread*(2*rng.Float64()-1))
		}
		return v
	}
	f16 := func(v []float32) []byte {
		b := make([]byte, 2*len(v))
		for i, x := range v {
			h := tensor.F32ToF16(x)
			b[2*i], b[2*i+1] = byte(h), byte(h>>8)
		}
		return b
	}
	var addErr error
	add := func(name string, typ tensor.DType, data []byte, dims ...uint64) {
		if err := w.AddTensor(name, typ, dims, data); err != nil && addErr == nil {
			addErr = err
		}
	}
	for l := range 6 {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"ffn_gate_inp.weight", tensor.F32, tensor.F32Bytes(vals(E*dim, 0, 1.5)), dim, E)
		add(p+"ffn_gate_inp.scale", tensor.F32, tensor.F32Bytes(vals(dim, 1, 0.3)), dim)
		for _, n := range []string{"pre_ffw_norm_2", "post_ffw_norm_1", "post_ffw_norm_2"} {
			add(p+n+".weight", tensor.F32, tensor.F32Bytes(vals(dim, 1, 0.2)), dim)
		}
		if l%2 == 0 {
			add(p+"ffn_gate_up_exps.weight", tensor.F16, f16(vals(E*2*eh*dim, 0, 0.3)), dim, 2*eh, E)
		} else {
			add(p+"ffn_gate_exps.weight", tensor.F16, f16(vals(E*eh*dim, 0, 0.3)), dim, eh, E)
			add(p+"ffn_up_exps.weight", tensor.F16, f16(vals(E*eh*dim, 0, 0.3)), dim, eh, E)
		}
		add(p+"ffn_down_exps.weight", tensor.F16, f16(vals(E*dim*eh, 0, 0.3)), eh, dim, E)
		if l != 1 {
			add(p+"ffn_down_exps.scale", tensor.F32, tensor.F32Bytes(vals(E, 1, 0.5)), E)
		}
	}
	if addErr != nil {
		return addErr
	}
	return w.WriteFile(dst)
}

// Gemma4KEqV writes the gemma4 fixture at src with the larger Gemma 4s'
// attention (26B/31B): its global layers get 1 KV head instead of 2
// (head_count_kv [2 2 1 2 2 1]; attn_k keeps its first head's rows) and
// no attn_v, so their values are their keys' projection.
func Gemma4KEqV(src, dst string) error {
	f, err := gguf.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		if kv.Key == "gemma4.attention.head_count_kv" {
			kv.Value = gguf.NewArray([]int32{2, 2, 1, 2, 2, 1})
		}
		if err := w.AddKV(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	for _, ti := range f.Tensors {
		dims, data := ti.Dims, ti.Data
		switch ti.Name {
		case "blk.2.attn_v.weight", "blk.5.attn_v.weight":
			continue
		case "blk.2.attn_k.weight", "blk.5.attn_k.weight": // F16 (32 cols): the first 32 rows
			dims, data = []uint64{dims[0], 32}, data[:32*32*2]
		}
		if err := w.AddTensor(ti.Name, ti.Type, dims, data); err != nil {
			return err
		}
	}
	return w.WriteFile(dst)
}
