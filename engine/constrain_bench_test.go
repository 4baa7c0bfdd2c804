package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"nanoserve/internal/testshared"
	"nanoserve/model"
	"nanoserve/sample"
)

const benchSchema = `{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"name":{"type":"string","maxLength":40},
"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"type":"string","maxLength":12},"maxItems":5},
"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},"kind":{"enum":["home","work"]}},"required":["street","city"]},
"parent":{"$ref":"#/$defs/node"}},"required":["id","name","age","tags","address"],"additionalProperties":false,
"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["v"]}}}`

// benchConstrained measures end-to-end decode tokens/s of one greedy
// request of the schema's shortest output plus extra tokens, unconstrained and under benchSchema (warm: the
// constraint is compiled and its masks cached by a first run).
func benchConstrained(b *testing.B, e *Engine, extra int) {
	c, err := e.Constraint(context.Background(), ConstraintJSONSchema, benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	n := c.MinTokens() + extra
	pol := sample.Greedy()
	pol.MaxTokens = n
	run := func(constrained bool) float64 {
		req := Request{Prompt: "{", Policy: pol}
		if constrained {
			req.Processors = func() []LogitsProcessor {
				p, err := GrammarProcessor(c, n, nil)
				if err != nil {
					b.Fatal(err)
				}
				return []LogitsProcessor{p}
			}
		}
		res, err := e.Generate(context.Background(), req)
		if err != nil || res.Err != nil {
			b.Fatal(err, res.Err)
		}
		return res.Timings.DecodeTokS
	}
	run(true) // warm the mask cache
	var free, cons float64
	for i := 0; i < b.N; i++ {
		free += run(false)
		cons += run(true)
	}
	b.ReportMetric(free/float64(b.N), "free-tok/s")
	b.ReportMetric(cons/float64(b.N), "json-tok/s")
	b.ReportMetric(cons/free, "ratio")
}

func testSharedDir(b *testing.B) string { return testshared.Dir(b) }

// The shared random-weight Llama (dim 128, 32k vocabulary): a decode step
// is tiny, so this is the worst case for the mask's share.
func BenchmarkConstrainedTinyGQA(b *testing.B) {
	m, err := model.Load(filepath.Join(testSharedDir(b), "testdata/gguf/llama_gqa/llama_gqa-Q8_0.gguf"), model.Options{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	e, err := New(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	benchConstrained(b, e, 40)
}

// The TinyLlama-shaped synthetic Q4_K_M model (write it with `nanoserve
// bench --synthetic tinyllama --type q4_k_m`).
func BenchmarkConstrainedTinyLlamaQ4KM(b *testing.B) {
	p := filepath.Join(os.TempDir(), "nanoserve-bench", "tinyllama-1.1b-q4_k_m-1.gguf")
	if _, err := os.Stat(p); err != nil {
		b.Skip("synthetic TinyLlama Q4_K_M not written")
	}
	m, err := model.Load(p, model.Options{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	e, err := New(m, Options{CtxSize: 512})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	benchConstrained(b, e, 20)
}
