package model

import (
	"fmt"
	"math"

	"nanoserve/kvcache"
	"nanoserve/llamacpp"
	"nanoserve/tensor"
)

// Mamba-2 (granitehybrid; llama.cpp's build_mamba2_layer and
// ggml_ssm_scan): per token, with H heads of P = d_inner/H channels and
// G groups of B and C (head h reads group h / (H/G)),
//
//	[z ‖ xBC ‖ dt] = W_in·h                          d_inner, d_inner + 2·G·N, H
//	[x ‖ B ‖ C]    = SiLU(conv_d(xBC) + b_conv)      causal depthwise convolution, the state keeping d_conv−1 inputs
//	Δ_h = softplus(dt_h + dt_bias_h),  a_h = e^{Δ_h·A_h}            (A = −exp(A_log) < 0: a decay in (0, 1))
//	S_h[i][s] ← a_h·S_h[i][s] + Δ_h·x_h[i]·B_g[s]                    (P, N) per head
//	y_h[i]    = Σ_s S_h[i][s]·C_g[s] + D_h·x_h[i]
//	out = W_out·RMSNorm_G(y ⊙ SiLU(z))                              RMSNorm over each group's d_inner/G channels
//
// so a head's state is an outer-product memory (P, N) that decays by one
// scalar per token: Mamba-1's selective scan with the decay tied across the
// head. A sequence's state holds its convolution window ((d_conv−1,
// channels), oldest first) then the heads' S, (H, P, N).

// mamba2Weights reads layer i's Mamba-2 mixer (granite-hybrid.cpp's
// load_arch_tensors): ssm_in, ssm_conv1d (read by the caller) and its
// optional bias, ssm_dt.bias, ssm_a, ssm_d, ssm_norm (d_inner/G, G) and
// ssm_out.
func mamba2Weights(c *Config, r *recWeights, i int, g weightReader) {
	dim, di, nh := c.Dim, c.MambaInner, c.MambaHeads
	wt := func(name string) string { return llamacpp.Blk(i, name, "weight") }
	r.ssmIn = g.mat(wt("ssm_in"), 2*di+2*c.MambaGroups*c.MambaState+nh, dim, true)
	r.convB = g.vec(llamacpp.Blk(i, "ssm_conv1d", "bias"), c.ConvChannels(), false)
	r.dtBias = g.vec(llamacpp.Blk(i, "ssm_dt", "bias"), nh, true)
	r.a = g.vecN(fmt.Sprintf("blk.%d.ssm_a", i), nh)
	r.d = g.vecN(fmt.Sprintf("blk.%d.ssm_d", i), nh)
	r.ssmNorm = g.vecN(wt("ssm_norm"), di)
	r.ssmOut = g.mat(wt("ssm_out"), dim, di, true)
}

