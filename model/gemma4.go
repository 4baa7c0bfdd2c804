package model

import (
	"math"

	"nanoserve/tensor"
)

// Gemma 4's per-layer inputs (the E2B/E4B models; llama.cpp
// src/models/gemma4.cpp). Besides its embedding e (dim, already × √dim),
// each token t brings a small input per layer l (PerLayerDim = P wide):
//
//	tok_l = √P · PerLayerEmb[t][l·P : (l+1)·P]
//	prj_l = RMSNorm_{perLayerNorm}( (PerLayerProj · e / √dim)[l·P : (l+1)·P] )
//	in_l  = (tok_l + prj_l) / √2
//
// and at the end of layer l, after the FFN's residual add, the stream x
// takes
//
//	x += RMSNorm_{plPostNorm}( plProj · (gelu(plGate · x) ⊙ in_l) )
//
// after which x is multiplied by the layer's output scale (a learned
// scalar, layer_output_scale).

// perLayerInputs fills ws.pl (n, layers·P) with every token's in_l from the
// embeddings in ws.x.
func (m *Model) perLayerInputs(b *Batch, n int) {
	c, ws, w := &m.Config, &m.ws, &m.w
	P, L, dim := c.PerLayerDim, c.Layers, c.Dim
	pl := ws.pl[:n*L*P]
	m.pool.MatMul(pl, w.perLayerProj, ws.x[:n*dim], n)
	projScale := float32(1 / math.Sqrt(float64(dim)))
	tokScale := float32(math.Sqrt(float64(P)))
	inScale := float32(1 / math.Sqrt2)
	row := ws.plRow
	for i, tok := range b.Tokens {
		r := pl[i*L*P : (i+1)*L*P]
		for j := range r {
			r[j] *= projScale
		}
		tensor.DequantizeRow(row, w.perLayerEmb.Type, w.perLayerEmb.Row(tok))
		for l := range L {
			s := r[l*P : (l+1)*P]
			rmsNorm(s, s, w.perLayerNorm, c.NormEps)
			for j := range s {
				s[j] = (s[j] + tokScale*row[l*P+j]) * inScale
			}
		}
	}
}

// perLayerBlock adds layer l's per-layer input term to ws.x (n tokens).
func (m *Model) perLayerBlock(l int, lw *layerWeights, n int) {
	c, ws := &m.Config, &m.ws
	P, L, dim := c.PerLayerDim, c.Layers, c.Dim
	h := ws.plh[:n*P]
	m.pool.MatMul(h, lw.plGate, ws.x[:n*dim], n)
	for i := range n {
		in := ws.pl[i*L*P+l*P : i*L*P+(l+1)*P]
		for j, v := range h[i*P : (i+1)*P] {
			h[i*P+j] = geluTanh(v) * in[j]
		}
	}
	m.pool.MatMul(ws.xb[:n*dim], lw.plProj, h, n)
	m.norm(ws.xb[:n*dim], ws.xb[:n*dim], lw.plPostNorm, nil)
	addTo(ws.x[:n*dim], ws.xb[:n*dim])
}
