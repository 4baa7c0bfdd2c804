package train

import (
	"math"
	"testing"
)

// AdamW's first steps against the closed form. With bias correction, step 1
// gives m̂ = g and v̂ = g², so each parameter moves by lr·g/(|g|+ε), which is
// lr·sign(g) when |g| ≫ ε; a constant gradient keeps m̂ = g and v̂ = g² at
// every step. Weight decay adds lr·λ·p on the decayed tensors only. Without
// bias correction (c1 = 1, or c1 = c2 = 1) the first step is 0.1·lr or
// 0.45·lr instead, which no training test notices.
func TestAdamWStepsClosedForm(t *testing.T) {
	const lr, wd = 0.01, 0.1
	ts := []Tensor{{Name: "w", Rows: 2, Cols: 2, Off: 0, Decay: true}, {Name: "b", Rows: 1, Cols: 3, Off: 4}}
	p0 := []float32{0.5, -0.25, 1, 2, 0.5, -1, 3}
	g := []float32{3, -0.5, 1e-2, -70, 2, -1e-3, 4}
	for _, decay := range []float64{0, wd} {
		p := append([]float32(nil), p0...)
		o := NewAdamW(len(p), decay)
		for step := 1; step <= 3; step++ {
			prev := append([]float32(nil), p...)
			o.Update(p, g, lr, ts)
			for i := range p {
				want := float64(prev[i]) - lr*math.Copysign(1, float64(g[i]))
				if i < 4 {
					want -= lr * decay * float64(prev[i])
				}
				if d := math.Abs(float64(p[i]) - want); d > 1e-6 {
					t.Errorf("wd %g step %d param %d: %.7f, want %.7f (prev %.7f, g %g)", decay, step, i, p[i], want, prev[i], g[i])
				}
			}
		}
	}
}
