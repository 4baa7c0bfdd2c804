package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"nanoserve/bench"
	"nanoserve/llamacpp"
	"nanoserve/tokenizer"
	"nanoserve/train"
)

// runComplete fills the middle between a prefix and a suffix with a FIM
// model (greedy) and prints it.
func runComplete(args []string) error {
	fs := newFlags("complete")
	modelPath := fs.String("model", "", "FIM model (GGUF; default: the built-in model)")
	prefixFile := fs.String("prefix-file", "", "file holding the text before the gap")
	suffixFile := fs.String("suffix-file", "", "file holding the text after the gap")
	maxTokens := fs.Int("max-tokens", 64, "most tokens to generate")
	line := fs.Bool("line", false, "stop at the end of the line")
	spm := fs.Bool("spm-infill", false, "suffix-first prompt (llama-server's --spm-infill; a model trained suffix first reads it so anyway)")
	threads := fs.Int("threads", defaultThreads(), "worker threads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *maxTokens < 1 {
		return errFlag("max-tokens", *maxTokens, "want at least 1")
	}
	var prefix, suffix string
	switch {
	case fs.NArg() == 1 && *prefixFile == "" && *suffixFile == "":
		var err error
		if prefix, suffix, err = splitAtCursor(fs.Arg(0)); err != nil {
			return err
		}
	case fs.NArg() == 0 && *prefixFile != "":
		b, err := os.ReadFile(*prefixFile)
		if err != nil {
			return err
		}
		prefix = string(b)
		if *suffixFile != "" {
			if b, err = os.ReadFile(*suffixFile); err != nil {
				return err
			}
			suffix = string(b)
		}
	default:
		return errors.New("need FILE:LINE:COL or --prefix-file P [--suffix-file S]")
	}
	path := *modelPath
	if path == "" {
		var err error
		if path, err = builtinModelPath(); err != nil {
			return err
		}
	}
	g, err := train.LoadGreedy(path, *threads)
	if err != nil {
		return err
	}
	defer g.Close()
	ctx := g.M.ContextLen
	mx := min(*maxTokens, ctx/2)
	ids, err := llamacpp.InfillPrompt(g.Tok, llamacpp.InfillInput{Prefix: prefix, Suffix: suffix},
		llamacpp.InfillBudget{Batch: ctx - mx, Predict: mx, Ctx: ctx}, llamacpp.SuffixFirst(g.Tok, *spm))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err := g.Generate(ids, mx, func(s string) bool { return *line && strings.Contains(s, "\n") })
	if err != nil {
		return err
	}
	if *line {
		out, _, _ = strings.Cut(out, "\n")
	}
	fmt.Print(out)
	return nil
}

