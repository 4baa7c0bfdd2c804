package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"nanoserve/model"
	"nanoserve/tensor"
)

// TestHybridSynth: the Qwen3.5-shaped synthetic files load through the
// normal GGUF path at F16, Q8_0 and Q4_K_M with the shape's geometry
// (delta-net heads, the attention interval, head and RoPE widths, experts
// and the shared expert), and a short benchmark runs on them with finite
// logits.
func TestHybridSynth(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"tiny-qwen35", "tiny-qwen35moe"} {
		for _, typ := range []string{"f16", "q8_0", "q4_k_m"} {
			s, mix := mustShape(t, name), mustMix(t, typ)
			p, _, err := SyntheticFile(dir, s, mix, 1, 0)
			if err != nil {
				t.Fatalf("%s %s: %v", name, typ, err)
			}
			m, err := model.Load(p, model.Options{Threads: 2})
			if err != nil {
				t.Fatalf("%s %s: %v", name, typ, err)
			}
			c, d := m.Config, s.DeltaNet
			rec := 0
			for l := range c.Layers {
				if c.Recurrent[l] {
					rec++
				}
				if c.Recurrent[l] != d.recurrent(l) {
					t.Errorf("%s %s: layer %d recurrent %v", name, typ, l, c.Recurrent[l])
				}
			}
			if c.Arch != s.Arch || !m.IsHybrid() || rec != 3 || c.SSMKHeads != d.KHeads || c.SSMVHeads != d.VHeads || c.SSMHeadDim != d.HeadDim ||
				c.ConvKernel != d.ConvKernel || c.HeadDim != s.HeadDim || c.RopeDim != s.RopeDim || c.Experts != s.Experts ||
				c.ExpertsUsed != s.ExpertsUsed || c.SharedExpertHiddenDim != s.SharedFFN || c.Tied != s.Tied {
				t.Errorf("%s %s: loaded %+v", name, typ, c)
			}
			if s.Experts > 0 && c.ExpertHiddenDim != s.FFN || s.Experts == 0 && c.HiddenDim != s.FFN {
				t.Errorf("%s %s: FFN %d / expert %d, want %d", name, typ, c.HiddenDim, c.ExpertHiddenDim, s.FFN)
			}
			info := Describe(m, p)
			info.Synthetic, info.Type = s.Name, mix.Name
			res, err := Run(m, info, Options{Prompts: []int{16}, Gens: []int{4}, Reps: 1, Batch: 16, BandwidthBytes: 1 << 20,
				smallProbe: true, KVType: tensor.F16, PeakDur: time.Millisecond})
			if err != nil {
				t.Fatalf("%s %s: %v", name, typ, err)
			}
			for _, x := range res.Tests {
				if !(x.TokS.Mean > 0) || math.IsInf(x.TokS.Mean, 0) {
					t.Errorf("%s %s: %s: %v tok/s", name, typ, x.Name, x.TokS.Mean)
				}
			}
			m.Close()
		}
	}
}

// TestHybridShapes: the published shapes validate and name the models
// they stand for; a delta net on a llama shape or a MoE without a shared
// expert is refused.
func TestHybridShapes(t *testing.T) {
	for _, n := range []string{"qwen35-0.8b", "qwen3.5-2b", "qwen35moe"} {
		s, err := LookupShape(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.validate(); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	bad := tinyQwen35
	bad.Arch = "llama"
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "qwen35") {
		t.Errorf("delta net on llama: %v", err)
	}
	bad = tinyQwen35MoE
	bad.SharedFFN = 0
	if err := bad.validate(); err == nil {
		t.Error("qwen35moe without a shared expert validated")
	}
	bad = tinyQwen35
	bad.DeltaNet = &DeltaNet{KHeads: 3, VHeads: 4, HeadDim: 32, ConvKernel: 4, Interval: 4}
	if err := bad.validate(); err == nil {
		t.Error("4 value heads over 3 key heads validated")
	}
}

// TestHybridPrefillOps: a delta-net layer counts its state update (6·d²
// per value head and token), not the attention it does not run: against
// the same model with every layer taken for attention, tiny-qwen35's three
// delta nets (4 heads of 32) over 40 tokens differ by 3·(6·40·4·32² −
// 4·128·820).
func TestHybridPrefillOps(t *testing.T) {
	s, mix := mustShape(t, "tiny-qwen35"), mustMix(t, "f16")
	p, _, err := SyntheticFile(t.TempDir(), s, mix, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(p, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	f, _ := prefillOps(m, 40, 32)
	rec := m.Recurrent
	m.Recurrent = make([]bool, len(rec))
	g, _ := prefillOps(m, 40, 32)
	m.Recurrent = rec
	if want := 3.0 * (6*40*4*32*32 - 4*128*820); f-g != want {
		t.Errorf("delta nets add %v float ops over attention, want %v", f-g, want)
	}
}