// checkMamba2 verifies a Mamba-2 layer's weights (p: "blk.N.").
func (c *Config) checkMamba2(p string, r *recWeights) error {
	dim, di, nh := c.Dim, c.MambaInner, c.MambaHeads
	for _, err := range []error{
		checkMat(p+"ssm_in", r.ssmIn, 2*di+2*c.MambaGroups*c.MambaState+nh, dim),
		checkVec(p+"ssm_conv1d.bias", r.convB, c.ConvChannels(), false),
		checkVec(p+"ssm_dt.bias", r.dtBias, nh, true), checkVec(p+"ssm_a", r.a, nh, true),
		checkVec(p+"ssm_d", r.d, nh, true), checkVec(p+"ssm_norm", r.ssmNorm, di, true),
		checkMat(p+"ssm_out", r.ssmOut, dim, di),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// mamba2Mixer runs a Mamba-2 layer over the n rows of ws.xb, each token
// on its sequence's state in batch order, and writes the output
// projection into ws.xb: the input projection for all tokens, then token
// by token the convolution of x ‖ B ‖ C and SiLU, then the scan with the
// heads split over the workers (mamba2Job: each head's state belongs to
// one worker and its tokens go in batch order, so the split changes no
// number), then per token the gate and the group norms.
func (m *Model) mamba2Mixer(b *Batch, c *kvcache.Cache, r *recWeights, n int) {
	cfg := &m.Config
	hw := &m.hw
	dim, di, nh, ng := cfg.Dim, cfg.MambaInner, cfg.MambaHeads, cfg.MambaGroups
	ch, dc := cfg.ConvChannels(), cfg.ConvKernel
	win := (dc - 1) * ch
	wd := di + ch + nh // one token's ssm_in row: z, xBC, dt
	h := m.ws.xb[:n*dim]
	hw.mix = grow(hw.mix, n*wd)
	hw.o = grow(hw.o, n*di)
	hw.row = grow(hw.row, ch)
	m.pool.MatMul(hw.mix[:n*wd], r.ssmIn, h, n)
	for i := range n {
		st := c.State(b.Seq[i])[r.stateOff : r.stateOff+win]
		xbc := hw.mix[i*wd+di : i*wd+di+ch]
		causalConv(hw.row, xbc, st, r.conv, ch, dc)
		copy(xbc, hw.row)
		if r.convB != nil {
			addTo(xbc, r.convB)
		}
		tensor.SiLUs(xbc)
	}
	j := &hw.mjob
	j.m, j.b, j.c, j.r, j.n = m, b, c, r, n
	if work := n * cfg.MambaInner * cfg.MambaState; m.pool.Threads() > 1 && nh > 1 && work >= parRowsMin {
		m.pool.For(nh, 1, j)
	} else {
		j.Range(0, nh, 0)
	}
	j.b, j.c, j.r = nil, nil, nil
	gw := di / ng
	for i := range n {
		z, y := hw.mix[i*wd:i*wd+di], hw.o[i*di:(i+1)*di]
		tensor.SwiGLU(z, y) // z = SiLU(z)·y
		for g := range ng {
			rmsNorm(y[g*gw:(g+1)*gw], z[g*gw:(g+1)*gw], r.ssmNorm[g*gw:(g+1)*gw], cfg.NormEps)
		}
	}
	m.pool.MatMul(h, r.ssmOut, hw.o[:n*di], n)
}

// mamba2Job runs the scan of heads [lo, hi) of a Mamba-2 layer over the
// batch, token by token in batch order, into hw.o: y = S·C + D·x.
type mamba2Job struct {
	m *Model
	b *Batch
	c *kvcache.Cache
	r *recWeights
	n int
}

func (j *mamba2Job) Range(lo, hi, _ int) {
	m, r := j.m, j.r
	cfg := &m.Config
	hw := &m.hw
	di, nh, ng, ns := cfg.MambaInner, cfg.MambaHeads, cfg.MambaGroups, cfg.MambaState
	ch := cfg.ConvChannels()
	win := (cfg.ConvKernel - 1) * ch
	wd := di + ch + nh
	P, hpg := di/nh, nh/ng
	for i := range j.n {
		S := j.c.State(j.b.Seq[i])[r.stateOff+win : r.stateOff+cfg.layerStateFloats()]
		row := hw.mix[i*wd : (i+1)*wd]
		x, B, C := row[di:2*di], row[2*di:2*di+ng*ns], row[2*di+ng*ns:di+ch]
		dt := row[di+ch:]
		y := hw.o[i*di : (i+1)*di]
		for hh := lo; hh < hi; hh++ {
			dtS := softplus(dt[hh] + r.dtBias[hh])
			dA := float32(math.Exp(float64(dtS * r.a[hh])))
			g := hh / hpg
			Bg, Cg := B[g*ns:(g+1)*ns], C[g*ns:(g+1)*ns]
			xh, yh := x[hh*P:(hh+1)*P], y[hh*P:(hh+1)*P]
			tensor.SSMScanHead(S[hh*P*ns:(hh+1)*P*ns], Bg, Cg, xh, yh, dA, dtS)
			for p, xv := range xh {
				yh[p] += xv * r.d[hh]
			}
		}
	}
}

// refMamba2 is the Mamba-2 mixer over a whole sequence from a zero state
// in float64, from the equations above.
func (m *Model) refMamba2(r *recWeights, h []float64, L int, rnd refRounding) []float64 {
	cfg := &m.Config
	di, nh, ng, ns := cfg.MambaInner, cfg.MambaHeads, cfg.MambaGroups, cfg.MambaState
	ch := cfg.ConvChannels()
	wd := di + ch + nh
	zxd := rnd.matMul(r.ssmIn, h, L, nil) // (L, wd)
	xbc := make([]float64, L*ch)
	for t := range L {
		copy(xbc[t*ch:(t+1)*ch], zxd[t*wd+di:t*wd+di+ch])
	}
	conv := refCausalConv(xbc, r.conv, L, ch, cfg.ConvKernel)
	for i := range conv {
		v := conv[i]
		if r.convB != nil {
			v += float64(r.convB[i%ch])
		}
		conv[i] = v / (1 + math.Exp(-v))
	}
	P, hpg := di/nh, nh/ng
	S := make([]float64, di*ns)
	y := make([]float64, L*di)
	for t := range L {
		x := conv[t*ch : t*ch+di]
		B := conv[t*ch+di : t*ch+di+ng*ns]
		C := conv[t*ch+di+ng*ns : (t+1)*ch]
		for hh := range nh {
			dv := zxd[t*wd+di+ch+hh] + float64(r.dtBias[hh])
			if dv <= 20 {
				dv = math.Log1p(math.Exp(dv))
			}
			dA := math.Exp(dv * float64(r.a[hh]))
			g := hh / hpg
			for p := range P {
				ii := hh*P + p
				var acc float64
				for k := range ns {
					S[ii*ns+k] = dA*S[ii*ns+k] + dv*x[ii]*B[g*ns+k]
					acc += S[ii*ns+k] * C[g*ns+k]
				}
				y[t*di+ii] = acc + float64(r.d[hh])*x[ii]
			}
		}
		gw := di / ng
		for j := range di {
			z := zxd[t*wd+j]
			y[t*di+j] *= z / (1 + math.Exp(-z))
		}
		for g := range ng {
			refRMSNorm(y[t*di+g*gw:t*di+(g+1)*gw], r.ssmNorm[g*gw:(g+1)*gw], cfg.NormEps)
		}
	}
	return rnd.matMul(r.ssmOut, y, L, nil)
}
