package train

// fim-eval's table: four systems fill the same held-out gaps.

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// FIMComparison is `nanoserve fim-eval`: the FIM model with the suffix
// (a) and left to right (b), another model left to right (c) and the KN
// trigram over the first KNTokens training tokens (d), each scored on the
// same cases (EvalFIM).
type FIMComparison struct {
	FIM, Other   *Greedy
	OtherName    string // (c)'s name in the table
	Train        []Doc  // the trigram's training documents (tokenized with FIM's tokenizer)
	KNTokens     int
	CaseSeed     uint64    // named in the table's heading
	HeldOutFiles int       // named in the table's heading
	Out          io.Writer // the table, a row as each system finishes
	Log          io.Writer // each system's case counts and time
}

// Run scores the systems on cases and returns the table (Markdown, with a
// heading line) that it wrote to Out.
func (fc FIMComparison) Run(cases []FIMCase) (string, error) {
	g := fc.FIM
	var trainToks []int32
	for _, d := range fc.Train {
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
		{"(c) " + fc.OtherName + ", left to right", fc.Other.LeftToRight},
		{fmt.Sprintf("(d) KN trigram (%d train tokens), left to right", len(trainToks)), KNCompleter(kn, g.Tok)},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%d cases (case seed %d) from %d held-out files, greedy; exact match and character similarity\n",
		len(cases), fc.CaseSeed, fc.HeldOutFiles)
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
