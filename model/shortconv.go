package model

import "nanoserve/kvcache"

// LFM2's gated short convolution (see hybrid.go): per token
//
//	[b ‖ c ‖ x] = W_in·h          three dim-wide chunks of shortconv.in_proj
//	y = c ⊙ conv_L(b ⊙ x)          depthwise causal convolution over the last L values of b ⊙ x
//	out = W_out·y
//
// The state keeps the last L−1 values of b ⊙ x (oldest first).

// shortConvMixer runs a short-convolution layer over the n rows of ws.xb,
// each token on its sequence's state in batch order, and writes the output
// projection into ws.xb.
func (m *Model) shortConvMixer(b *Batch, c *kvcache.Cache, r *recWeights, n int) {
	cfg := &m.Config
	hw := &m.hw
	dim, dc := cfg.Dim, cfg.ConvKernel
	h := m.ws.xb[:n*dim]
	hw.mix = grow(hw.mix, n*3*dim)
	hw.o = grow(hw.o, n*dim)
	hw.row = grow(hw.row, dim)
	m.pool.MatMul(hw.mix, r.inProj, h, n)
	for i := range n {
		st := c.State(b.Seq[i])[r.stateOff : r.stateOff+cfg.layerStateFloats()]
		bcx := hw.mix[i*3*dim : (i+1)*3*dim]
		bx := hw.row
		for j := range dim {
			bx[j] = bcx[j] * bcx[2*dim+j]
		}
		out := hw.o[i*dim : (i+1)*dim]
		causalConv(out, bx, st, r.conv, dim, dc)
		for j := range out {
			out[j] *= bcx[dim+j]
		}
	}
	m.pool.MatMul(h, r.outProj, hw.o[:n*dim], n)
}
