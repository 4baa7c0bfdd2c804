package bench

import (
	"math/rand/v2"
	"testing"
	"time"

	"nanoserve/model"
)

// TestPeakKernelsDoTheWork runs the assembly probes on random data and
// compares with the Go loops that do the same accumulation: every chain
// must have been advanced exactly n times by exactly the claimed operation,
// so the probe's op count (ops per iteration × n) is the work done.
func TestPeakKernelsDoTheWork(t *testing.T) {
	fma, i8, kernel := peakKernels()
	if fma == nil {
		t.Skipf("no assembly probe to check: %s", kernel)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 1000} {
		// Small integers: every sum is exact in float32, so any
		// difference is a missing, extra or different operation.
		var acc, ref [fmaChains][8]float32
		var ab [2][8]float32
		for c := range acc {
			for l := range acc[c] {
				acc[c][l] = float32(rng.IntN(2001) - 1000)
			}
		}
		for i := range ab {
			for l := range ab[i] {
				ab[i][l] = float32(rng.IntN(17) - 8)
			}
		}
		ref = acc
		fma(&acc, &ab, n)
		fmaRef(&ref, &ab, n)
		if acc != ref {
			t.Errorf("FMA probe, n=%d:\n asm %v\n  go %v", n, acc, ref)
		}

		// Full-range bytes: VPMADDUBSW's int16 saturation is hit.
		var iacc, iref [int8Chains][8]int32
		var us [3][32]byte
		for c := range iacc {
			for j := range iacc[c] {
				iacc[c][j] = rng.Int32() - 1<<30
			}
		}
		for i := range us {
			for j := range us[i] {
				us[i][j] = byte(rng.Uint32())
			}
		}
		iref = iacc
		i8(&iacc, &us, n)
		int8Ref(&iref, &us, n)
		if iacc != iref {
			t.Errorf("int8 probe, n=%d:\n asm %v\n  go %v", n, iacc, iref)
		}
	}
}

// TestPeakKernelZDoesTheWork: the 512-bit FMA probe, where the CPU has
// AVX-512F, advances each of its 12 chains of 16 lanes exactly n times by
// a fused multiply-add: its two 8-lane halves checked with fmaRef.
func TestPeakKernelZDoesTheWork(t *testing.T) {
	fmaZ := peakKernelZ()
	if fmaZ == nil {
		t.Skip("no 512-bit probe on this machine (AVX-512F)")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 1000} {
		var acc [fmaChains][16]float32
		var ab [2][16]float32
		for c := range acc {
			for l := range acc[c] {
				acc[c][l] = float32(rng.IntN(2001) - 1000)
			}
		}
		for i := range ab {
			for l := range ab[i] {
				ab[i][l] = float32(rng.IntN(17) - 8)
			}
		}
		var ref [2][fmaChains][8]float32 // low, high halves
		var abh [2][2][8]float32
		for h := range 2 {
			for c := range acc {
				copy(ref[h][c][:], acc[c][8*h:8*h+8])
			}
			for i := range ab {
				copy(abh[h][i][:], ab[i][8*h:8*h+8])
			}
			fmaRef(&ref[h], &abh[h], n)
		}
		fmaZ(&acc, &ab, n)
		for c := range acc {
			for l := range acc[c] {
				if want := ref[l/8][c][l%8]; acc[c][l] != want {
					t.Fatalf("zmm FMA probe, n=%d: chain %d lane %d = %v, want %v", n, c, l, acc[c][l], want)
				}
			}
		}
	}
}

// TestInt8RefSaturates pins the reference itself to VPMADDUBSW's
// semantics: 255·127 + 255·127 saturates to 32767 per int16 lane, and
// VPMADDWD adds two lanes times their weights.
func TestInt8RefSaturates(t *testing.T) {
	var acc [int8Chains][8]int32
	var us [3][32]byte
	for i := range 32 {
		us[0][i], us[1][i] = 255, 127
	}
	for i := 0; i < 32; i += 2 {
		us[2][i] = 1
	}
	us[2][2] = 3 // lane 0's second int16 weight
	int8Ref(&acc, &us, 2)
	if acc[0][0] != 2*(32767+3*32767) || acc[5][1] != 2*(2*32767) {
		t.Errorf("acc[0][0] %d acc[5][1] %d, want %d and %d", acc[0][0], acc[5][1], 2*4*32767, 2*2*32767)
	}
}

