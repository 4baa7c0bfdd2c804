package defaultmodel

import (
	"context"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"nanoserve/engine"
	"nanoserve/internal/cli"
	"nanoserve/model"
	"nanoserve/sample"
)

func penalties(p sample.Policy, pp, f float32) sample.Policy {
	p.PresencePenalty, p.FrequencyPenalty = pp, f
	return p
}

// TestBuiltinPolicyTable measures the built-in model's candidate
// completion policies on 200 held-out Go lines (the table in
// policy.go): every statement-starting line of the held-out files
// (defaultmodel/testdata/heldout.json) after the first 200 bytes, cut
// after its indentation, prompted with the 1500 bytes before (token
// healing on), 200 of them evenly spaced; the completion's first line
// replaces the true line. Columns: the file still parses (go/parser),
// exact line, character similarity (1 − Levenshtein / longer length).
// About two minutes on one core, so it runs only with
// NANOSERVE_POLICY_TABLE=1.
func TestBuiltinPolicyTable(t *testing.T) {
	if os.Getenv("NANOSERVE_POLICY_TABLE") == "" {
		t.Skip("set NANOSERVE_POLICY_TABLE=1 to measure (about two minutes)")
	}
	p, err := Path()
	if err != nil {
		t.Skip("no built-in model in this build")
	}
	m, err := model.Load(p, model.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, err := engine.New(m, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var d struct {
		Docs []struct{ Name, Text string }
	}
	b, err := os.ReadFile("testdata/heldout.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	type cut struct{ pre, line, rest, full string }
	var all []cut
	for _, doc := range d.Docs {
		if _, err := parser.ParseFile(token.NewFileSet(), "", doc.Text, 0); err != nil {
			continue
		}
		off := 0
		for _, ln := range strings.SplitAfter(doc.Text, "\n") {
			body := strings.TrimLeft(ln, "\t")
			ind := len(ln) - len(body)
			s := strings.TrimSpace(body)
			if ind >= 1 && s != "" && !strings.HasPrefix(s, "}") && !strings.HasPrefix(s, "//") && !strings.HasPrefix(s, "case") && !strings.HasPrefix(s, "default") && off > 200 {
				all = append(all, cut{doc.Text[max(0, off+ind-1500) : off+ind], strings.TrimRight(body, "\n"), doc.Text[off+len(ln):], doc.Text[:off+ind]})
			}
			off += len(ln)
		}
	}
	if len(all) < 200 {
		t.Fatalf("%d cut points, want at least 200", len(all))
	}
	step := len(all) / 200
	var cases []cut
	for i := 0; i < 200; i++ {
		cases = append(cases, all[i*step])
	}
	mk := func(temp, rp float32, n int) sample.Policy {
		p := sample.Greedy()
		p.Temperature = temp
		p.RepetitionPenalty = rp
		p.RepeatLastN = n
		p.MaxTokens = 40
		s := uint64(7)
		p.Seed = &s
		return p
	}
	pols := []struct {
		name string
		p    sample.Policy
	}{
		{"greedy, frequency penalty 0.6 (default)", builtinDefaultsMax(40)},
		{"greedy, frequency penalty 0.3", penalties(mk(0, 1, 0), 0, 0.3)},
		{"greedy, presence penalty 0.6", penalties(mk(0, 1, 0), 0.6, 0)},
		{"greedy", mk(0, 1, 0)},
		{"greedy, repetition penalty 1.1/64", mk(0, 1.1, 64)},
		{"greedy, repetition penalty 1.2/64", mk(0, 1.2, 64)},
		{"T = 0.2, repetition penalty 1.2/64", mk(0.2, 1.2, 64)},
		{"T = 1", mk(1, 1, 0)},
	}
	t.Log("| policy | parses with the rest of the file | line exact | line similarity |")
	t.Log("|---|---|---|---|")
	best := -1 // the default's parse count (the first row)
	for _, pc := range pols {
		var parse, exact int
		var sim float64
		for _, c := range cases {
			p := pc.p
			res, err := e.Generate(context.Background(), engine.Request{Prompt: c.pre, Policy: p, TokenHealing: true})
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := strings.Cut(res.Text, "\n")
			if got == c.line {
				exact++
			}
			if m := max(len(got), len(c.line)); m > 0 {
				sim += 1 - float64(cli.EditDistance(got, c.line))/float64(m)
			} else {
				sim++
			}
			if _, err := parser.ParseFile(token.NewFileSet(), "", c.full+got+"\n"+c.rest, 0); err == nil {
				parse++
			}
		}
		n := float64(len(cases))
		t.Logf("| %s | %.3f | %.3f | %.3f |", pc.name, float64(parse)/n, float64(exact)/n, sim/n)
		if best < 0 {
			best = parse
		} else if parse > best {
			t.Errorf("%s parses %d of %d, more than the default's %d", pc.name, parse, len(cases), best)
		}
	}
}

// builtinDefaultsMax is the built-in policy with at most n tokens.
func builtinDefaultsMax(n int) sample.Policy {
	p := Policy()
	p.MaxTokens = n
	return p
}
