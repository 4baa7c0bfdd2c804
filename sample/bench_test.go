package sample

import (
	"math/rand/v2"
	"testing"
)

// benchLogits returns a (128256) vector of N(0, sd²) logits: Llama-3's
// vocabulary size. This is a pessimistic input: no token is far enough below
// the maximum for its weight to be 0, so every token needs an exp.
func benchLogits(sd float64) []float32 {
	g := rand.New(rand.NewPCG(7, 8))
	l := make([]float32, 128256)
	for i := range l {
		l[i] = float32(g.NormFloat64() * sd)
	}
	return l
}

// peakedLogits returns (128256) logits shaped like a trained model's: a bulk
// of N(0, 2²) with a heavy right tail (one token in 500 lifted by U(4, 16)),
// so the best token sits ~20 above the bulk and the nucleus is small.
func peakedLogits() []float32 {
	g := rand.New(rand.NewPCG(7, 9))
	l := make([]float32, 128256)
	for i := range l {
		v := 2 * g.NormFloat64()
		if g.IntN(500) == 0 {
			v += 4 + 12*g.Float64()
		}
		l[i] = float32(v)
	}
	return l
}

func benchSample(b *testing.B, l []float32, edit func(*Policy)) {
	history := make([]int, 264) // 200 prompt + 64 output tokens
	g := rand.New(rand.NewPCG(9, 10))
	for i := range history {
		history[i] = g.IntN(len(l))
	}
	p := Defaults()
	p.Seed = ptr(uint64(1))
	edit(&p)
	s, err := New(p, len(l))
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuSeconds()
	for b.Loop() {
		if _, err := s.Sample(l, history, 200); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu0)*1e9/float64(b.N), "cpu-ns/op")
}

func typical(p *Policy) {
	p.Temperature, p.TopK, p.TopP, p.RepetitionPenalty, p.RepeatLastN = 0.8, 40, 0.95, 1.1, 64
}

// BenchmarkSample128k times one Sample call per policy over a 128k
// vocabulary. On a shared machine read cpu-ns/op (see cpuSeconds).
func BenchmarkSample128k(b *testing.B) {
	flat, sd3, peaked := benchLogits(1), benchLogits(3), peakedLogits()
	b.Run("greedy", func(b *testing.B) { benchSample(b, flat, func(p *Policy) { p.Temperature = 0 }) })
	b.Run("greedy+rep", func(b *testing.B) {
		benchSample(b, flat, func(p *Policy) { p.Temperature = 0; p.RepetitionPenalty = 1.1; p.RepeatLastN = 64 })
	})
	b.Run("typical", func(b *testing.B) { benchSample(b, flat, typical) })
	b.Run("typical+logprobs5", func(b *testing.B) {
		benchSample(b, flat, func(p *Policy) { typical(p); p.Logprobs = ptr(5) })
	})
	b.Run("T=1", func(b *testing.B) { benchSample(b, flat, func(p *Policy) {}) })
	b.Run("T=1/peaked", func(b *testing.B) { benchSample(b, peaked, func(p *Policy) {}) })
	// At low temperature most of a peaked vocabulary weighs 0: no exp needed.
	b.Run("T=0.5/peaked", func(b *testing.B) { benchSample(b, peaked, func(p *Policy) { p.Temperature = 0.5 }) })
	b.Run("min_p=0.05", func(b *testing.B) { benchSample(b, flat, func(p *Policy) { p.MinP = 0.05 }) })
	// top-p without top-k: the cost depends on how many tokens the nucleus
	// holds. sd 1 at T=0.8 is nearly flat (the nucleus is most of the
	// vocabulary); sd 3 and peaked are closer to a trained model's logits.
	b.Run("top_p=0.95/flat", func(b *testing.B) { benchSample(b, flat, func(p *Policy) { p.Temperature = 0.8; p.TopP = 0.95 }) })
	b.Run("top_p=0.95/sd3", func(b *testing.B) { benchSample(b, sd3, func(p *Policy) { p.Temperature = 0.8; p.TopP = 0.95 }) })
	b.Run("top_p=0.95/peaked", func(b *testing.B) {
		benchSample(b, peaked, func(p *Policy) { p.Temperature = 0.8; p.TopP = 0.95 })
	})
	b.Run("T=1+logprobs5", func(b *testing.B) { benchSample(b, flat, func(p *Policy) { p.Logprobs = ptr(5) }) })
}
