package train

// One gap filled at an editor's cursor (`nanoserve complete`).

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"nanoserve/llamacpp"
	"nanoserve/tensor"
)

// Completion is one `nanoserve complete`: where the gap is (Gap) and the
// FIM model that fills it (Fill), as its flags set them (RegisterFlags).
type Completion struct {
	Model                  string // the FIM model (GGUF)
	PrefixFile, SuffixFile string // the text around the gap, without a FILE:LINE:COL
	MaxTokens              int
	Line                   bool // stop at the end of the line
	SPM                    bool // suffix-first prompt (else the model's own layout)
	Threads                int
}

// RegisterFlags adds complete's flags to fs.
func (c *Completion) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Model, "model", "", "FIM model (GGUF; default: the built-in model)")
	fs.StringVar(&c.PrefixFile, "prefix-file", "", "file holding the text before the gap")
	fs.StringVar(&c.SuffixFile, "suffix-file", "", "file holding the text after the gap")
	fs.IntVar(&c.MaxTokens, "max-tokens", 64, "most tokens to generate")
	fs.BoolVar(&c.Line, "line", false, "stop at the end of the line")
	fs.BoolVar(&c.SPM, "spm-infill", false, "suffix-first prompt (llama-server's --spm-infill; a model trained suffix first reads it so anyway)")
	fs.IntVar(&c.Threads, "threads", tensor.PhysicalCores(), "worker threads")
}

// Gap checks the options and reads the text before and after the gap:
// args is one FILE:LINE:COL (SplitAtCursor), or none with PrefixFile (and
// SuffixFile).
func (c *Completion) Gap(args []string) (prefix, suffix string, err error) {
	if c.MaxTokens < 1 {
		return "", "", fmt.Errorf("--max-tokens %d: want at least 1", c.MaxTokens)
	}
	switch {
	case len(args) == 1 && c.PrefixFile == "" && c.SuffixFile == "":
		return SplitAtCursor(args[0])
	case len(args) == 0 && c.PrefixFile != "":
		b, err := os.ReadFile(c.PrefixFile)
		if err != nil || c.SuffixFile == "" {
			return string(b), "", err
		}
		a, err := os.ReadFile(c.SuffixFile)
		return string(b), string(a), err
	}
	return "", "", errors.New("need FILE:LINE:COL or --prefix-file P [--suffix-file S]")
}

// Fill loads the model and fills the gap (Complete).
func (c *Completion) Fill(prefix, suffix string) (string, error) {
	g, err := LoadGreedy(c.Model, c.Threads)
	if err != nil {
		return "", err
	}
	defer g.Close()
	g.SPM = llamacpp.SuffixFirst(g.Tok, c.SPM)
	return g.Complete(prefix, suffix, c.MaxTokens, c.Line)
}

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
