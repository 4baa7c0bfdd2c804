package sample

import (
	"math/rand/v2"
	"testing"
)

// benchLogits returns a (128256) vector of N(0, sd²) logits: Llama-3's vocabulary.
func benchLogits(sd float64) []float32 {
	g := rand.New(rand.NewPCG(7, 8))
	l := make([]float32, 128256)
	for i := range l {
		l[i] = float32(g.NormFloat64() * sd)
	}
	return l
}

func benchSample(b *testing.B, sd float64, edit func(*Policy)) {
	l := benchLogits(sd)
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
	for b.Loop() {
		if _, err := s.Sample(l, history, 200); err != nil {
			b.Fatal(err)
		}
	}
}

func typical(p *Policy) {
	p.Temperature, p.TopK, p.TopP, p.RepetitionPenalty, p.RepeatLastN = 0.8, 40, 0.95, 1.1, 64
}

func BenchmarkSample128k(b *testing.B) {
	b.Run("greedy", func(b *testing.B) { benchSample(b, 1, func(p *Policy) { p.Temperature = 0 }) })
	b.Run("greedy+rep", func(b *testing.B) {
		benchSample(b, 1, func(p *Policy) { p.Temperature = 0; p.RepetitionPenalty = 1.1; p.RepeatLastN = 64 })
	})
	b.Run("typical", func(b *testing.B) { benchSample(b, 1, typical) })
	b.Run("typical+logprobs5", func(b *testing.B) {
		benchSample(b, 1, func(p *Policy) { typical(p); p.Logprobs = ptr(5) })
	})
	b.Run("T=1", func(b *testing.B) { benchSample(b, 1, func(p *Policy) {}) })
	b.Run("min_p=0.05", func(b *testing.B) { benchSample(b, 1, func(p *Policy) { p.MinP = 0.05 }) })
	// top-p without top-k: the cost depends on how many tokens the nucleus
	// holds. sd 1 at T=0.8 is nearly flat (the nucleus is most of the
	// vocabulary); sd 3 is closer to a trained model's logits.
	b.Run("top_p=0.95/flat", func(b *testing.B) { benchSample(b, 1, func(p *Policy) { p.Temperature = 0.8; p.TopP = 0.95 }) })
	b.Run("top_p=0.95/sd3", func(b *testing.B) { benchSample(b, 3, func(p *Policy) { p.Temperature = 0.8; p.TopP = 0.95 }) })
}
