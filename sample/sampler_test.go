package sample

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

func inf() float64 { return math.Inf(1) }
func nan() float64 { return math.NaN() }

func mustNew(t testing.TB, p Policy, vocab int) *Sampler {
	t.Helper()
	s, err := New(p, vocab)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustSample(t testing.TB, s *Sampler, logits []float32, history []int, promptLen int) Choice {
	t.Helper()
	c, err := s.Sample(logits, history, promptLen)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testLogits returns n logits in [-scale, scale] quantised to 1/16 steps (so
// ties occur), from an integer generator: identical on every platform.
func testLogits(r *rng, n int, scale float64) []float32 {
	l := make([]float32, n)
	for i := range l {
		q := int64(r.next()>>40) - 1<<23 // [-2^23, 2^23)
		l[i] = float32(math.Round(float64(q)/(1<<23)*scale*16) / 16)
	}
	return l
}

func refArgmax(l []float32) int {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return best
}

func TestGreedyIsArgmaxAndDrawsNothing(t *testing.T) {
	r := newRNG(1)
	p := Greedy()
	p.Seed = ptr(uint64(99))
	s := mustNew(t, p, 1000)
	before := s.rng
	for i := range 200 {
		l := testLogits(&r, 1000, 3) // many ties: first max must win
		if i%3 == 0 {
			l[999] = 100
			l[5] = 100
		}
		c := mustSample(t, s, l, nil, 0)
		if want := refArgmax(l); c.ID != want {
			t.Fatalf("step %d: greedy chose %d, want %d", i, c.ID, want)
		}
	}
	if s.rng != before || s.Draws() != 0 {
		t.Errorf("greedy touched the RNG: draws %d", s.Draws())
	}
}

func TestTopK1IsArgmax(t *testing.T) {
	r := newRNG(2)
	for _, temp := range []float32{0.1, 0.7, 1, 2} {
		p := Defaults()
		p.Temperature, p.TopK, p.TopP, p.MinP = temp, 1, 0.9, 0.1
		s := mustNew(t, p, 500)
		for i := range 100 {
			l := testLogits(&r, 500, 2)
			if c := mustSample(t, s, l, nil, 0); c.ID != refArgmax(l) {
				t.Fatalf("T=%v step %d: top-k 1 chose %d, want %d", temp, i, c.ID, refArgmax(l))
			}
		}
	}
}

func TestSeedReproducible(t *testing.T) {
	const V = 1000
	run := func(seed uint64, temp float32, topK int) []int {
		p := Defaults()
		p.Temperature, p.TopK, p.Seed = temp, topK, ptr(seed)
		s := mustNew(t, p, V)
		r := newRNG(3) // same logits for every run
		var ids []int
		for range 300 {
			ids = append(ids, mustSample(t, s, testLogits(&r, V, 4), ids, 0).ID)
		}
		return ids
	}
	for _, topK := range []int{0, 40} {
		a, b := run(7, 1, topK), run(7, 1, topK)
		if !slices.Equal(a, b) {
			t.Errorf("top_k %d: same seed gave different sequences", topK)
		}
		c, d := run(7, 2, topK), run(8, 2, topK)
		if slices.Equal(c, d) {
			t.Errorf("top_k %d: seeds 7 and 8 gave the same sequence at T=2", topK)
		}
	}
	// A nil seed is chosen at random and reported; reusing it reproduces.
	p := Defaults()
	s1, s2 := mustNew(t, p, V), mustNew(t, p, V)
	if s1.Seed() == s2.Seed() {
		t.Error("two random seeds are equal")
	}
	rec := s1.Policy()
	if rec.Seed == nil || *rec.Seed != s1.Seed() {
		t.Fatalf("Policy() does not record the seed: %+v", rec)
	}
	s3 := mustNew(t, rec, V)
	r := newRNG(4)
	for range 50 {
		l := testLogits(&r, V, 4)
		if a, b := mustSample(t, s1, l, nil, 0).ID, mustSample(t, s3, l, nil, 0).ID; a != b {
			t.Fatal("recorded seed does not reproduce")
		}
	}
}

// chiSquare returns Σ (observed − expected)² / expected over bins with
// probability > 0, and fails if a bin of probability 0 was drawn.
func chiSquare(t *testing.T, counts []int, probs []float64, n int) float64 {
	t.Helper()
	x := 0.0
	for i, p := range probs {
		if p == 0 {
			if counts[i] != 0 {
				t.Errorf("token %d (excluded) drawn %d times", i, counts[i])
			}
			continue
		}
		d := float64(counts[i]) - p*float64(n)
		x += d * d / (p * float64(n))
	}
	return x
}

// chi2Crit999[k] is the 0.999 quantile of χ² with k degrees of freedom.
var chi2Crit999 = []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52}

func softmax(l []float64, temp float64) []float64 {
	m := slices.Max(l)
	p := make([]float64, len(l))
	s := 0.0
	for i, v := range l {
		p[i] = math.Exp((v - m) / temp)
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

func TestDistributionMatchesSoftmax(t *testing.T) {
	scores := []float64{1.2, 0.3, -0.4, 1.8}
	logits := []float32{1.2, 0.3, -0.4, 1.8}
	want := []float64{0.2915, 0.1185, 0.0589, 0.5311}
	for i, p := range softmax(scores, 1) {
		if math.Abs(p-want[i]) > 1e-4 {
			t.Fatalf("softmax[%d] = %v, want %v", i, p, want[i])
		}
	}
	const n = 50000
	renorm := func(probs []float64, keep ...int) []float64 {
		out := make([]float64, len(probs))
		s := 0.0
		for _, i := range keep {
			s += probs[i]
		}
		for _, i := range keep {
			out[i] = probs[i] / s
		}
		return out
	}
	p1 := softmax(scores, 1)
	cases := []struct {
		name  string
		edit  func(*Policy)
		probs []float64
	}{
		{"T=1", func(p *Policy) {}, p1},
		{"T=0.5", func(p *Policy) { p.Temperature = 0.5 }, softmax(scores, 0.5)},
		{"T=2", func(p *Policy) { p.Temperature = 2 }, softmax(scores, 2)},
		{"T=1 top_k=3", func(p *Policy) { p.TopK = 3 }, renorm(p1, 3, 0, 1)},
		{"top_k=2", func(p *Policy) { p.TopK = 2 }, renorm(p1, 3, 0)},
		// sorted: 3 (.5311), 0 (.2915, mass before .5311), 1 (mass before .8226), 2 (.9411)
		{"top_p=0.8", func(p *Policy) { p.TopP = 0.8 }, renorm(p1, 3, 0)},
		{"top_p=0.9", func(p *Policy) { p.TopP = 0.9 }, renorm(p1, 3, 0, 1)},
		{"top_k=3 top_p=0.8", func(p *Policy) { p.TopK = 3; p.TopP = 0.8 }, renorm(p1, 3, 0)},
		// top-k 3 renormalises to .5643, .3097, .1259: mass before id 1 is .874 >= .85
		{"top_k=3 top_p=0.85", func(p *Policy) { p.TopK = 3; p.TopP = 0.85 }, renorm(p1, 3, 0)},
		// ratios to p_max: 1, .549, .223, .111
		{"min_p=0.2", func(p *Policy) { p.MinP = 0.2 }, renorm(p1, 3, 0, 1)},
		{"min_p=0.5", func(p *Policy) { p.MinP = 0.5 }, renorm(p1, 3, 0)},
		{"top_k=3 min_p=0.5", func(p *Policy) { p.TopK = 3; p.MinP = 0.5 }, renorm(p1, 3, 0)},
		{"top_p=0.9 min_p=0.2", func(p *Policy) { p.TopP = 0.9; p.MinP = 0.2 }, renorm(p1, 3, 0, 1)},
		{"top_p=0.9 min_p=0.5", func(p *Policy) { p.TopP = 0.9; p.MinP = 0.5 }, renorm(p1, 3, 0)},
	}
	for _, c := range cases {
		p := Defaults()
		p.Seed = ptr(uint64(2024))
		c.edit(&p)
		s := mustNew(t, p, 4)
		counts := make([]int, 4)
		for range n {
			counts[mustSample(t, s, logits, nil, 0).ID]++
		}
		dof := -1
		for _, q := range c.probs {
			if q > 0 {
				dof++
			}
		}
		x := chiSquare(t, counts, c.probs, n)
		if x > chi2Crit999[dof] {
			t.Errorf("%s: χ² = %.2f > %.2f (dof %d); counts %v, probs %.4f", c.name, x, chi2Crit999[dof], dof, counts, c.probs)
		}
	}
}

func TestPenaltiesAndBias(t *testing.T) {
	logits := []float32{2, -2, 0.5, -0.5, 3, 0, 1, -1}
	history := []int{0, 1, 2, 4, 4, 6} // prompt {0,1,2}, output {4,4,6}
	cases := []struct {
		name string
		edit func(*Policy)
		want []float32
	}{
		{"none", func(*Policy) {}, logits},
		{"repetition 2 over all", func(p *Policy) { p.RepetitionPenalty = 2 },
			[]float32{1, -4, 0.25, -0.5, 1.5, 0, 0.5, -1}},
		{"repetition 2, window 2", func(p *Policy) { p.RepetitionPenalty = 2; p.RepeatLastN = 2 },
			[]float32{2, -2, 0.5, -0.5, 1.5, 0, 0.5, -1}},
		{"repetition 0.5 (< 1 favours)", func(p *Policy) { p.RepetitionPenalty = 0.5; p.RepeatLastN = -1 },
			[]float32{4, -1, 1, -0.5, 6, 0, 2, -1}},
		{"frequency 0.5, presence 0.25 (output only)", func(p *Policy) { p.FrequencyPenalty = 0.5; p.PresencePenalty = 0.25 },
			[]float32{2, -2, 0.5, -0.5, 3 - 1 - 0.25, 0, 1 - 0.5 - 0.25, -1}},
		{"bias", func(p *Policy) { p.LogitBias = map[int]float32{3: 1.5, 0: -1, 7: 0} },
			[]float32{1, -2, 0.5, 1, 3, 0, 1, -1}},
		{"bias then all penalties", func(p *Policy) {
			p.LogitBias = map[int]float32{3: 1.5, 0: -1}
			p.RepetitionPenalty = 2
			p.FrequencyPenalty = 0.5
			p.PresencePenalty = 0.25
		}, []float32{0.5, -4, 0.25, 1, 1.5 - 1 - 0.25, 0, 0.5 - 0.5 - 0.25, -1}},
	}
	for _, c := range cases {
		p := Greedy()
		c.edit(&p)
		s := mustNew(t, p, len(logits))
		in := slices.Clone(logits)
		ch := mustSample(t, s, in, history, 3)
		if !slices.Equal(in, logits) {
			t.Fatalf("%s: Sample modified the caller's logits", c.name)
		}
		got := logits
		if s.work != nil {
			got = s.work
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: logits after penalties %v, want %v", c.name, got, c.want)
		}
		if ch.ID != refArgmax(c.want) {
			t.Errorf("%s: chose %d, want %d", c.name, ch.ID, refArgmax(c.want))
		}
		// The count buffer is clean again, so a second call gives the same.
		mustSample(t, s, in, history, 3)
		if s.work != nil && !slices.Equal(s.work, c.want) {
			t.Errorf("%s: second call differs: %v", c.name, s.work)
		}
		for id, v := range s.cnt {
			if v != 0 {
				t.Fatalf("%s: cnt[%d] = %d after Sample", c.name, id, v)
			}
		}
	}
	// Presence/frequency ignore the prompt: with no output nothing changes.
	p := Greedy()
	p.FrequencyPenalty, p.PresencePenalty = 2, 2
	s := mustNew(t, p, len(logits))
	if c := mustSample(t, s, logits, history, len(history)); c.ID != 4 {
		t.Errorf("penalised the prompt: chose %d", c.ID)
	}
}

func TestLogprobs(t *testing.T) {
	logits := []float32{1.2, 0.3, -0.4, 1.8, 0.3, float32(math.Inf(-1))}
	ref := make([]float64, len(logits))
	m, s := 1.8, 0.0
	for _, v := range logits {
		s += math.Exp(float64(v) - m)
	}
	for i, v := range logits {
		ref[i] = float64(v) - m - math.Log(s)
	}
	for _, n := range []int{-1, 0, 3, 6, 20} {
		p := Greedy()
		p.LogitBias = map[int]float32{2: 10} // logprobs are of the raw logits
		if n >= 0 {
			p.Logprobs = ptr(n)
		}
		sm := mustNew(t, p, len(logits))
		c := mustSample(t, sm, logits, nil, 0)
		if c.ID != 2 {
			t.Fatalf("chose %d, want 2 (biased)", c.ID)
		}
		if n < 0 {
			if c.Logprob != 0 || c.TopLogprobs != nil {
				t.Errorf("logprobs nil: got %v %v", c.Logprob, c.TopLogprobs)
			}
			continue
		}
		if math.Abs(float64(c.Logprob)-ref[2]) > 1e-6 {
			t.Errorf("n=%d: logprob %v, want %v", n, c.Logprob, ref[2])
		}
		wantIDs := []int{3, 0, 1, 4, 2}[:min(n, 5)] // -Inf is never listed; tie 1/4: lower id first
		if len(c.TopLogprobs) != len(wantIDs) {
			t.Fatalf("n=%d: %d alternatives, want %d", n, len(c.TopLogprobs), len(wantIDs))
		}
		for j, lp := range c.TopLogprobs {
			if lp.ID != wantIDs[j] || math.Abs(float64(lp.Logprob)-ref[lp.ID]) > 1e-6 {
				t.Errorf("n=%d: alternative %d = %+v, want id %d logprob %v", n, j, lp, wantIDs[j], ref[wantIDs[j]])
			}
		}
	}
}

func TestSampleErrors(t *testing.T) {
	p := Defaults()
	p.RepetitionPenalty = 1.2
	s := mustNew(t, p, 4)
	ok := []float32{1, 2, 3, 4}
	for _, c := range []struct {
		name      string
		logits    []float32
		history   []int
		promptLen int
		want      error
	}{
		{"short logits", ok[:3], nil, 0, nil},
		{"NaN", []float32{1, float32(nan()), 0, 0}, nil, 0, nil},
		{"+Inf", []float32{1, float32(inf()), 0, 0}, nil, 0, nil},
		{"all -Inf", []float32{float32(-inf()), float32(-inf()), float32(-inf()), float32(-inf())}, nil, 0, ErrNoCandidates},
		{"history id", ok, []int{1, 2, 9}, 0, nil},
		{"negative history id", ok, []int{1, -1}, 0, nil},
		{"promptLen", ok, []int{1}, 2, nil},
	} {
		_, err := s.Sample(c.logits, c.history, c.promptLen)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: error %v", c.name, err)
		}
	}
	g := mustNew(t, Greedy(), 2)
	if _, err := g.Sample([]float32{float32(-inf()), float32(-inf())}, nil, 0); !errors.Is(err, ErrNoCandidates) {
		t.Errorf("greedy all -Inf: %v", err)
	}
	for id, v := range s.cnt {
		if v != 0 {
			t.Fatalf("cnt[%d] = %d left after an error", id, v)
		}
	}
}

// refSample is Sample's documented algorithm written as plainly as possible:
// maps for counts, a full sort of every candidate.
func refSample(p Policy, logits []float32, history []int, promptLen int, r *rng) int {
	l := slices.Clone(logits)
	for id, b := range p.LogitBias {
		l[id] += b
	}
	if p.RepetitionPenalty != 1 {
		win := history
		if p.RepeatLastN > 0 && len(win) > p.RepeatLastN {
			win = win[len(win)-p.RepeatLastN:]
		}
		seen := map[int]bool{}
		for _, id := range win {
			seen[id] = true
		}
		for id := range seen {
			if l[id] > 0 {
				l[id] /= p.RepetitionPenalty
			} else {
				l[id] *= p.RepetitionPenalty
			}
		}
	}
	if p.FrequencyPenalty != 0 || p.PresencePenalty != 0 {
		counts := map[int]int{}
		for _, id := range history[promptLen:] {
			counts[id]++
		}
		for id, c := range counts {
			l[id] = l[id] - float32(p.FrequencyPenalty*float32(c))
			l[id] = l[id] - p.PresencePenalty
		}
	}
	if p.Temperature == 0 {
		return refArgmax(l)
	}
	var cs []cand
	for i, v := range l {
		if !math.IsInf(float64(v), -1) {
			cs = append(cs, cand{id: int32(i), v: v})
		}
	}
	slices.SortFunc(cs, byDesc)
	if p.TopK > 0 && p.TopK < len(l) && p.TopK < len(cs) {
		cs = cs[:p.TopK]
	}
	invT := 1 / float64(p.Temperature)
	scale := math.Ldexp(1, 63-bits.Len(uint(len(l))))
	var sum uint64
	for j := range cs {
		cs[j].w = uint64(expDet((float64(cs[j].v)-float64(cs[0].v))*invT) * scale)
		sum += cs[j].w
	}
	minW := uint64(math.Ceil(float64(p.MinP) * scale))
	var kept []cand
	var before uint64
	for _, x := range cs {
		if p.TopP < 1 && before >= max(1, uint64(float64(p.TopP)*float64(sum))) {
			break
		}
		before += x.w
		if x.w > 0 && x.w >= minW {
			kept = append(kept, x)
		}
	}
	slices.SortFunc(kept, byID)
	var total uint64
	for _, x := range kept {
		total += x.w
	}
	hi, lo := bits.Mul64(r.next()>>11, total)
	t := hi<<11 | lo>>53
	var acc uint64
	for _, x := range kept {
		acc += x.w
		if acc > t {
			return int(x.id)
		}
	}
	panic("reference draw ran past the end")
}

// weights (the vocabulary-wide loop with expDet inlined) must equal weight.
func TestWeightsMatchExpDet(t *testing.T) {
	r := newRNG(21)
	l := testLogits(&r, 4096, 40)
	l[7] = float32(math.Inf(-1))
	w := make([]uint64, len(l))
	for _, invT := range []float64{0.1, 1, 1.25, 7, 1e6} {
		m := float64(slices.Max(l))
		scale := math.Ldexp(1, 51)
		sum := weights(w, l, m, invT, scale, -52*math.Ln2)
		var want uint64
		for i, v := range l {
			if x := weight(v, m, invT, scale); w[i] != x {
				t.Fatalf("invT %v: weights[%d] = %d, weight = %d", invT, i, w[i], x)
			}
			want += w[i]
		}
		if sum != want {
			t.Fatalf("sum %d, want %d", sum, want)
		}
	}
}

// The optimised Sampler (heap top-k, binade prefilter for top-p, dense draws,
// incremental counts) must agree token for token with refSample, given the
// same generator, over random vocabularies, logits and policies.
func TestMatchesReference(t *testing.T) {
	g := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...float64) float64 { return xs[g.IntN(len(xs))] }
	cases := 300
	if testing.Short() {
		cases = 60
	}
	for c := range cases {
		V := []int{1, 2, 5, 50, 300, 3000}[g.IntN(6)]
		p := Defaults()
		p.Seed = ptr(g.Uint64())
		p.Temperature = float32(pick(0, 0.3, 0.8, 1, 2.5))
		p.TopK = int(pick(0, 0, 1, 3, 40, float64(V), float64(V+5)))
		p.TopP = float32(pick(1, 1, 0.5, 0.9, 0.95, 0.999999))
		p.MinP = float32(pick(0, 0, 0.05, 0.3, 1))
		p.RepetitionPenalty = float32(pick(1, 1.3, 0.7))
		p.RepeatLastN = int(pick(0, -1, 4))
		p.FrequencyPenalty = float32(pick(0, 0.5, -1))
		p.PresencePenalty = float32(pick(0, 0.25))
		if g.IntN(3) == 0 {
			p.LogitBias = map[int]float32{g.IntN(V): float32(pick(-100, 5, 100))}
		}
		s := mustNew(t, p, V)
		ref := newRNG(*p.Seed)
		scale := pick(0.05, 1, 5, 30)
		r := newRNG(uint64(c))
		var history []int
		for range 8 {
			history = append(history, g.IntN(V))
		}
		promptLen := g.IntN(len(history) + 1)
		for step := range 6 {
			l := testLogits(&r, V, scale)
			for i := range l {
				if g.IntN(20) == 0 {
					l[i] = float32(math.Inf(-1))
				}
			}
			l[g.IntN(V)] = float32(scale) // at least one finite
			want := refSample(p, l, history, promptLen, &ref)
			got := mustSample(t, s, l, history, promptLen).ID
			if got != want {
				t.Fatalf("case %d step %d (V=%d, %+v, scale %v): sampler chose %d, reference %d", c, step, V, p, scale, got, want)
			}
			history = append(history, got)
		}
		if s.rng != ref {
			t.Fatalf("case %d: generator states diverged", c)
		}
	}
}

// The kept set is never left: exhaustive check of which tokens can appear
// over a large vocabulary with top-p alone (the binade path) at several
// sharpnesses; excluded tokens must never be drawn.
func TestTopPNeverDrawsExcluded(t *testing.T) {
	const V = 2000
	r := newRNG(11)
	for _, scale := range []float64{0.5, 3, 12} {
		l := testLogits(&r, V, scale)
		p := Defaults()
		p.TopP, p.Seed = 0.7, ptr(uint64(5))
		s := mustNew(t, p, V)
		// Allowed set from float64 probabilities, with a small margin.
		ps := make([]float64, V)
		m := float64(slices.Max(l))
		sum := 0.0
		for i, v := range l {
			ps[i] = math.Exp(float64(v) - m)
			sum += ps[i]
		}
		order := make([]int, V)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			if l[a] != l[b] {
				if l[a] > l[b] {
					return -1
				}
				return 1
			}
			return a - b
		})
		allowed := map[int]bool{}
		mass := 0.0
		for _, i := range order {
			if mass >= 0.7*sum*(1+1e-9) {
				break
			}
			allowed[i] = true
			mass += ps[i]
		}
		for range 500 {
			if id := mustSample(t, s, l, nil, 0).ID; !allowed[id] {
				t.Fatalf("scale %v: drew excluded token %d", scale, id)
			}
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	const V = 5000
	r := newRNG(12)
	l := testLogits(&r, V, 4)
	history := make([]int, 100)
	for i := range history {
		history[i] = int(r.next() % V)
	}
	policies := map[string]func(*Policy){
		"greedy":           func(p *Policy) { p.Temperature = 0 },
		"greedy+penalties": func(p *Policy) { p.Temperature = 0; p.RepetitionPenalty = 1.1; p.FrequencyPenalty = 0.5 },
		"typical": func(p *Policy) {
			p.Temperature = 0.8
			p.TopK = 40
			p.TopP = 0.95
			p.RepetitionPenalty = 1.1
			p.RepeatLastN = 64
		},
		"full T=1":            func(p *Policy) {},
		"full min_p":          func(p *Policy) { p.MinP = 0.05 },
		"full top_p":          func(p *Policy) { p.TopP = 0.9; p.LogitBias = map[int]float32{3: 2} },
		"logprobs 5":          func(p *Policy) { p.TopK = 40; p.Logprobs = ptr(5) },
		"full T=1 logprobs":   func(p *Policy) { p.Logprobs = ptr(3) },
		"full top_p logprobs": func(p *Policy) { p.Temperature = 0.7; p.TopP = 0.9; p.Logprobs = ptr(0) },
	}
	for name, edit := range policies {
		p := Defaults()
		p.Seed = ptr(uint64(1))
		edit(&p)
		s := mustNew(t, p, V)
		mustSample(t, s, l, history, 50) // warm-up allocates the buffers
		if a := testing.AllocsPerRun(20, func() { mustSample(t, s, l, history, 50) }); a != 0 {
			t.Errorf("%s: %v allocations per Sample", name, a)
		}
	}
}

// Histogram bins partition the weights into contiguous ranges, in key order.
func TestHistBins(t *testing.T) {
	r := newRNG(5)
	check := func(x uint64) {
		k := histKey(x)
		lo, hi := histRange(k)
		if x < lo || x >= hi {
			t.Fatalf("x=%d: key %d range [%d, %d)", x, k, lo, hi)
		}
	}
	for x := range uint64(5000) {
		check(x)
		if x > 0 && histKey(x) < histKey(x-1) {
			t.Fatalf("histKey not monotone at %d", x)
		}
	}
	for b := 1; b <= 63; b++ {
		for range 200 {
			check(uint64(1)<<(b-1) | r.next()&(uint64(1)<<(b-1)-1))
		}
	}
	prevHi := uint64(0)
	for k := range 1888 {
		lo, hi := histRange(k)
		if lo != prevHi || hi <= lo {
			t.Fatalf("bin %d is [%d, %d), previous ended at %d", k, lo, hi, prevHi)
		}
		prevHi = hi
	}
	if prevHi != 1<<63 {
		t.Fatalf("bins end at %d", prevHi)
	}
}

// Top-p whose cut falls among many light tokens just above the histogram's
// lower bound (one dominant token, a flat tail of total ≈ (1−p) of its
// weight): the sampler must still match the reference draw for draw.
func TestTopPCutNearHistMin(t *testing.T) {
	const V = 5000
	for _, topP := range []float32{0.5, 0.95, 0.999} {
		for _, f := range []float64{0.3, 0.9, 0.99, 1, 1.01, 1.1, 3, 30} {
			l := make([]float32, V)
			tail := float32(math.Log((1 - float64(topP)) / (V - 1) * f))
			for i := range l {
				l[i] = tail
			}
			l[V/2] = 0
			l[7] = tail + 0.25 // a slightly heavier tail token
			p := Defaults()
			p.TopP, p.Seed = topP, ptr(uint64(17))
			s := mustNew(t, p, V)
			ref := newRNG(17)
			for step := range 10 {
				want := refSample(p, l, nil, 0, &ref)
				if got := mustSample(t, s, l, nil, 0).ID; got != want {
					t.Fatalf("top_p %v f %v step %d: sampler %d, reference %d", topP, f, step, got, want)
				}
			}
		}
	}
}

// A repetition penalty below 1 can push l/r past MaxFloat32; the penalised
// logit saturates there instead of becoming +Inf (which would make every
// exponent NaN).
func TestPenaltyOverflowSaturates(t *testing.T) {
	const V = 64
	l := make([]float32, V)
	for i := range l {
		l[i] = float32(i % 7)
	}
	l[9] = 1e10
	for _, temp := range []float32{0, 1} {
		p := Defaults()
		p.Temperature, p.RepetitionPenalty, p.Seed = temp, 1e-30, ptr(uint64(1))
		s := mustNew(t, p, V)
		if got := mustSample(t, s, l, []int{9, 3}, 2).ID; got != 9 {
			t.Fatalf("T=%v: chose %d, want the saturated token 9", temp, got)
		}
	}
}
