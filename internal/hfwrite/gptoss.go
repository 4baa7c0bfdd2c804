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
// GGUF's element type; MXFP4 experts as the original release's
// *_blocks / *_scales instead (mxfp4Blocks).
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
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", l)
		if gate.Type == tensor.MXFP4 && up.Type == tensor.MXFP4 && down.Type == tensor.MXFP4 {
			gu, err := mxfp4Blocks(p+"gate_up_proj", gate, up)
			if err != nil {
				return nil, err
			}
			dn, err := mxfp4Blocks(p+"down_proj", down, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, append(gu, dn...)...)
		} else {
			ts, err := floatExperts(p, gate, up, down)
			if err != nil {
				return nil, err
			}
			out = append(out, ts...)
		}
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
		E := int(gate.Dims[2])
		out = append(out, safetensors.Tensor{Name: p + "gate_up_proj_bias", DType: "F32", Shape: []int{E, len(b) / E}, Data: tensor.F32Bytes(b)},
			safetensors.Tensor{Name: p + "down_proj_bias", DType: "F32", Shape: []int{E, len(db.Data) / 4 / E}, Data: append([]byte(nil), db.Data...)})
	}
	return out, nil
}

// mxfp4Blocks writes the original release's *_blocks and *_scales of a
// GGUF MXFP4 expert tensor (rows interleaved with b's when b is given:
// gate_up_proj's even rows are a's, odd rows b's), undoing
// transform_nibble_layout: ggml byte m holds values m and m+16, the
// checkpoint's byte k values 2k and 2k+1.
func mxfp4Blocks(name string, a, b *gguf.TensorInfo) ([]safetensors.Tensor, error) {
	cols, rows, E := int(a.Dims[0]), int(a.Dims[1]), int(a.Dims[2])
	nb := cols / 32
	if cols%32 != 0 || len(a.Data) != E*rows*nb*17 || b != nil && len(b.Data) != len(a.Data) {
		return nil, fmt.Errorf("hfwrite: %s: unexpected MXFP4 shape %v", name, a.Dims)
	}
	srcs, outW := []*gguf.TensorInfo{a}, rows
	if b != nil {
		srcs, outW = []*gguf.TensorInfo{a, b}, 2*rows
	}
	blocks, scales := make([]byte, E*outW*nb*16), make([]byte, E*outW*nb)
	for e := range E {
		for j := range rows {
			for p, t := range srcs {
				c := j
				if b != nil {
					c = 2*j + p
				}
				for k := range nb {
					blk := t.Data[((e*rows+j)*nb+k)*17:][:17]
					scales[(e*outW+c)*nb+k] = blk[0]
					val := func(i int) byte {
						if i < 16 {
							return blk[1+i] & 0xF
						}
						return blk[1+i-16] >> 4
					}
					d := blocks[((e*outW+c)*nb+k)*16:][:16]
					for q := range 16 {
						d[q] = val(2*q) | val(2*q+1)<<4
					}
				}
			}
		}
	}
	return []safetensors.Tensor{{Name: name + "_blocks", DType: "U8", Shape: []int{E, outW, nb, 16}, Data: blocks},
		{Name: name + "_scales", DType: "U8", Shape: []int{E, outW, nb}, Data: scales}}, nil
}

// floatExperts writes the unquantized form of one layer's experts.
func floatExperts(p string, gate, up, down *gguf.TensorInfo) ([]safetensors.Tensor, error) {
	dt := stDType[gate.Type]
	if dt == "" || up.Type != gate.Type || down.Type != gate.Type || len(gate.Dims) != 3 || len(down.Dims) != 3 {
		return nil, fmt.Errorf("hfwrite: %s: want 3-D float tensors of one type", p)
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
	return []safetensors.Tensor{{Name: p + "gate_up_proj", DType: dt, Shape: []int{E, dim, 2 * ffn}, Data: gu},
		{Name: p + "down_proj", DType: dt, Shape: []int{E, ffn, dim}, Data: dn}}, nil
}
