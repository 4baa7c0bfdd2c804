package train

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkStep measures one training step (forward, loss, backward) of a
// default-model-sized network; tokens/s = b.N·Batch·Ctx / elapsed.
func BenchmarkStep(b *testing.B) {
	c := Config{Dim: 128, Layers: 4, Heads: 4, KVHeads: 2, Hidden: 384, Vocab: 2048, Ctx: 256, RopeTheta: 10000, NormEps: 1e-5} // the built-in model's shape
	p := InitParams(c, 1)
	n, _ := NewNet(c, p, 2)
	defer n.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	bs := 4
	in, tg := randTokens(rng, bs*c.Ctx, c.Vocab), randTokens(rng, bs*c.Ctx, c.Vocab)
	b.ResetTimer()
	for range b.N {
		n.Forward(in, bs, c.Ctx)
		_, cnt := n.Loss(tg)
		n.Backward(tg, cnt)
	}
	b.ReportMetric(float64(b.N*bs*c.Ctx)/b.Elapsed().Seconds(), "tok/s")
}
