package model

import "math"

// RoPE: the rotation angles of each position (ropeFreqs, ropeTable) and
// the two pair layouts (ropeInterleaved for llama.cpp/llama2.c Q/K, ropeNeox
// for Hugging Face halves), applied to every head of q and k.

// ropeInterleaved rotates the pairs (x[2i], x[2i+1]) for i < len(cos) by
// the angles whose cosines and sines are cos[i], sin[i] (llama2.c and the
// llama-architecture GGUF layout).
func ropeInterleaved(x, cos, sin []float32) {
	for i := range cos {
		c, s := cos[i], sin[i]
		a, b := x[2*i], x[2*i+1]
		x[2*i] = a*c - b*s
		x[2*i+1] = a*s + b*c
	}
}

// ropeNeox rotates the pairs (x[i], x[i+len(cos)]) (the "rotate halves"
// layout of Hugging Face Llama/Qwen2 and NEOX-type GGUF architectures).
func ropeNeox(x, cos, sin []float32) {
	h := len(cos)
	for i := range cos {
		c, s := cos[i], sin[i]
		a, b := x[i], x[i+h]
		x[i] = a*c - b*s
		x[i+h] = a*s + b*c
	}
}

// ropeFreqs returns the angular frequency of each rotated dimension pair i:
// theta^(-2i/RopeDim), adjusted by the config's scaling (or divided by the
// file's explicit per-pair factors).
func ropeFreqs(c *Config, factors []float32) []float64 {
	return ropeFreqsBase(c.RopeDim, c.RopeTheta, factors, c.RopeScaling)
}

