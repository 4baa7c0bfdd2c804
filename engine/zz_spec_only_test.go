package engine

import (
	"os"
	"path/filepath"
	"testing"

	"nanoserve/defaultmodel"
	"nanoserve/model"
	"nanoserve/sample"
)

func BenchmarkZZSpecOnly(b *testing.B) {
	p, _ := defaultmodel.Path()
	if e := os.Getenv("MODEL"); e != "" {
		p = e
	}
	m, err := model.Load(p, model.Options{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	var reqs []Request
	for _, f := range []string{"stack_edit.txt", "sum_edit.txt", "table_edit.txt"} {
		text, _ := os.ReadFile(filepath.Join("testdata", "spec", f))
		reqs = append(reqs, Request{Prompt: string(text), Policy: withMax(sample.Greedy(), 256), TokenHealing: true})
	}
	mode := SpecNgram
	if os.Getenv("PLAIN") != "" {
		mode = ""
	}
	sp, _ := New(m, Options{Spec: SpecOptions{Mode: mode}})
	defer sp.Close()
	for b.Loop() {
		for _, r := range reqs {
			generate(b, sp, r)
		}
	}
}
