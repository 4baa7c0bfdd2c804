package train

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkStep measures one training step (forward, loss, backward) of a
// default-model-sized network; tokens/s = b.N·Batch·Ctx / elapsed.
func BenchmarkStep(b *testing.B) {
	// The built-in model's shapes: the first model (context 256) and the
	// FIM retrain (context 1024, vocabulary 1024; attention's t×t products
	// grow with the context, so a token costs about twice as much there).
	// The 6-layer shape is the grown model's.
	for _, sh := range []struct {
		name                   string
		ctx, vocab, bs, layers int
	}{{"ctx256", 256, 2048, 4, 4}, {"ctx1024", 1024, 1024, 4, 4}, {"ctx1024-6layers", 1024, 1024, 4, 6}} {
		b.Run(sh.name, func(b *testing.B) {
			c := Config{Dim: 128, Layers: sh.layers, Heads: 4, KVHeads: 2, Hidden: 384, Vocab: sh.vocab, Ctx: sh.ctx, RopeTheta: 10000, NormEps: 1e-5}
			p := InitParams(c, 1)
			n, _ := NewNet(c, p, 2)
			defer n.Close()
			rng := rand.New(rand.NewPCG(1, 1))
			bs := sh.bs
			in, tg := randTokens(rng, bs*c.Ctx, c.Vocab), randTokens(rng, bs*c.Ctx, c.Vocab)
			b.ResetTimer()
			for range b.N {
				n.Forward(in, bs, c.Ctx)
				_, cnt := n.Loss(tg, nil)
				n.Backward(tg, nil, cnt)
			}
			b.ReportMetric(float64(b.N*bs*c.Ctx)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
