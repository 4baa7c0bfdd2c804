package hfwrite

import (
	"fmt"

	"nanoserve/gguf"
	"nanoserve/safetensors"
	"nanoserve/tensor"
)

// gptOssConfig fills GptOssConfig's fields from the GGUF's.
func gptOssConfig(cfg map[string]any, u func(string) int, fl func(string) (float64, bool), experts int) {
	layers := u("block_count")
	cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["experts_per_token"] = experts, u("expert_used_count"), u("expert_used_count")
	cfg["intermediate_size"] = u("expert_feed_forward_length")
	cfg["sliding_window"], cfg["swiglu_limit"] = u("attention.sliding_window"), 7.0
	types := make([]string, layers)
	for l := range types {
		types[l] = "full_attention"
		if l%2 == 0 {
			types[l] = "sliding_attention"
		}
	}
	cfg["layer_types"] = types
	factor, _ := fl("rope.scaling.factor")
	fast, _ := fl("rope.scaling.yarn_beta_fast")
	slow, _ := fl("rope.scaling.yarn_beta_slow")
	cfg["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": factor, "beta_fast": fast, "beta_slow": slow,
		"original_max_position_embeddings": u("rope.scaling.original_context_length"), "truncate": false}
}

// gptOssExperts writes transformers' fused expert tensors from the GGUF's
// 3-D ones: per layer, gate_up_proj (E, dim, 2·ffn) used as x·W with the
// gate in the even and up in the odd columns, gate_up_proj_bias (E,
// 2·ffn), down_proj (E, ffn, dim) and down_proj_bias (E, dim), in the
// GGUF's element type.
func gptOssExperts(f *gguf.File, layers int) ([]safetensors.Tensor, error) {
	var out []safetensors.Tensor
	for l := range layers {
		get := func(kind string) (*gguf.TensorInfo, error) {
			name := fmt.Sprintf("blk.%d.%s", l, kind)
			t, ok := f.Tensor(name)
			if !ok {
				return nil, fmt.Errorf("hfwrite: missing tensor %s", name)
			}
			return t, nil
		}
		gate, err := get("ffn_gate_exps.weight")
		if err != nil {
			return nil, err
		}
		up, err := get("ffn_up_exps.weight")
		if err != nil {
			return nil, err
		}
		down, err := get("ffn_down_exps.weight")
		if err != nil {
			return nil, err
		}
		dt := map[tensor.DType]string{tensor.F32: "F32", tensor.F16: "F16", tensor.BF16: "BF16"}[gate.Type]
		if dt == "" || up.Type != gate.Type || down.Type != gate.Type || len(gate.Dims) != 3 || len(down.Dims) != 3 {
			return nil, fmt.Errorf("hfwrite: layer %d experts: want 3-D float tensors of one type", l)
		}
		dim, ffn, E := int(gate.Dims[0]), int(gate.Dims[1]), int(gate.Dims[2])
		es := len(gate.Data) / (dim * ffn * E)
		// GGUF gate/up: expert e, row j (ffn), col i (dim). HF: [e][i][2j+p].
		gu := make([]byte, E*dim*2*ffn*es)
		for e := range E {
			for j := range ffn {
				for i := range dim {
					src := ((e*ffn+j)*dim + i) * es
					dst := ((e*dim+i)*2*ffn + 2*j) * es
					copy(gu[dst:dst+es], gate.Data[src:src+es])
					copy(gu[dst+es:dst+2*es], up.Data[src:src+es])
				}
			}
		}
		// GGUF down: expert e, row o (dim), col j (ffn). HF: [e][j][o].
		dn := make([]byte, len(down.Data))
		for e := range E {
			for o := range dim {
				for j := range ffn {
					src := ((e*dim+o)*ffn + j) * es
					dst := ((e*ffn+j)*dim + o) * es
					copy(dn[dst:dst+es], down.Data[src:src+es])
				}
			}
		}
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", l)
		out = append(out, safetensors.Tensor{Name: p + "gate_up_proj", DType: dt, Shape: []int{E, dim, 2 * ffn}, Data: gu},
			safetensors.Tensor{Name: p + "down_proj", DType: dt, Shape: []int{E, ffn, dim}, Data: dn})
		gb, err := get("ffn_gate_exps.bias")
		if err != nil {
			return nil, err
		}
		ub, err := get("ffn_up_exps.bias")
		if err != nil {
			return nil, err
		}
		db, err := get("ffn_down_exps.bias")
		if err != nil {
			return nil, err
		}
		if gb.Type != tensor.F32 || ub.Type != tensor.F32 || db.Type != tensor.F32 {
			return nil, fmt.Errorf("hfwrite: layer %d expert biases: want F32", l)
		}
		g, u := tensor.BytesF32(gb.Data), tensor.BytesF32(ub.Data)
		b := make([]float32, 2*len(g))
		for i := range g {
			b[2*i], b[2*i+1] = g[i], u[i]
		}
		out = append(out, safetensors.Tensor{Name: p + "gate_up_proj_bias", DType: "F32", Shape: []int{E, 2 * ffn}, Data: tensor.F32Bytes(b)},
			safetensors.Tensor{Name: p + "down_proj_bias", DType: "F32", Shape: []int{E, dim}, Data: append([]byte(nil), db.Data...)})
	}
	return out, nil
}
