package model

import (
	"encoding/json"
	"math"
	"nanoserve/internal/testshared"
	"nanoserve/tensor"
	"os"
	"slices"
	"testing"
)

type lcppGolden struct {
	Model    string `json:"model"`
	GGUFFile string `json:"gguf_file"`
	Prompts  []struct {
		Prompt       string `json:"prompt"`
		PromptIDs    []int  `json:"prompt_ids"`
		GeneratedIDs []int  `json:"generated_ids"`
		Steps        []struct {
			ID      int         `json:"id"`
			Logprob float64     `json:"logprob"`
			Top     [][]float64 `json:"top"`
			RefF64  *float64    `json:"ref_f64_logprob"`
			// RefF64Dequant: the float64 pass on the file's own
			// dequantized weights (gguf-archs MXFP4 goldens).
			RefF64Dequant *float64 `json:"ref_f64_dequant_logprob"`
		} `json:"steps"`
	} `json:"prompts"`
}

func readLcppGolden(t *testing.T, path string) *lcppGolden {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g lcppGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &g
}

// checkLcppGolden feeds each prompt's ids and generated ids (one prefill)
// and checks every step's top-10 log-probabilities (by id, within tol) and
// the greedy ids. With tok it also checks the tokenizer's prompt ids.
// checkLcppGolden feeds each prompt and llama.cpp's generated ids and
// compares every step's top-10 logprobs (by id) within tol; greedy also
// requires our argmax to equal llama.cpp's choice at every step.
func checkLcppGolden(t *testing.T, m *Model, g *lcppGolden, tol float64, tok, greedy bool) {
	t.Helper()
	checkLcppGoldenChunked(t, m, g, tol, tok, greedy, 0)
}

// checkLcppGoldenChunked is checkLcppGolden feeding the tokens chunk at a
// time through the cache (0: one prefill; 1: the decode path, one token per
// Forward, as generation runs).
func checkLcppGoldenChunked(t *testing.T, m *Model, g *lcppGolden, tol float64, tok, greedy bool, chunk int) {
	t.Helper()
	checkLcppGoldenKV(t, m, g, tol, tok, greedy, chunk, tensor.F32)
}

// checkLcppGoldenKV is checkLcppGoldenChunked over a KV cache of type kv,
// and returns the worst top-10 logprob difference.
func checkLcppGoldenKV(t *testing.T, m *Model, g *lcppGolden, tol float64, tok, greedy bool, chunk int, kv tensor.DType) float64 {
	t.Helper()
	worst := 0.0
	for k, p := range g.Prompts {
		if tok && m.Tokenizer != nil {
			ids := m.Tokenizer.Encode(p.Prompt, false)
			if bos, ok := m.Tokenizer.BOS(); ok && m.Tokenizer.AddBOS() {
				ids = append([]int{bos}, ids...)
			}
			if !slices.Equal(ids, p.PromptIDs) {
				t.Errorf("prompt %d %q: tokenizer gives %v, llama.cpp %v", k, p.Prompt, ids, p.PromptIDs)
			}
		}
		toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
		logits := runSeqKV(t, m, toks, chunk, kv)
		P := len(p.PromptIDs)
		for j, s := range p.Steps {
			lg := logits[(P-1+j)*m.Vocab : (P+j)*m.Vocab]
			if got := testshared.Argmax(lg); greedy && (got != p.GeneratedIDs[j] || got != s.ID) {
				t.Errorf("prompt %d step %d: greedy %d, llama.cpp %d", k, j, got, s.ID)
			}
			lp := testshared.LogSoftmax(lg)
			for _, e := range s.Top {
				id := int(e[0])
				d := math.Abs(lp[id] - e[1])
				worst = max(worst, d)
				if d > tol {
					t.Errorf("prompt %d step %d id %d: logprob %.4f, llama.cpp %.4f", k, j, id, lp[id], e[1])
				}
			}
		}
	}
	t.Logf("%s, %s KV cache: worst top-10 logprob difference %.4f", g.Model, kv, worst)
	return worst
}

var ggufModels = []string{"llama_gqa", "qwen2", "gpt2"}

func TestGGUFGoldens(t *testing.T) {
	for _, name := range ggufModels {
		t.Run(name, func(t *testing.T) {
			g := readLcppGolden(t, testshared.Path(t, "testdata/gguf/"+name+"/"+name+"-F16.json"))
			m := mustLoad(t, testshared.Path(t, "testdata/gguf/"+name+"/"+g.GGUFFile), Options{Threads: 2})
			checkLcppGolden(t, m, g, 0.05, true, true)
		})
	}
}

