package train

import "math"

// AdamW is Adam with decoupled weight decay (Loshchilov & Hutter):
//
//	m = β1·m + (1−β1)·g,  v = β2·v + (1−β2)·g²
//	p −= lr·( m/(1−β1ᵗ) / (√(v/(1−β2ᵗ)) + ε) + λ·p )   (λ only on matrices)
type AdamW struct {
	Beta1, Beta2, Eps float64
	WeightDecay       float64
	M, V              []float32 // first and second moments, parameter layout
	Step              int       // updates done
}

// NewAdamW returns an optimizer for n parameters.
func NewAdamW(n int, wd float64) *AdamW {
	return &AdamW{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: wd, M: make([]float32, n), V: make([]float32, n)}
}

// Update applies one step with learning rate lr to p given gradient g;
// decay marks the ranges (tensors) that take weight decay.
func (o *AdamW) Update(p, g []float32, lr float64, ts []Tensor) {
	o.Step++
	b1, b2 := float32(o.Beta1), float32(o.Beta2)
	c1 := float32(1 / (1 - math.Pow(o.Beta1, float64(o.Step))))
	c2 := float32(1 / (1 - math.Pow(o.Beta2, float64(o.Step))))
	eps, lr32 := float32(o.Eps), float32(lr)
	for _, t := range ts {
		wd := float32(0)
		if t.Decay {
			wd = float32(o.WeightDecay)
		}
		for i := t.Off; i < t.Off+t.Size(); i++ {
			gi := g[i]
			m := b1*o.M[i] + (1-b1)*gi
			v := b2*o.V[i] + (1-b2)*gi*gi
			o.M[i], o.V[i] = m, v
			p[i] -= lr32 * (m*c1/(float32(math.Sqrt(float64(v*c2)))+eps) + wd*p[i])
		}
	}
}

// ClipGrad scales g so its global L2 norm is at most maxNorm (≤ 0: no
// clipping) and returns the norm before clipping.
func ClipGrad(g []float32, maxNorm float64) float64 {
	var ss float64
	for _, v := range g {
		ss += float64(v) * float64(v)
	}
	norm := math.Sqrt(ss)
	if maxNorm > 0 && norm > maxNorm {
		s := float32(maxNorm / norm)
		for i := range g {
			g[i] *= s
		}
	}
	return norm
}

// Schedule is linear warmup to LR over Warmup steps, then cosine decay to
// MinLR at Steps.
type Schedule struct {
	LR, MinLR     float64
	Warmup, Steps int
}

// At returns the learning rate for step (0-based).
func (s Schedule) At(step int) float64 {
	if step < s.Warmup {
		return s.LR * float64(step+1) / float64(s.Warmup)
	}
	if s.Steps <= s.Warmup {
		return s.LR
	}
	frac := math.Min(1, float64(step-s.Warmup)/float64(s.Steps-s.Warmup))
	return s.MinLR + 0.5*(s.LR-s.MinLR)*(1+math.Cos(math.Pi*frac))
}