// TestProbePeak: a short probe reports positive rates (or none, saying why).
func TestProbePeak(t *testing.T) {
	p := ProbePeak(2, 2, 2*time.Millisecond)
	if fma, _, _ := peakKernels(); fma == nil {
		if p.Measured || p.FMAN != 0 || p.Kernel == "" {
			t.Errorf("no probe, but %+v", p)
		}
		return
	}
	if !p.Measured || !(p.FMA1 > 0 && p.FMAN > 0 && p.Int8_1 > 0 && p.Int8N > 0) || p.Threads != 2 {
		t.Errorf("peak %+v", p)
	}
}

// TestPrefillShares: the share of peak on a hand-made Result.
func TestPrefillShares(t *testing.T) {
	r := &Result{
		Peak: &Peak{Measured: true, Threads: 2, FMAN: 100, Int8N: 400, FMA1: 50, Int8_1: 200},
		Tests: []Test{
			// 100 tokens at 50 tok/s: 2 s. Float 40e9 ops at 100e9/s is
			// 0.4 s, int8 320e9 at 400e9/s is 0.8 s: 1.2 s of 2 s = 0.6.
			{Name: "pp100", Kind: "pp", NPrompt: 100, TokS: Stats{Mean: 50}, FloatOps: 40e9, Int8Ops: 320e9},
			{Name: "tg8", Kind: "tg", NGen: 8, TokS: Stats{Mean: 10}, FloatOps: 40e9},
			{Name: "pp9", Kind: "pp", NPrompt: 9, Skipped: "too long", FloatOps: 1},
		},
	}
	r.prefillShares()
	pp := r.Tests[0]
	if d := pp.PeakFrac - 0.6; d > 1e-12 || d < -1e-12 {
		t.Errorf("pp100 share %v, want 0.6", pp.PeakFrac)
	}
	if d := pp.GOps - 180; d > 1e-9 || d < -1e-9 {
		t.Errorf("pp100 %v GOP/s, want 180", pp.GOps)
	}
	if r.Tests[1].PeakFrac != 0 || r.Tests[1].GOps != 0 || r.Tests[2].PeakFrac != 0 {
		t.Errorf("share given to a tg or skipped test: %+v", r.Tests[1:])
	}
	// No measured peak: the rate, but no share.
	r.Peak = &Peak{Kernel: "no SIMD probe"}
	r.Tests[0].PeakFrac = 0
	r.prefillShares()
	if r.Tests[0].PeakFrac != 0 || r.Tests[0].GOps == 0 {
		t.Errorf("without a peak: %+v", r.Tests[0])
	}
}

// TestPrefillOps counts a 40-token prefill in Forward calls of 32 on the
// tiny shapes by hand.
func TestPrefillOps(t *testing.T) {
	dir := t.TempDir()
	// Attention: 4·q_dim·Σ_{p=1..40} p per layer, 2 layers, q_dim 64.
	attn := 4.0 * 64 * (40 * 41 / 2) * 2
	for _, c := range []struct {
		shape, typ   string
		float, int8s float64
	}{
		// Per layer and token: wq 64·64, wk, wv 32·64, wo 64·64, three FFN
		// matrices 256·64; the untied LM head 512·64 in 2 calls; all Q8_0.
		{"tiny", "q8_0", attn, 2 * (40*2*(2*64*64+2*32*64+3*256*64) + 2*512*64)},
		// GPT-2: fused qkv 192·64, wo 64·64, two MLP matrices 256·64; the
		// tied embedding as LM head in 2 calls; F16 (float).
		{"tiny-gpt2", "f16", attn + 2*(40*2*(192*64+64*64+2*256*64)+2*512*64), 0},
		// MoE: 2 of 8 experts of three 64·64 matrices; the router 8·64
		// stays F32 (float).
		{"tiny-moe", "q8_0", attn + 2*40*2*8*64, 2 * (40*2*(2*64*64+2*32*64+2.0/8*8*3*64*64) + 2*512*64)},
	} {
		s, mix := mustShape(t, c.shape), mustMix(t, c.typ)
		p, _, err := SyntheticFile(dir, s, mix, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := model.Load(p, model.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		f, i := prefillOps(m, 40, 32)
		if f != c.float || i != c.int8s {
			t.Errorf("%s %s: %v float + %v int8 ops, want %v + %v", c.shape, c.typ, f, i, c.float, c.int8s)
		}
		if c.shape == "tiny" {
			// A sliding window of 16 on every layer: positions attend to
			// min(p, 16) keys, Σ = 136 + 24·16 = 520.
			m.SlidingWindow = 16
			if f, _ := prefillOps(m, 40, 32); f != 4*64*520*2 {
				t.Errorf("window 16: %v float ops, want %v", f, 4*64*520*2)
			}
		}
		m.Close()
	}
}