func TestCacheParityGGUF(t *testing.T) {
	for _, name := range ggufModels {
		t.Run(name, func(t *testing.T) {
			g := readLcppGolden(t, testshared.Path(t, "testdata/gguf/"+name+"/"+name+"-F16.json"))
			m := mustLoad(t, testshared.Path(t, "testdata/gguf/"+name+"/"+g.GGUFFile), Options{Threads: 2})
			p := g.Prompts[0]
			toks := append(slices.Clone(p.PromptIDs), p.GeneratedIDs...)
			checkCacheParity(t, m, toks, 1e-4)
			if name == "gpt2" || name == "qwen2" {
				q := g.Prompts[len(g.Prompts)-1]
				checkBatched(t, m, toks, q.PromptIDs, 1e-4)
			}
		})
	}
}

func TestGGUFConfig(t *testing.T) {
	want := map[string]Config{
		"llama_gqa": {Arch: ArchLlama, Dim: 128, HiddenDim: 352, Layers: 3, Heads: 8, KVHeads: 2, HeadDim: 16, Vocab: 32000, RopeDim: 16},
		"qwen2":     {Arch: ArchQwen2, Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 151669, RopeDim: 16, RopeNeox: true, Tied: true},
		"gpt2":      {Arch: ArchGPT2, Dim: 128, HiddenDim: 512, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 32, Vocab: 50257, Tied: true, ContextLen: 256},
	}
	for _, name := range ggufModels {
		m := mustLoad(t, testshared.Path(t, "testdata/gguf/"+name+"/"+name+"-F16.gguf"), Options{})
		w := want[name]
		c := m.Config
		if c.Arch != w.Arch || c.Dim != w.Dim || c.HiddenDim != w.HiddenDim || c.Layers != w.Layers || c.Heads != w.Heads ||
			c.KVHeads != w.KVHeads || c.HeadDim != w.HeadDim || c.Vocab != w.Vocab || c.RopeDim != w.RopeDim ||
			c.RopeNeox != w.RopeNeox || c.Tied != w.Tied || (w.ContextLen != 0 && c.ContextLen != w.ContextLen) {
			t.Errorf("%s: config %+v", name, c)
		}
		if m.Tokenizer == nil || m.Tokenizer.Size() != c.Vocab && name != "qwen2" {
			t.Errorf("%s: tokenizer %v", name, m.Tokenizer)
		}
		if len(m.Gen.EOG) == 0 {
			t.Errorf("%s: no end-of-generation ids", name)
		}
	}
}

// TestGGUFQuantized loads the quantized goldens' files (Q8_0, Q5_0/Q5_1,
// Q4_K, Q5_K, Q6_K tensors) and checks each prompt's first step against
// llama.cpp's log-probabilities (llama.cpp also quantizes activations, so
// the tolerance is the README's measured agreement).
func TestGGUFQuantized(t *testing.T) {
	for _, tc := range []struct {
		model, quant string
		tol          float64 // the bounds: 0.5 for llama_gqa's files, 1.0 for llama_k's K-quants
	}{
		{"llama_gqa", "Q8_0", 0.5}, {"llama_gqa", "Q4_K_M", 0.5}, {"llama_gqa", "Q4_K_S", 0.5},
		{"llama_k", "Q4_K_M", 1.0}, {"llama_k", "Q4_K_S", 1.0},
	} {
		t.Run(tc.model+"-"+tc.quant, func(t *testing.T) {
			g := readLcppGolden(t, testshared.Path(t, "testdata/gguf/"+tc.model+"/"+tc.model+"-"+tc.quant+".json"))
			m := mustLoad(t, testshared.Path(t, "testdata/gguf/"+tc.model+"/"+g.GGUFFile), Options{Threads: 2})
			// Quantized greedy ids may diverge where gaps are small; every
			// step's log-probabilities must stay within the bound.
			checkLcppGolden(t, m, g, tc.tol, true, false)
		})
	}
}

// TestGGUFQuantizedDecode checks the quantized decode kernels against
// llama.cpp at model level: the golden tokens go through Forward one at a
// time (the single-token kernels generation uses, which a one-prefill
// comparison never runs), and every step's top-10 log-probabilities must be
// within the same bounds as TestGGUFQuantized.
func TestGGUFQuantizedDecode(t *testing.T) {
	for _, tc := range []struct {
		model, quant string
		tol          float64
	}{
		{"llama_gqa", "Q8_0", 0.5}, {"llama_gqa", "Q4_K_M", 0.5}, {"llama_gqa", "Q4_K_S", 0.5},
		{"llama_k", "Q4_K_M", 1.0}, {"llama_k", "Q4_K_S", 1.0},
	} {
		t.Run(tc.model+"-"+tc.quant, func(t *testing.T) {
			g := readLcppGolden(t, testshared.Path(t, "testdata/gguf/"+tc.model+"/"+tc.model+"-"+tc.quant+".json"))
			m := mustLoad(t, testshared.Path(t, "testdata/gguf/"+tc.model+"/"+g.GGUFFile), Options{Threads: 2})
			checkLcppGoldenChunked(t, m, g, tc.tol, false, false, 1)
		})
	}
}
