package grammar

import (
	"math/bits"
	"math/rand/v2"
	"sync"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/tokenizer"
)

// testVocab is a real model vocabulary for the grammar tests.
type testVocab struct {
	name string
	v    *Vocab
	eog  []int
	toks [][]byte
}

var (
	vocabOnce  [2]sync.Once
	vocabCache [2]*testVocab
	vocabErr   [2]error
)

// realVocab loads Llama-2 SentencePiece (which=0) or Qwen3 (which=1).
func realVocab(t testing.TB, which int) *testVocab {
	t.Helper()
	paths := []string{"models/llama2c/llama2-tokenizer.model", "testdata/tokenizers/hf_qwen3/tokenizer.json"}
	path := testshared.Path(t, paths[which])
	vocabOnce[which].Do(func() {
		tk, err := tokenizer.Load(path)
		if err != nil {
			vocabErr[which] = err
			return
		}
		n := tk.Size()
		toks := make([][]byte, n)
		special := make([]bool, n)
		for id := 0; id < n; id++ {
			toks[id] = []byte(tk.Piece(id))
			switch tk.TokenType(id) {
			case tokenizer.TypeControl, tokenizer.TypeUnknown, tokenizer.TypeUnused:
				special[id] = true
			}
		}
		eog := tk.EOG()
		v, err := NewVocab(toks, special, eog)
		vocabCache[which] = &testVocab{name: []string{"llama2", "qwen3"}[which], v: v, eog: eog, toks: toks}
		vocabErr[which] = err
	})
	if vocabErr[which] != nil {
		t.Fatal(vocabErr[which])
	}
	return vocabCache[which]
}

// walk generates one output under c: uniform among allowed tokens
// (greedy=false) or the allowed token with the best fixed random score
// (greedy=true, a stand-in for a model's argmax). It fails the test on an
// empty mask, a rejected token, or a budget that runs out before the
// output is complete.
func walk(t testing.TB, c *Constraint, tv *testVocab, maxTokens int, rng *rand.Rand, greedy bool) []byte {
	t.Helper()
	m, err := c.NewMatcher(maxTokens)
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]uint64, tv.v.MaskWords())
	var score []float64
	if greedy {
		score = make([]float64, tv.v.Size())
		for i := range score {
			score[i] = rng.Float64()
		}
	}
	var out []byte
	for steps := 0; ; steps++ {
		if m.Remaining() == 0 || steps > 5000 {
			if !m.Accepting() {
				t.Fatalf("budget %d spent before the output is complete: %q", maxTokens, out)
			}
			return out
		}
		n := mustMask(t, m, mask)
		if n == 0 {
			t.Fatalf("empty mask after %q", out)
		}
		for _, e := range tv.eog {
			if got := mask[e>>6]>>(e&63)&1 != 0; got != m.Accepting() {
				t.Fatalf("after %q: end-of-generation %d allowed=%v but accepting=%v", out, e, got, m.Accepting())
			}
		}
		id := pick(mask, n, rng, score)
		if err := m.Accept(id); err != nil {
			t.Fatalf("Accept(%d) after %q: %v", id, out, err)
		}
		if m.Ended() {
			return out
		}
		out = append(out, tv.toks[id]...)
	}
}

func pick(mask []uint64, n int, rng *rand.Rand, score []float64) int {
	if score != nil {
		best, bestS := -1, -1.0
		for w, x := range mask {
			for x != 0 {
				b := w*64 + trailing(x)
				x &= x - 1
				if score[b] > bestS {
					best, bestS = b, score[b]
				}
			}
		}
		return best
	}
	k := rng.IntN(n)
	for w, x := range mask {
		for x != 0 {
			if k == 0 {
				return w*64 + trailing(x)
			}
			k--
			x &= x - 1
		}
	}
	panic("pick: count mismatch")
}

func trailing(x uint64) int { return bits.TrailingZeros64(x) }

// mustMask is Mask failing the test on an error.
func mustMask(t testing.TB, m *Matcher, mask []uint64) int {
	t.Helper()
	n, err := m.Mask(mask)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