// ropeFreqsBase is ropeFreqs for dim rotated dimensions with base theta
// and scaling s.
func ropeFreqsBase(dim int, theta float64, factors []float32, s RopeScaling) []float64 {
	n := dim / 2
	f := make([]float64, n)
	for i := range f {
		f[i] = math.Pow(theta, -float64(2*i)/float64(dim))
	}
	if factors != nil {
		for i := range f {
			f[i] /= float64(factors[i])
		}
		return f
	}
	switch s.Type {
	case "linear":
		if s.Factor > 0 {
			for i := range f {
				f[i] /= s.Factor
			}
		}
	case "yarn":
		// YaRN (llama.cpp's rope_yarn, ext_factor 1): pair i's angle
		// blends the interpolated angle (÷ Factor) with the original
		// one by ramp_i, which is 1 for the fast pairs (index below the
		// dimension that turns BetaFast times in OrigContext positions)
		// and 0 for the slow ones (below BetaSlow turns), linear
		// between. The blend is linear in the position, so it is a
		// per-pair frequency; the magnitude factor is ropeMScale's.
		if s.Factor <= 0 || s.OrigContext <= 0 {
			break
		}
		fast, slow := s.BetaFast, s.BetaSlow
		if fast == 0 {
			fast = 32
		}
		if slow == 0 {
			slow = 1
		}
		corr := func(turns float64) float64 {
			return float64(dim) * math.Log(float64(s.OrigContext)/(turns*2*math.Pi)) / (2 * math.Log(theta))
		}
		low := math.Max(0, math.Floor(corr(fast)))
		high := math.Min(float64(dim-1), math.Ceil(corr(slow)))
		for i, fr := range f {
			y := (float64(i) - low) / math.Max(0.001, high-low)
			ramp := 1 - math.Min(1, math.Max(0, y))
			f[i] = fr * ((1-ramp)/s.Factor + ramp)
		}
	case "llama3":
		if s.Factor <= 0 || s.OrigContext <= 0 || s.LowFreqFactor <= 0 || s.HighFreqFactor <= s.LowFreqFactor {
			break
		}
		lowWave := float64(s.OrigContext) / s.LowFreqFactor
		highWave := float64(s.OrigContext) / s.HighFreqFactor
		for i, fr := range f {
			wave := 2 * math.Pi / fr
			switch {
			case wave < highWave:
			case wave > lowWave:
				f[i] = fr / s.Factor
			default:
				smooth := (float64(s.OrigContext)/wave - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
				f[i] = (1-smooth)*fr/s.Factor + smooth*fr
			}
		}
	}
	return f
}

// ropeTable writes cos and sin (RopeDim/2 each) of pos·freq.
func ropeTable(cos, sin []float32, freqs []float64, pos int) {
	ropeTableScaled(cos, sin, freqs, pos, 1)
}

// ropeTableScaled is ropeTable with cos and sin multiplied by mscale.
func ropeTableScaled(cos, sin []float32, freqs []float64, pos int, mscale float64) {
	for i, f := range freqs {
		s, c := math.Sincos(float64(pos) * f)
		cos[i], sin[i] = float32(c*mscale), float32(s*mscale)
	}
}

// ropeMScale is the factor RoPE multiplies cos and sin by.
// RopeAttnFactor (1 when unset), and for YaRN also 1 + 0.1·ln(Factor)
// (the magnitude correction of the interpolated angles, as llama.cpp's
// rope_yarn applies it).
func (c *Config) ropeMScale() float64 {
	ms := 1.0
	if c.RopeAttnFactor > 0 {
		ms = c.RopeAttnFactor
	}
	if s := c.RopeScaling; s.Type == "yarn" && s.Factor > 1 && s.OrigContext > 0 {
		ms *= 1 + 0.1*math.Log(s.Factor)
	}
	return ms
}

// ropeAll applies layer lw's QK-norm (if any) and rotates the q (n, q_dim)
// and k (n, kv_dim) rows of n tokens by their positions' angles (ws.rc,
// ws.rs).
func (m *Model) ropeAll(l int, lw *layerWeights, q, k []float32, n int) {
	if n*(m.LayerQDim(l)+m.LayerKVDim(l)) < parRowsMin || m.pool.Threads() <= 1 {
		m.ropeTokens(l, lw, q, k, 0, n)
		return
	}
	j := &m.job
	j.x, j.o, j.lw, j.l = q, k, lw, l
	m.parallel(jobRope, n, max(1, n/(4*m.pool.Threads())))
}

// ropeTokens normalises (QK-norm: RMSNorm of each head with the layer's
// gains; Gemma 4's V-norm: of each V head without gains) and rotates the q
// and k rows of tokens [lo, hi) of layer l.
func (m *Model) ropeTokens(l int, lw *layerWeights, q, k []float32, lo, hi int) {
	qd, kvd, hd, half := m.LayerQDim(l), m.LayerKVDim(l), m.LayerHeadDim(l), m.LayerRopeDim(l)/2
	ws := &m.ws
	owns := m.OwnsKV(l) // else k is unused (a shared-KV layer)
	for i := lo; i < hi; i++ {
		qi, ki := q[i*qd:(i+1)*qd], k[i*kvd:(i+1)*kvd]
		if lw.qNorm != nil {
			for h := 0; h < qd; h += hd {
				rmsNorm(qi[h:h+hd], qi[h:h+hd], lw.qNorm, m.NormEps)
			}
		}
		if lw.kNorm != nil {
			for h := 0; h < kvd; h += hd {
				rmsNorm(ki[h:h+hd], ki[h:h+hd], lw.kNorm, m.NormEps)
			}
		}
		if m.VNorm && owns {
			vi := m.ws.v[i*kvd : (i+1)*kvd]
			for h := 0; h < kvd; h += hd {
				rmsNormPlain(vi[h:h+hd], m.NormEps)
			}
		}
		if half == 0 {
			continue
		}
		cs, sn := ws.rc[i*half:(i+1)*half], ws.rs[i*half:(i+1)*half]
		m.rope(qi, m.Heads, hd, cs, sn)
		if owns {
			m.rope(ki, m.LayerKVHeads(l), hd, cs, sn)
		}
	}
}

// rope rotates each of the heads (hd wide) of one token's q or k.
func (m *Model) rope(x []float32, heads, hd int, cos, sin []float32) {
	for h := range heads {
		if m.RopeNeox {
			ropeNeox(x[h*hd:(h+1)*hd], cos, sin)
		} else {
			ropeInterleaved(x[h*hd:(h+1)*hd], cos, sin)
		}
	}
}
