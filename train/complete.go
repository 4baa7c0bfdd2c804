package train

// One gap filled at an editor's cursor (`nanoserve complete`).

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"nanoserve/llamacpp"
)

// Complete fills the gap between prefix and suffix greedily with the FIM
// prompt /infill builds (suffix first when g.SPM): at most maxTokens,
// and at most half the context. With line it stops at the end of the
// line and returns the text before it.
func (g *Greedy) Complete(prefix, suffix string, maxTokens int, line bool) (string, error) {
	ctx := g.M.ContextLen
	mx := min(maxTokens, ctx/2)
	ids, err := llamacpp.InfillPrompt(g.Tok, llamacpp.InfillInput{Prefix: prefix, Suffix: suffix},
		llamacpp.InfillBudget{Batch: ctx - mx, Predict: mx, Ctx: ctx}, g.SPM)
	if err != nil {
		return "", fmt.Errorf("%s: %w", g.Path, err)
	}
	out, err := g.Generate(ids, mx, func(s string) bool { return line && strings.Contains(s, "\n") })
	if err != nil {
		return "", err
	}
	if line {
		out, _, _ = strings.Cut(out, "\n")
	}
	return out, nil
}

// SplitAtCursor reads FILE:LINE:COL (1-based; COL counts bytes) and splits
// the file there.
func SplitAtCursor(arg string) (prefix, suffix string, err error) {
	i := strings.LastIndexByte(arg, ':')
	j := -1
	if i > 0 {
		j = strings.LastIndexByte(arg[:i], ':')
	}
	if j <= 0 {
		return "", "", fmt.Errorf("%q: want FILE:LINE:COL", arg)
	}
	ln, err1 := strconv.Atoi(arg[j+1 : i])
	col, err2 := strconv.Atoi(arg[i+1:])
	if err1 != nil || err2 != nil || ln < 1 || col < 1 {
		return "", "", fmt.Errorf("%q: LINE and COL must be numbers from 1", arg)
	}
	b, err := os.ReadFile(arg[:j])
	if err != nil {
		return "", "", err
	}
	text := string(b)
	off := 0
	for k := 1; k < ln; k++ {
		nl := strings.IndexByte(text[off:], '\n')
		if nl < 0 {
			return "", "", fmt.Errorf("%s has fewer than %d lines", arg[:j], ln)
		}
		off += nl + 1
	}
	end := len(text)
	if nl := strings.IndexByte(text[off:], '\n'); nl >= 0 {
		end = off + nl
	}
	if off+col-1 > end {
		return "", "", fmt.Errorf("%s line %d has %d bytes; column %d is past its end", arg[:j], ln, end-off, col)
	}
	return text[:off+col-1], text[off+col-1:], nil
}
