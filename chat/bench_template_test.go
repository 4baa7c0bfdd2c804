//go:build unix

package chat

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time this process has used (user + system, all
// threads, so garbage collection is counted). On a shared machine it
// measures the work of a render where wall time also counts the waits.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRenderLargest renders the tool round trip of testdata/cases.json
// (tools, an assistant tool call, a tool result) through the largest real
// templates of the llama.cpp collection. cpu-ns/op is the process CPU time
// per render, steadier than ns/op when other processes share the cores.
//
//	go test ./chat -run '^$' -bench RenderLargest -benchtime 200x
func BenchmarkRenderLargest(b *testing.B) {
	cf := loadCases(b)
	var c caseSpec
	for _, cs := range cf.Cases {
		if cs.Name == "tools_roundtrip" {
			c = cs
		}
	}
	var tools []any
	for _, t := range c.Tools {
		tools = append(tools, t)
	}
	for _, name := range []string{"openai-gpt-oss-120b", "google-gemma-4-31B-it", "Kimi-K3", "Qwen3.5-4B"} {
		src, err := os.ReadFile(filepath.Join("testdata/templates/llamacpp", name+".jinja"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			tmpl, err := Parse(string(src))
			if err != nil {
				b.Fatal(err)
			}
			opt := Options{BOS: "<s>", EOS: "</s>", AddGenerationPrompt: true, Tools: tools,
				Now: func() time.Time { return time.Date(2025, 3, 9, 14, 5, 6, 0, time.UTC) }}
			out, err := tmpl.Render(c.Messages, opt)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := tmpl.Render(c.Messages, opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
