package model

import (
	"math"

	"nanoserve/llamacpp"
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

// Gemma 4's mixture-of-experts layers (the 26B-A4B; gemma4.cpp). After the
// attention's residual add, with x the stream:
//
//	mlp = RMSNorm_{post_ffw_norm_1}( GeGLU_FFN( RMSNorm_{ffn_norm}(x) ) )        the dense FFN
//	r   = Wr · (RMSNorm(x)/√dim ⊙ s)                                             router logits (s: ffn_gate_inp.scale)
//	S   = top-k of softmax(r), weights renormalised over S
//	moe = RMSNorm_{post_ffw_norm_2}( Σ_{e∈S} w_e · d_e · Wdown_e·(gelu(Wgate_e·h) ⊙ Wup_e·h) ),  h = RMSNorm_{pre_ffw_norm_2}(x)
//	x  += RMSNorm_{post_ffw_norm}( mlp + moe )
//
// where d_e is the expert's output scale (ffn_down_exps.scale; 1 when
// absent). The experts' gate and up may come fused (ffn_gate_up_exps:
// rows [0, ffn) gate, [ffn, 2·ffn) up per expert).

// gemma4MoE is a Gemma 4 MoE layer's weights beside the dense FFN's and
// the experts'.
type gemma4MoE struct {
	routerScale                    []float32 // (dim) s
	preNorm2, postNorm1, postNorm2 []float32 // (dim)
	downScale                      []float32 // (experts) d; nil: 1
}

// gemma4MoEWeights reads layer i's router, experts and extra norms.
func (m *Model) gemma4MoEWeights(l *layerWeights, i int, g weightReader) {
	c := &m.Config
	dim, E, eh := c.Dim, c.Experts, c.ExpertHiddenDim
	wt := func(name string) string { return llamacpp.Blk(i, name, "weight") }
	l.router = g.mat(wt(llamacpp.FFNRouter), E, dim, true)
	l.g4 = &gemma4MoE{
		routerScale: g.vec(llamacpp.Blk(i, llamacpp.FFNRouter, "scale"), dim, true),
		preNorm2:    g.vec(wt(llamacpp.FFNPreNorm2), dim, true),
		postNorm1:   g.vec(wt(llamacpp.FFNPostNorm1), dim, true),
		postNorm2:   g.vec(wt(llamacpp.FFNPostNorm2), dim, true),
		downScale:   g.vec(llamacpp.Blk(i, llamacpp.FFNDownExps, "scale"), E, false),
	}
	l.expGate, l.expUp = expertsGateUp(g, llamacpp.Archs["gemma4"], i, E, eh, dim)
	l.expDown = g.experts(wt(llamacpp.FFNDownExps), E, dim, eh)
}

// gemma4FFN replaces ws.xb, which holds RMSNorm_{ffn_norm}(x) on entry,
// by mlp + moe of layer l (the caller applies post_ffw_norm and adds).
func (m *Model) gemma4FFN(l int, lw *layerWeights, n int) {
	c, ws, pool := &m.Config, &m.ws, m.pool
	dim, hid := c.Dim, c.LayerHidden(l)
	x, xb := ws.x[:n*dim], ws.xb[:n*dim]
	hb, hb2 := ws.hb[:n*hid], ws.hb2[:n*hid]
	pool.MatMul(hb, lw.wGate, xb, n)
	pool.MatMul(hb2, lw.wUp, xb, n)
	m.elementwise(jobGeGLU, hb, hb2, hid)
	mlp := ws.xm[:n*dim]
	pool.MatMul(mlp, lw.wDown, hb, n)
	m.norm(mlp, mlp, lw.g4.postNorm1, nil)

	r := ws.xr[:n*dim]
	inv := float32(1 / math.Sqrt(float64(dim)))
	for i := range n {
		ri := r[i*dim : (i+1)*dim]
		copy(ri, x[i*dim:(i+1)*dim])
		rmsNormPlain(ri, c.NormEps)
		for j := range ri {
			ri[j] = ri[j] * inv * lw.g4.routerScale[j]
		}
	}
	m.norm(xb, x, lw.g4.preNorm2, nil)
	m.moeFFNFrom(lw, n, r)
	m.norm(xb, xb, lw.g4.postNorm2, nil)
	addTo(xb, mlp)
}