// splitAtCursor reads FILE:LINE:COL (1-based; COL counts bytes) and splits
// the file there.
func splitAtCursor(arg string) (prefix, suffix string, err error) {
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

// runFIMEval scores fill-in-the-middle on held-out files (see
// train.EvalFIM): a FIM model with the suffix and left to right, another
// model (the built-in one) left to right, and the KN trigram.
func runFIMEval(args []string) error {
	fs := newFlags("fim-eval")
	fimModel := fs.String("model", "", "FIM-trained model (GGUF)")
	other := fs.String("compare", "", "model to compare left to right (default: the built-in model)")
	var corpus, exts stringList
	fs.Var(&corpus, "corpus", "corpus the model was trained on (repeatable); its held-out split is evaluated")
	fs.Var(&exts, "ext", "file suffix to read (repeatable)")
	heldOut := fs.Float64("held-out", 0.05, "held-out fraction used in training")
	seed := fs.Uint64("seed", 1, "training seed (the split)")
	nCases := fs.Int("cases", 1000, "cases (half single-line, half block body)")
	caseSeed := fs.Uint64("case-seed", 1, "seed of the cases")
	knTokens := fs.Int("kn-tokens", 4_000_000, "training tokens the trigram baseline counts")
	threads := fs.Int("threads", defaultThreads(), "worker threads")
	spmEval := fs.Bool("spm-infill", false, "(a) lays the prompt out suffix first (llama-server's --spm-infill; a model trained suffix first reads it so anyway)")
	record := fs.Bool("record", false, "store the table in the FIM model's manifest (nanoserve.train.fim_eval; `inspect` shows it)")
	writePrompts := fs.String("write-prompts", "", "instead of evaluating, write the cases as a `bench serve --endpoint /infill --prompts` file (JSONL)")
	promptTokens := fs.Int("prompt-tokens", 1000, "with --write-prompts: tokens of context per case (3/4 before the gap, 1/4 after)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *writePrompts != "" && *fimModel == "" {
		p, err := builtinModelPath()
		if err != nil {
			return err
		}
		*fimModel = p
	}
	if *fimModel == "" || len(corpus) == 0 {
		return errors.New("need --model FIM.gguf and --corpus PATH")
	}
	if *nCases < 2 {
		return errFlag("cases", *nCases, "want at least 2")
	}
	if *promptTokens < 4 {
		return errFlag("prompt-tokens", *promptTokens, "want at least 4")
	}
	if *other == "" {
		p, err := builtinModelPath()
		if err != nil {
			return err
		}
		*other = p
	}
	c, err := train.LoadCorpus(corpus, exts, *heldOut, *seed)
	if err != nil {
		return err
	}
	cases := train.FIMCases(c.HeldOut, *nCases, *caseSeed)
	fmt.Fprintf(os.Stderr, "%d cases from %d held-out files\n", len(cases), len(c.HeldOut))
	g, err := train.LoadGreedy(*fimModel, *threads)
	if err != nil {
		return err
	}
	g.SPM = llamacpp.SuffixFirst(g.Tok, *spmEval) // the layout the model reads (its own, or the flag's)
	closeG := sync.OnceFunc(g.Close)
	defer closeG()
	if err := llamacpp.CheckFIM(g.Tok); err != nil {
		return fmt.Errorf("%s: %w", *fimModel, err)
	}
	if *writePrompts != "" {
		return writeInfillPrompts(*writePrompts, cases, g.Tok, *promptTokens)
	}
	o, err := train.LoadGreedy(*other, *threads)
	if err != nil {
		return err
	}
	defer o.Close()
	var trainToks []int32
	for _, d := range c.Train {
		for _, id := range g.Tok.Encode(d.Text, false) {
			trainToks = append(trainToks, int32(id))
		}
		if len(trainToks) >= *knTokens {
			break
		}
	}
	kn := train.NewKN3(trainToks, g.Tok.Size())
	systems := []struct {
		name string
		f    train.Completer
	}{
		{fmt.Sprintf("(a) FIM model, with suffix (%s)", map[bool]string{false: "PSM", true: "SPM"}[g.SPM]), g.WithSuffix},
		{"(b) FIM model, left to right", g.LeftToRight},
		{"(c) " + *other + ", left to right", o.LeftToRight},
		{fmt.Sprintf("(d) KN trigram (%d train tokens), left to right", len(trainToks)), train.KNCompleter(kn, g.Tok)},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%d cases (case seed %d) from %d held-out files, greedy; exact match and character similarity\n",
		len(cases), *caseSeed, len(c.HeldOut))
	fmt.Fprintf(&table, "| system | line exact | line similarity | block exact | block similarity |\n|---|---|---|---|---|\n")
	fmt.Print(table.String())
	for _, s := range systems {
		t0 := time.Now()
		r, err := train.EvalFIM(cases, s.f)
		if err != nil {
			return err
		}
		l, b := r["line"], r["block"]
		row := fmt.Sprintf("| %s | %.3f | %.3f | %.3f | %.3f |\n", s.name, l.Exact, l.Sim, b.Exact, b.Sim)
		table.WriteString(row)
		fmt.Print(row)
		fmt.Fprintf(os.Stderr, "%s: %d line + %d block cases in %v\n", s.name, l.N, b.N, time.Since(t0).Round(time.Second))
	}
	if *record {
		closeG() // the rewrite replaces the file the model was mapped from
		if err := train.RecordFIMEval(*fimModel, table.String()); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "recorded in %s (%s)\n", *fimModel, train.KeyFIMEval)
	}
	return nil
}

// writeInfillPrompts writes each case as a bench serve prompt for /infill:
// the last 3/4·n tokens before the gap as "prompt", the first n/4 after it
// as "suffix" (fewer where the file is shorter); no max_tokens, so bench
// serve's --output-len applies — an editor's request with n tokens of
// context.
func writeInfillPrompts(path string, cases []train.FIMCase, tk *tokenizer.Tokenizer, n int) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	nPre := n * 3 / 4
	for i := range cases {
		c := &cases[i]
		pre, suf := tk.Encode(c.Prefix, false), tk.Encode(c.Suffix, false)
		pre, suf = pre[max(0, len(pre)-nPre):], suf[:min(len(suf), n-nPre)]
		if err := enc.Encode(bench.ServePrompt{Prompt: tk.Decode(pre), Suffix: tk.Decode(suf)}); err != nil {
			return err
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %d /infill prompts of up to %d context tokens to %s\n", len(cases), n, path)
	return nil
}
