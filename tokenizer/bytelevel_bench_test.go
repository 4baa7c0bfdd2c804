package tokenizer

import (
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"testing"
)

// Benchmarks report wall time (ns/op, MB/s) and, where the OS tells, CPU
// time of the whole process (cpu-ms/op, cpu-MB/s): on an oversubscribed
// machine the latter is the fairer single-core figure.

// BenchmarkLoadLlama3JSON loads the 9 MB Llama-3 tokenizer.json (goal: < 300 ms).
func BenchmarkLoadLlama3JSON(b *testing.B) {
	p := filepath.Join(testshared.Dir(b), llama3JSON)
	c0 := processCPUTime()
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
	if c := processCPUTime() - c0; c > 0 {
		b.ReportMetric(float64(c.Milliseconds())/float64(b.N), "cpu-ms/op")
	}
}

func benchEncodeShakespeare(b *testing.B, rel string) {
	tk := blTokenizer(b, rel)
	data, err := os.ReadFile(filepath.Join(testshared.Dir(b), "corpus/tinyshakespeare.txt"))
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	b.SetBytes(int64(len(text)))
	c0 := processCPUTime()
	for b.Loop() {
		tk.Encode(text, false)
	}
	if c := processCPUTime() - c0; c > 0 {
		b.ReportMetric(float64(len(text))*float64(b.N)/c.Seconds()/1e6, "cpu-MB/s")
	}
}

// BenchmarkEncodeLlama3Shakespeare encodes tinyshakespeare (goal: >= 10 MB/s).
func BenchmarkEncodeLlama3Shakespeare(b *testing.B) { benchEncodeShakespeare(b, llama3JSON) }
func BenchmarkEncodeQwen3Shakespeare(b *testing.B)  { benchEncodeShakespeare(b, qwen3JSON) }
func BenchmarkEncodeGPT2Shakespeare(b *testing.B)   { benchEncodeShakespeare(b, gpt2Dir) }
