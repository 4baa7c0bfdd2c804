package convert

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"nanoserve/gguf"
	"nanoserve/internal/testshared"
	"nanoserve/kvcache"
	"nanoserve/model"
)

// hfFixtures returns the folder holding fixturegen's llama_gqa, qwen2 and
// gpt2 Hugging Face directories.
func hfFixtures(t testing.TB) string {
	t.Helper()
	return testshared.Fixture(t, "hf")
}

// llamaKFixture returns fixturegen's llama_k Hugging Face directory.
func llamaKFixture(t testing.TB) string {
	t.Helper()
	return filepath.Join(testshared.Fixture(t, "hf-llama_k"), "llama_k")
}

func mustConvert(t testing.TB, in, out string, opts Options) string {
	t.Helper()
	if err := Convert(in, out, opts); err != nil {
		t.Fatalf("Convert(%s, %s, %+v): %v", filepath.Base(in), filepath.Base(out), opts, err)
	}
	return out
}

func mustLoad(t testing.TB, path string, opts model.Options) *model.Model {
	t.Helper()
	if opts.Threads == 0 {
		opts.Threads = 1
	}
	m, err := model.Load(path, opts)
	if err != nil {
		t.Fatalf("model.Load(%s): %v", path, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// logits runs tokens through m in one batch with a fresh cache and returns
// every position's logits (len(tokens), vocab).
func logits(t testing.TB, m *model.Model, tokens []int) []float32 {
	t.Helper()
	c, err := m.NewCache(len(tokens))
	if err != nil {
		t.Fatal(err)
	}
	s := &kvcache.Seq{}
	if err := c.Reserve(s, len(tokens)); err != nil {
		t.Fatal(err)
	}
	b := model.Batch{Tokens: tokens}
	for p := range tokens {
		b.Pos = append(b.Pos, p)
		b.Seq = append(b.Seq, s)
		b.Output = append(b.Output, true)
	}
	out, err := m.Forward(b, c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeLogits feeds tokens one at a time through the cache.
func decodeLogits(t testing.TB, m *model.Model, tokens []int) []float32 {
	t.Helper()
	c, err := m.NewCache(len(tokens))
	if err != nil {
		t.Fatal(err)
	}
	s := &kvcache.Seq{}
	var out []float32
	for p, tok := range tokens {
		if err := c.Reserve(s, 1); err != nil {
			t.Fatal(err)
		}
		lg, err := m.Forward(model.Batch{Tokens: []int{tok}, Pos: []int{p}, Seq: []*kvcache.Seq{s}, Output: []bool{true}}, c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, lg...)
	}
	return out
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		e := math.Abs(float64(a[i]) - float64(b[i]))
		if e > d || math.IsNaN(e) {
			d = e
		}
	}
	return d
}

// golden is a llama.cpp golden file (testdata/gguf/<model>/<model>-<Q>.json).
type golden struct {
	Prompts []struct {
		Prompt       string `json:"prompt"`
		PromptIDs    []int  `json:"prompt_ids"`
		GeneratedIDs []int  `json:"generated_ids"`
		Steps        []struct {
			ID  int         `json:"id"`
			Top [][]float64 `json:"top"`
		} `json:"steps"`
	} `json:"prompts"`
}

func readGolden(t testing.TB, rel string) *golden {
	t.Helper()
	b, err := os.ReadFile(testshared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return &g
}

// checkGreedy feeds each golden prompt plus its generated ids through m and
// requires the argmax after every position to be the golden's next id
// (equivalent to greedy decoding when all match). With tol ≥ 0 it also
// compares the top-10 log-probabilities by id within tol and reports the
// largest difference instead of requiring exact ids.
func checkGreedy(t *testing.T, m *model.Model, g *golden, tol float64) {
	t.Helper()
	worst := 0.0
	for i, p := range g.Prompts {
		seq := append(append([]int(nil), p.PromptIDs...), p.GeneratedIDs...)
		lg := logits(t, m, seq[:len(seq)-1])
		V := m.Vocab
		n0 := len(p.PromptIDs) - 1
		for k, want := range p.GeneratedIDs {
			row := lg[(n0+k)*V : (n0+k+1)*V]
			if tol < 0 {
				if got := testshared.Argmax(row); got != want {
					t.Errorf("prompt %d %q step %d: argmax %d, golden %d", i, p.Prompt, k, got, want)
					break
				}
				continue
			}
			lp := testshared.LogSoftmax(row)
			for _, top := range p.Steps[k].Top {
				d := math.Abs(lp[int(top[0])] - top[1])
				worst = math.Max(worst, d)
				if d > tol {
					t.Errorf("prompt %d step %d id %d: logprob %.4f, golden %.4f", i, k, int(top[0]), lp[int(top[0])], top[1])
				}
			}
		}
	}
	if tol >= 0 {
		t.Logf("max top-10 logprob difference vs llama.cpp: %.4f (tolerance %.2f)", worst, tol)
	}
}

// openGGUF opens a GGUF file for the rest of the test (closed on cleanup).
func openGGUF(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// sameTensors requires two GGUF files to hold the same tensors (names,
// types, dims and bytes), in any order.
func sameTensors(t *testing.T, want, got string) {
	t.Helper()
	a, b := openGGUF(t, want), openGGUF(t, got)
	if len(a.Tensors) != len(b.Tensors) {
		t.Errorf("%s has %d tensors, %s %d", filepath.Base(want), len(a.Tensors), filepath.Base(got), len(b.Tensors))
	}
	for _, ta := range a.Tensors {
		tb, ok := b.Tensor(ta.Name)
		switch {
		case !ok:
			t.Errorf("%s: tensor %s missing", filepath.Base(got), ta.Name)
		case ta.Type != tb.Type || !equalDims(ta.Dims, tb.Dims):
			t.Errorf("tensor %s: %s %v, want %s %v", ta.Name, tb.Type, tb.Dims, ta.Type, ta.Dims)
		case !bytes.Equal(ta.Data, tb.Data):
			n := 0
			for i := range ta.Data {
				if ta.Data[i] != tb.Data[i] {
					n++
				}
			}
			t.Errorf("tensor %s (%s): %d of %d bytes differ", ta.Name, ta.Type, n, len(ta.Data))
		}
	}
}

func equalDims(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
