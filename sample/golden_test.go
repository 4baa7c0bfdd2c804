package sample

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json")

// golden pins the exact output of the generator, of expDet, and of whole
// sampling runs for fixed seeds and logits. Logits come from integer
// arithmetic (testLogits) so the inputs are the same everywhere; a change to
// the PRNG, the exp, or the order of operations changes this file. Refresh
// deliberately with `go test ./sample -run Golden -update` (and bump Version
// if the meaning of a stored policy changed).
type golden struct {
	RNG  []uint64    `json:"rng_seed_42"`
	Exp  []goldenExp `json:"exp"`
	Runs []goldenRun `json:"runs"`
}

type goldenExp struct {
	X    float64 `json:"x"`
	Bits string  `json:"bits"`
}

type goldenRun struct {
	Name   string `json:"name"`
	Policy Policy `json:"policy"`
	IDs    []int  `json:"ids"`
}

func makeGolden(t *testing.T) golden {
	var g golden
	r := newRNG(42)
	for range 8 {
		g.RNG = append(g.RNG, r.next())
	}
	for _, x := range []float64{0, -1e-9, -0.5, -1, -2.302585092994046, -10.75, -37.1, -700} {
		g.Exp = append(g.Exp, goldenExp{x, formatBits(expDet(x))})
	}
	const V = 1000
	policies := []struct {
		name string
		edit func(*Policy)
	}{
		{"T=1", func(p *Policy) {}},
		{"greedy+penalties", func(p *Policy) { p.Temperature = 0; p.RepetitionPenalty = 1.3; p.FrequencyPenalty = 0.4 }},
		{"typical", func(p *Policy) {
			p.Temperature = 0.8
			p.TopK = 40
			p.TopP = 0.95
			p.RepetitionPenalty = 1.1
			p.RepeatLastN = 64
		}},
		{"top_p", func(p *Policy) { p.Temperature = 0.7; p.TopP = 0.9 }},
		{"min_p", func(p *Policy) { p.Temperature = 1.3; p.MinP = 0.05 }},
		{"penalties+bias", func(p *Policy) {
			p.Temperature = 1.5
			p.TopK = 100
			p.PresencePenalty = 0.6
			p.FrequencyPenalty = 0.3
			p.LogitBias = map[int]float32{7: 5, 500: -100}
		}},
	}
	for i, c := range policies {
		p := Defaults()
		p.Seed = ptr(uint64(1234 + i))
		c.edit(&p)
		s := mustNew(t, p, V)
		lr := newRNG(99)
		history := []int{1, 2, 3, 4, 5, 6, 7, 8}
		run := goldenRun{Name: c.name, Policy: p}
		for range 40 {
			id := mustSample(t, s, testLogits(&lr, V, 6), history, 8).ID
			run.IDs = append(run.IDs, id)
			history = append(history, id)
		}
		g.Runs = append(g.Runs, run)
	}
	return g
}

func formatBits(v float64) string { return fmt.Sprintf("%#016x", math.Float64bits(v)) }

func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "golden.json")
	got := makeGolden(t)
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	var want golden
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.RNG, want.RNG) {
		t.Errorf("xoshiro256** stream changed:\n got %v\nwant %v", got.RNG, want.RNG)
	}
	if !reflect.DeepEqual(got.Exp, want.Exp) {
		t.Errorf("expDet changed:\n got %v\nwant %v", got.Exp, want.Exp)
	}
	if len(got.Runs) != len(want.Runs) {
		t.Fatalf("%d runs, golden has %d", len(got.Runs), len(want.Runs))
	}
	for i := range got.Runs {
		g, w := got.Runs[i], want.Runs[i]
		if !reflect.DeepEqual(g.Policy, w.Policy) {
			t.Errorf("run %s: policy changed:\n got %+v\nwant %+v", g.Name, g.Policy, w.Policy)
		}
		if !reflect.DeepEqual(g.IDs, w.IDs) {
			t.Errorf("run %s: draws changed:\n got %v\nwant %v", g.Name, g.IDs, w.IDs)
		}
	}
}
