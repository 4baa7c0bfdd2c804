package model

import (
	"fmt"
	"math"
	"slices"

	"nanoserve/tensor"
)

// Qwen3.5 Hugging Face checkpoints (Qwen3_5ForCausalLM, and the language
// model of Qwen3_5ForConditionalGeneration, whose tensors live under
// lmPrefix and whose settings under config.json's text_config). Besides the
// names (llamacpp's table) and the +1 of its RMSNorm gains
// (llamacpp.NormShift), llama.cpp's converter changes three things, undone
// here the same way (conversion/qwen.py Qwen3NextModel.modify_tensors and
// _LinearAttentionVReorderBase):
//
//   - A_log becomes ssm_a = −exp(A_log);
//   - conv1d's (channels, 1, d_conv) kernel is squeezed (the reader does);
//   - with more value than key heads, transformers groups value heads by
//     key head (value head j reads key head j / (n_v/n_k)), llama.cpp tiles
//     them (head h reads key head h mod n_k): every value-head-indexed row
//     block (the v rows of in_proj_qkv and of the convolution, in_proj_z,
//     in_proj_b, in_proj_a, dt_bias, A_log) and out_proj's value columns
//     are permuted so that GGUF head h = s·n_k + k holds HF head k·r + s.

// lmPrefix is where a vision-language checkpoint keeps its language
// model's tensors (model.language_model.layers.N… for model.layers.N…).
const lmPrefix = "model.language_model."

// fillQwen35 reads a Qwen3_5TextConfig's hybrid settings.
func (hc *hfConfig) fillQwen35(c *Config) error {
	c.Recurrent = make([]bool, c.Layers)
	switch {
	case len(hc.LayerTypes) == c.Layers:
		for l, t := range hc.LayerTypes {
			c.Recurrent[l] = t == "linear_attention"
		}
	case len(hc.LayerTypes) != 0:
		return fmt.Errorf("model: config.json: layer_types has %d entries for %d layers", len(hc.LayerTypes), c.Layers)
	default:
		iv := 4
		if hc.FullAttentionInterval != nil {
			iv = *hc.FullAttentionInterval
		}
		if iv <= 0 {
			return fmt.Errorf("model: config.json: invalid full_attention_interval %d", iv)
		}
		for l := range c.Recurrent {
			c.Recurrent[l] = (l+1)%iv != 0
		}
	}
	if hc.LinearKeyHeadDim != hc.LinearValueHeadDim {
		return fmt.Errorf("model: config.json: linear key head dim %d != value head dim %d is not supported", hc.LinearKeyHeadDim, hc.LinearValueHeadDim)
	}
	c.ConvKernel = hc.LinearConvKernelDim
	if c.Experts > 0 {
		if hc.SharedExpertIntermediateSize <= 0 {
			return fmt.Errorf("model: config.json: a Qwen3.5 mixture of experts needs shared_expert_intermediate_size")
		}
		c.SharedExpertHiddenDim = hc.SharedExpertIntermediateSize
	}
	c.SSMHeadDim, c.SSMKHeads, c.SSMVHeads = hc.LinearKeyHeadDim, hc.LinearNumKeyHeads, hc.LinearNumValueHeads
	c.AttnGate, c.QKNorm, c.RopeNeox = true, true, true
	prf := 0.25 // Qwen3_5TextConfig's default
	if hc.PartialRotaryFactor != nil {
		prf = *hc.PartialRotaryFactor
	}
	if rp := hc.RopeParameters; rp != nil {
		if rp.PartialRotaryFactor != nil {
			prf = *rp.PartialRotaryFactor
		}
		if rp.RopeTheta != nil && hc.RopeTheta == nil {
			c.RopeTheta = *rp.RopeTheta
		}
	}
	c.RopeDim = int(float64(c.HeadDim) * prf)
	return nil
}

// hfDeltaNet applies the converter's value transforms to a delta-net
// layer read from a Hugging Face checkpoint (see the file comment).
func (c *Config) hfDeltaNet(r *recWeights) error {
	a := make([]float32, len(r.a))
	for i, v := range r.a {
		a[i] = float32(-math.Exp(float64(v)))
	}
	r.a = a
	nk, nv, d := c.SSMKHeads, c.SSMVHeads, c.SSMHeadDim
	if nk == nv {
		return nil
	}
	// perm[h] is the HF value head GGUF head h comes from.
	rep := nv / nk
	perm := make([]int, nv)
	for h := range perm {
		perm[h] = (h%nk)*rep + h/nk
	}
	var err error
	qk := 2 * nk * d
	if r.wqkv, err = permuteRows(r.wqkv, qk, d, perm); err != nil {
		return err
	}
	if r.wz, err = permuteRows(r.wz, 0, d, perm); err != nil {
		return err
	}
	if r.wBeta, err = permuteRows(r.wBeta, 0, 1, perm); err != nil {
		return err
	}
	if r.wAlpha, err = permuteRows(r.wAlpha, 0, 1, perm); err != nil {
		return err
	}
	r.dtBias = permuteVec(r.dtBias, 0, 1, perm)
	r.a = permuteVec(r.a, 0, 1, perm)
	dc := c.ConvKernel
	r.conv = permuteVec(r.conv, qk*dc, d*dc, perm)
	r.wOut, err = permuteCols(r.wOut, d, perm)
	return err
}

// permuteRows returns m with its rows from off on permuted in blocks of
// blk rows: block h of the result is block perm[h] of m (a new buffer).
func permuteRows(m *tensor.Mat, off, blk int, perm []int) (*tensor.Mat, error) {
	if m == nil || off+len(perm)*blk != m.Rows {
		return nil, fmt.Errorf("model: cannot regroup the value heads of a (%d, %d) matrix", m.Rows, m.Cols)
	}
	rb := len(m.Data) / m.Rows
	out := slices.Clone(m.Data)
	for h, src := range perm {
		copy(out[(off+h*blk)*rb:(off+(h+1)*blk)*rb], m.Data[(off+src*blk)*rb:(off+(src+1)*blk)*rb])
	}
	return &tensor.Mat{Type: m.Type, Rows: m.Rows, Cols: m.Cols, Data: out}, nil
}

// permuteVec is permuteRows for a float32 vector (blocks of blk values).
func permuteVec(v []float32, off, blk int, perm []int) []float32 {
	out := slices.Clone(v)
	for h, src := range perm {
		copy(out[off+h*blk:off+(h+1)*blk], v[off+src*blk:off+(src+1)*blk])
	}
	return out
}

// permuteCols permutes the columns of a float-typed m in blocks of blk.
func permuteCols(m *tensor.Mat, blk int, perm []int) (*tensor.Mat, error) {
	es := map[tensor.DType]int{tensor.F32: 4, tensor.F16: 2, tensor.BF16: 2}[m.Type]
	if es == 0 || m.Cols != len(perm)*blk {
		return nil, fmt.Errorf("model: cannot regroup the value-head columns of a %s (%d, %d) matrix", m.Type, m.Rows, m.Cols)
	}
	out := slices.Clone(m.Data)
	rb := m.Cols * es
	for r := range m.Rows {
		row, src := out[r*rb:(r+1)*rb], m.Data[r*rb:(r+1)*rb]
		for h, s := range perm {
			copy(row[h*blk*es:(h+1)*blk*es], src[s*blk*es:(s+1)*blk*es])
		}
	}
	return &tensor.Mat{Type: m.Type, Rows: m.Rows, Cols: m.Cols, Data: out}, nil
}
