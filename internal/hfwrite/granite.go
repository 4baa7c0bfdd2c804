package hfwrite

import (
	"fmt"
	"math"
	"strings"

	"nanoserve/gguf"
	"nanoserve/safetensors"
)

// GraniteFromGGUF writes an IBM Granite checkpoint from a granite GGUF
// (GraniteForCausalLM) or a granitemoe one (GraniteMoeForCausalLM, or
// GraniteMoeSharedForCausalLM when it has a shared expert), from
// transformers' modeling_granite.py / modeling_granitemoe.py /
// modeling_granitemoeshared.py conventions:
//
//   - Llama's names and Q/K layout (FromGGUF's readLlama, convertTensor:
//     rows permuted back to rotate-halves, RoPE or not, as the converter
//     permuted them either way); no head_dim (GraniteConfig has none).
//   - config.json's multipliers from the scalars: embedding_multiplier
//     (embedding_scale), attention_multiplier (attention.scale; without
//     it llama.cpp scales by 1/√head_dim, which is written then),
//     residual_multiplier (residual_scale), logits_scaling (logit_scale);
//     position_embedding_type "nope" for rope.scaling.finetuned false.
//   - The MoE layers as GraniteMoeMoE holds them: block_sparse_moe.router.
//     layer (ffn_gate_inp), block_sparse_moe.input_linear (E, 2·ffn, dim):
//     expert e's ffn_gate_exps rows then its ffn_up_exps rows (chunk(2):
//     silu(first) ⊙ second), block_sparse_moe.output_linear (E, dim, ffn:
//     ffn_down_exps as it is); the shared expert's shared_mlp.input_linear
//     (2·shared, dim: ffn_gate_shexp rows then ffn_up_shexp rows) and
//     shared_mlp.output_linear (ffn_down_shexp); num_local_experts,
//     num_experts_per_tok, intermediate_size the experts' width,
//     shared_intermediate_size.
func GraniteFromGGUF(path, dir string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lf, cfg := readLlama(f)
	arch, u, fl := lf.arch, lf.u, lf.fl
	if arch != "granite" && arch != "granitemoe" {
		return fmt.Errorf("hfwrite: %s is %q, not granite or granitemoe", path, arch)
	}
	if lf.hd*lf.heads != u("embedding_length") {
		return fmt.Errorf("hfwrite: %s: head dim %d × %d heads is not the width (Granite has no head_dim)", path, lf.hd, lf.heads)
	}
	delete(cfg, "head_dim")
	class, modelType := "GraniteForCausalLM", "granite"
	for key, field := range map[string]string{"embedding_scale": "embedding_multiplier", "residual_scale": "residual_multiplier", "logit_scale": "logits_scaling"} {
		if v, ok := fl(key); ok {
			cfg[field] = v
		}
	}
	cfg["attention_multiplier"] = 1 / math.Sqrt(float64(lf.hd))
	if v, ok := fl("attention.scale"); ok {
		cfg["attention_multiplier"] = v
	}
	cfg["position_embedding_type"] = "rope"
	if v, ok := f.Get(arch + ".rope.scaling.finetuned"); ok {
		if b, isBool := v.Bool(); isBool && !b {
			cfg["position_embedding_type"] = "nope"
		}
	}
	shared := u("expert_shared_feed_forward_length")
	if arch == "granitemoe" {
		class, modelType = "GraniteMoeForCausalLM", "granitemoe"
		if shared > 0 {
			class, modelType = "GraniteMoeSharedForCausalLM", "granitemoeshared"
			cfg["shared_intermediate_size"] = shared
		}
		cfg["num_local_experts"], cfg["num_experts_per_tok"] = lf.experts, u("expert_used_count")
		if eh := u("expert_feed_forward_length"); eh > 0 {
			cfg["intermediate_size"] = eh
		}
	}
	cfg["architectures"], cfg["model_type"] = []string{class}, modelType

	var ts []safetensors.Tensor
	halves := map[string][2]*gguf.TensorInfo{} // fused HF name → gate, up
	var order []string
	for i := range f.Tensors {
		t := &f.Tensors[i]
		rest, _ := strings.CutPrefix(t.Name, "blk.")
		layer, suffix, _ := strings.Cut(rest, ".")
		p := "model.layers." + layer + "."
		half, fused := -1, ""
		switch suffix {
		case "ffn_gate_exps.weight", "ffn_up_exps.weight":
			half, fused = 0, p+"block_sparse_moe.input_linear.weight"
		case "ffn_gate_shexp.weight", "ffn_up_shexp.weight":
			half, fused = 0, p+"shared_mlp.input_linear.weight"
		case "ffn_down_exps.weight", "ffn_down_shexp.weight", "ffn_gate_inp.weight":
			name := map[string]string{"ffn_down_exps.weight": "block_sparse_moe.output_linear.weight",
				"ffn_down_shexp.weight": "shared_mlp.output_linear.weight", "ffn_gate_inp.weight": "block_sparse_moe.router.layer.weight"}[suffix]
			dt := stDType[t.Type]
			if dt == "" {
				return fmt.Errorf("hfwrite: tensor %s has type %s (want a float type)", t.Name, t.Type)
			}
			ts = append(ts, safetensors.Tensor{Name: p + name, DType: dt, Shape: hfShape(t.Dims), Data: append([]byte(nil), t.Data...)})
			continue
		default:
			out, err := convertTensor(arch, t, lf.heads, lf.kvHeads, lf.hd)
			if err != nil {
				return err
			}
			ts = append(ts, out...)
			continue
		}
		if strings.HasPrefix(suffix, "ffn_up") {
			half = 1
		}
		h, seen := halves[fused]
		if !seen {
			order = append(order, fused)
		}
		h[half] = t
		halves[fused] = h
	}
	for _, name := range order {
		out, err := fuseGateUp(name, halves[name])
		if err != nil {
			return err
		}
		ts = append(ts, out)
	}
	return writeCheckpoint(dir, cfg, ts)
}

// fuseGateUp is the fused (…, 2·n, cols) tensor name of a gate and an up
// tensor of (…, n, cols): per leading index (expert), the gate's rows then
// the up's.
func fuseGateUp(name string, h [2]*gguf.TensorInfo) (safetensors.Tensor, error) {
	g, u := h[0], h[1]
	if g == nil || u == nil {
		return safetensors.Tensor{}, fmt.Errorf("hfwrite: %s: the file lacks its gate or up half", name)
	}
	gs, us := hfShape(g.Dims), hfShape(u.Dims)
	dt := stDType[g.Type]
	if dt == "" || g.Type != u.Type || fmt.Sprint(gs) != fmt.Sprint(us) || len(gs) < 2 {
		return safetensors.Tensor{}, fmt.Errorf("hfwrite: %s: gate %s %v and up %s %v do not fuse", name, g.Type, gs, u.Type, us)
	}
	slabs := 1
	if len(gs) == 3 {
		slabs = gs[0]
	}
	slab := len(g.Data) / slabs
	data := make([]byte, 0, 2*len(g.Data))
	for e := range slabs {
		data = append(data, g.Data[e*slab:(e+1)*slab]...)
		data = append(data, u.Data[e*slab:(e+1)*slab]...)
	}
	shape := append([]int(nil), gs...)
	shape[len(shape)-2] *= 2
	return safetensors.Tensor{Name: name, DType: dt, Shape: shape, Data: data}, nil
}
