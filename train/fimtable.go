package train

// fim-eval's table: four systems fill the same held-out gaps.

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"nanoserve/llamacpp"
	"nanoserve/tokenizer"
)

// FIMComparison is `nanoserve fim-eval`: on cases drawn from a training
// run's held-out split, the FIM model with the suffix (a) and left to
// right (b), another model left to right (c) and the KN trigram over the
// first KNTokens training tokens (d), each scored by EvalFIM.
type FIMComparison struct {
	Model, Other string // the FIM model; the model (c) completes with
	Corpus, Exts []string
	HeldOut      float64 // the training run's split
	Seed         uint64
	Cases        int
	CaseSeed     uint64
	KNTokens     int
	Threads      int
	SPM          bool // (a) lays the prompt out suffix first (else the model's own layout)
	Record       bool // store the table in Model's manifest (RecordFIMEval)
	// Prompts, if set, is given the cases instead of evaluating them
	// (fim-eval --write-prompts).
	Prompts func(cases []FIMCase, tk *tokenizer.Tokenizer) error
	Out     io.Writer // the table, a row as each system finishes
	Log     io.Writer // case counts and times
}

// Run draws the cases, loads the models and writes the table to Out.
func (fc FIMComparison) Run() error {
	c, err := LoadCorpus(fc.Corpus, fc.Exts, fc.HeldOut, fc.Seed)
	if err != nil {
		return err
	}
	cases := FIMCases(c.HeldOut, fc.Cases, fc.CaseSeed)
	fmt.Fprintf(fc.Log, "%d cases from %d held-out files\n", len(cases), len(c.HeldOut))
	g, err := LoadGreedy(fc.Model, fc.Threads)
	if err != nil {
		return err
	}
	g.SPM = llamacpp.SuffixFirst(g.Tok, fc.SPM) // the layout the model reads (its own, or the flag's)
	closeG := sync.OnceFunc(g.Close)
	defer closeG()
	if err := llamacpp.CheckFIM(g.Tok); err != nil {
		return fmt.Errorf("%s: %w", fc.Model, err)
	}
	if fc.Prompts != nil {
		return fc.Prompts(cases, g.Tok)
	}
	o, err := LoadGreedy(fc.Other, fc.Threads)
	if err != nil {
		return err
	}
	defer o.Close()
	table, err := fc.table(cases, g, o, c)
	if err != nil {
		return err
	}
	if fc.Record {
		closeG() // the rewrite replaces the file the model was mapped from
		if err := RecordFIMEval(fc.Model, table); err != nil {
			return err
		}
		fmt.Fprintf(fc.Log, "recorded in %s (%s)\n", fc.Model, KeyFIMEval)
	}
	return nil
}

// table scores the four systems on cases and returns the table (Markdown,
// with a heading line) that it wrote to Out.
func (fc FIMComparison) table(cases []FIMCase, g, other *Greedy, c *Corpus) (string, error) {
	var trainToks []int32
	for _, d := range c.Train {
		for _, id := range g.Tok.Encode(d.Text, false) {
			trainToks = append(trainToks, int32(id))
		}
		if len(trainToks) >= fc.KNTokens {
			break
		}
	}
	kn := NewKN3(trainToks, g.Tok.Size())
	systems := []struct {
		name string
		f    Completer
	}{
		{fmt.Sprintf("(a) FIM model, with suffix (%s)", map[bool]string{false: "PSM", true: "SPM"}[g.SPM]), g.WithSuffix},
		{"(b) FIM model, left to right", g.LeftToRight},
		{"(c) " + fc.Other + ", left to right", other.LeftToRight},
		{fmt.Sprintf("(d) KN trigram (%d train tokens), left to right", len(trainToks)), KNCompleter(kn, g.Tok)},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%d cases (case seed %d) from %d held-out files, greedy; exact match and character similarity\n",
		len(cases), fc.CaseSeed, len(c.HeldOut))
	fmt.Fprintf(&table, "| system | line exact | line similarity | block exact | block similarity |\n|---|---|---|---|---|\n")
	fmt.Fprint(fc.Out, table.String())
	for _, s := range systems {
		t0 := time.Now()
		r, err := EvalFIM(cases, s.f)
		if err != nil {
			return "", err
		}
		l, b := r["line"], r["block"]
		row := fmt.Sprintf("| %s | %.3f | %.3f | %.3f | %.3f |\n", s.name, l.Exact, l.Sim, b.Exact, b.Sim)
		table.WriteString(row)
		fmt.Fprint(fc.Out, row)
		fmt.Fprintf(fc.Log, "%s: %d line + %d block cases in %v\n", s.name, l.N, b.N, time.Since(t0).Round(time.Second))
	}
	return table.String(), nil
}
