package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

func tinyConfig() Config {
	return Config{Dim: 8, Layers: 2, Heads: 4, KVHeads: 2, Hidden: 12, Vocab: 11, Ctx: 8, RopeTheta: 10000, NormEps: 1e-5}
}

func randTokens(rng *rand.Rand, n, v int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = rng.IntN(v)
	}
	return t
}

// perturbed makes parameters with non-trivial norm gains so their
// gradients are exercised too.
func perturbed(c Config, seed uint64) []float64 {
	p32 := InitParams(c, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	p := make([]float64, len(p32))
	for i, v := range p32 {
		p[i] = float64(v)*10 + 0.01*rng.NormFloat64()
	}
	ts, _ := c.Layout()
	for _, t := range ts {
		if !t.Decay {
			for i := t.Off; i < t.Off+t.Size(); i++ {
				p[i] = 1 + 0.3*rng.NormFloat64()
			}
		}
	}
	return p
}

func lossOf[T Float](t *testing.T, n *Net[T], in, tg []int, w []float32, b, s int) float64 {
	if _, err := n.Forward(in, b, s); err != nil {
		t.Fatal(err)
	}
	sum, cnt := n.Loss(tg, w)
	return sum / cnt
}

func TestGradCheck(t *testing.T) {
	c := tinyConfig()
	p := perturbed(c, 3)
	n, err := NewNet(c, p, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	b, s := 2, 6
	in, tg := randTokens(rng, b*s, c.Vocab), randTokens(rng, b*s, c.Vocab)
	tg[3] = -1                    // ignored target
	w := make([]float32, len(tg)) // loss weights, as FIM middles get
	for i := range w {
		w[i] = 0.5 + 3*rng.Float32()
	}
	lossOf(t, n, in, tg, w, b, s)
	cnt := 0.0
	for i, v := range tg {
		if v >= 0 {
			cnt += float64(w[i])
		}
	}
	n.Backward(tg, w, cnt)
	grad := append([]float64(nil), n.G...)

	ts, _ := c.Layout()
	const h = 1e-5
	for _, ten := range ts {
		worst := 0.0
		for i := ten.Off; i < ten.Off+ten.Size(); i++ {
			old := p[i]
			p[i] = old + h
			lp := lossOf(t, n, in, tg, w, b, s)
			p[i] = old - h
			lm := lossOf(t, n, in, tg, w, b, s)
			p[i] = old
			num := (lp - lm) / (2 * h)
			err := math.Abs(num-grad[i]) / max(1e-4, math.Abs(num)+math.Abs(grad[i]))
			worst = max(worst, err)
		}
		if worst > 1e-5 {
			t.Errorf("%s: worst relative gradient error %.3g", ten.Name, worst)
		}
	}

	// The float32 path (tensor pool GEMM) matches the float64 reference,
	// whatever the causal blocks of its attention (one block, blocks that
	// split the sequence evenly and raggedly, one row per block) and with
	// S and dP through GemmNN or MatMul.
	p32 := make([]float32, len(p))
	for i, v := range p {
		p32[i] = float32(v)
	}
	l64 := lossOf(t, n, in, tg, w, b, s)
	for _, run := range []struct {
		bl int
		nn bool
	}{{attnBlockRows, true}, {4, true}, {3, true}, {1, true}, {attnBlockRows, false}, {3, false}} {
		bl := run.bl
		n32, _ := NewNet(c, p32, 2)
		defer n32.Close()
		n32.attnBlock, n32.attnNN = bl, run.nn
		l32 := lossOf(t, n32, in, tg, w, b, s)
		if math.Abs(l32-l64) > 1e-4 {
			t.Errorf("attention blocks of %d (GemmNN %v): float32 loss %v, float64 %v", bl, run.nn, l32, l64)
		}
		n32.Backward(tg, w, cnt)
		for _, ten := range ts {
			worst := 0.0
			for i := ten.Off; i < ten.Off+ten.Size(); i++ {
				worst = max(worst, math.Abs(float64(n32.G[i])-grad[i]))
			}
			if worst > 1e-4 {
				t.Errorf("attention blocks of %d (GemmNN %v): %s: float32 gradient differs from float64 by %.3g", bl, run.nn, ten.Name, worst)
			}
		}
	}
}

func TestCausalMask(t *testing.T) {
	c := tinyConfig()
	p := perturbed(c, 5)
	n, _ := NewNet(c, p, 2)
	defer n.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	s := c.Ctx
	in := randTokens(rng, s, c.Vocab)
	ref := append([]float64(nil), mustForward(t, n, in, 1, s)...)
	for k := 1; k < s; k++ {
		alt := append([]int(nil), in...)
		alt[k] = (alt[k] + 1 + rng.IntN(c.Vocab-1)) % c.Vocab
		got := mustForward(t, n, alt, 1, s)
		for i := 0; i < k*c.Vocab; i++ {
			if got[i] != ref[i] {
				t.Fatalf("changing token %d changed logit %d of position %d", k, i%c.Vocab, i/c.Vocab)
			}
		}
		changed := false
		for i := k * c.Vocab; i < (k+1)*c.Vocab; i++ {
			changed = changed || got[i] != ref[i]
		}
		if !changed {
			t.Fatalf("changing token %d did not change its own logits", k)
		}
	}
}

func mustForward[T Float](t *testing.T, n *Net[T], in []int, b, s int) []T {
	t.Helper()
	lg, err := n.Forward(in, b, s)
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

// TrainOnly's gradients are the full backward's for the layers it trains
// (bit for bit: the same operations reach them), and zero for the rest.
func TestTrainOnly(t *testing.T) {
	c := tinyConfig()
	c.Layers = 3
	n, err := NewNet(c, InitParams(c, 5), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	rng := rand.New(rand.NewPCG(9, 9))
	b, s := 2, 6
	in, tg := randTokens(rng, b*s, c.Vocab), randTokens(rng, b*s, c.Vocab)
	grads := func(only []int) []float32 {
		n.TrainOnly(only)
		lossOf(t, n, in, tg, nil, b, s)
		clear(n.G)
		n.Backward(tg, nil, float64(b*s))
		return append([]float32(nil), n.G...)
	}
	full, part := grads(nil), grads([]int{1})
	ts, _ := c.Layout()
	for _, tn := range ts {
		trained := len(tn.Name) > 6 && tn.Name[:6] == "blk.1."
		for i := tn.Off; i < tn.Off+tn.Size(); i++ {
			want := full[i]
			if !trained {
				want = 0
			}
			if tn.Rows > 1 && part[i] != want { // norm gains' gradients are not skipped (cheap)
				t.Fatalf("%s[%d]: gradient %g, want %g", tn.Name, i-tn.Off, part[i], want)
			}
			if tn.Rows == 1 && trained && part[i] != want {
				t.Fatalf("%s[%d]: gradient %g, want %g", tn.Name, i-tn.Off, part[i], want)
			}
		}
	}
}

// TestAttentionKernelShapes: at an attention head's real width (hd = 32)
// and a context that is no multiple of the kernels' blocks, the float32
// path — GemmNN's vector kernels on or off, one causal block or several —
// gives the float64 reference's loss and gradients. (TestGradCheck's tiny
// heads only reach GemmNN's Go loop.)
func TestAttentionKernelShapes(t *testing.T) {
	c := Config{Dim: 64, Layers: 1, Heads: 2, KVHeads: 1, Hidden: 48, Vocab: 13, Ctx: 70, RopeTheta: 10000, NormEps: 1e-5}
	p := perturbed(c, 9)
	n64, err := NewNet(c, p, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer n64.Close()
	rng := rand.New(rand.NewPCG(4, 4))
	b, s := 2, c.Ctx
	in, tg := randTokens(rng, b*s, c.Vocab), randTokens(rng, b*s, c.Vocab)
	l64 := lossOf(t, n64, in, tg, nil, b, s)
	n64.Backward(tg, nil, float64(len(tg)))
	gmax := 0.0
	for _, g := range n64.G {
		gmax = max(gmax, math.Abs(g))
	}
	p32 := make([]float32, len(p))
	for i, v := range p {
		p32[i] = float32(v)
	}
	for _, bl := range []int{attnBlockRows, 32, 5} {
		for _, nn := range []bool{true, false} {
			n32, _ := NewNet(c, p32, 2)
			defer n32.Close()
			n32.attnBlock, n32.attnNN = bl, nn
			if l32 := lossOf(t, n32, in, tg, nil, b, s); math.Abs(l32-l64) > 1e-4*math.Abs(l64) {
				t.Errorf("blocks of %d (GemmNN %v): loss %v, float64 %v", bl, nn, l32, l64)
			}
			n32.Backward(tg, nil, float64(len(tg)))
			worst := 0.0
			for i, g := range n32.G {
				worst = max(worst, math.Abs(float64(g)-n64.G[i]))
			}
			if worst > 1e-4*gmax {
				t.Errorf("blocks of %d (GemmNN %v): gradients differ by %.3g (largest %.3g)", bl, nn, worst, gmax)
			}
		}
	}
}
