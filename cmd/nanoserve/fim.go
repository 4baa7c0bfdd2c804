package main

import (
	"fmt"
	"os"

	"nanoserve/bench"
	"nanoserve/tokenizer"
	"nanoserve/train"
)

// runComplete fills the middle between a prefix and a suffix with a FIM
// model (greedy) and prints it.
func runComplete(args []string) error {
	fs := newFlags("complete")
	var c train.Completion
	c.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	prefix, suffix, err := c.Gap(fs.Args())
	if err != nil {
		return err
	}
	if err := orBuiltin(&c.Model); err != nil {
		return err
	}
	out, err := c.Fill(prefix, suffix)
	if err != nil {
		return err
	}
	fmt.Print(out)
	return nil
}

// runFIMEval scores fill-in-the-middle on held-out files (see
// train.EvalFIM): a FIM model with the suffix and left to right, another
// model (the built-in one) left to right, and the KN trigram.
func runFIMEval(args []string) error {
	fs := newFlags("fim-eval")
	fc := train.FIMComparison{Out: os.Stdout, Log: os.Stderr}
	fc.RegisterFlags(fs)
	writePrompts := fs.String("write-prompts", "", "instead of evaluating, write the cases as a `bench serve --endpoint /infill --prompts` file (JSONL)")
	promptTokens := fs.Int("prompt-tokens", 1000, "with --write-prompts: tokens of context per case (3/4 before the gap, 1/4 after)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *writePrompts != "" {
		if err := orBuiltin(&fc.Model); err != nil {
			return err
		}
	}
	if err := fc.Check(); err != nil {
		return err
	}
	if *promptTokens < 4 {
		return errFlag("prompt-tokens", *promptTokens, "want at least 4")
	}
	if err := orBuiltin(&fc.Other); err != nil {
		return err
	}
	if *writePrompts != "" {
		fc.Prompts = func(cases []train.FIMCase, tk *tokenizer.Tokenizer) error {
			return writeInfillPrompts(*writePrompts, cases, tk, *promptTokens)
		}
	}
	return fc.Run()
}

// writeInfillPrompts writes each case as a bench serve prompt for /infill
// (bench.InfillPrompt: an editor's request with n tokens of context).
func writeInfillPrompts(path string, cases []train.FIMCase, tk *tokenizer.Tokenizer, n int) error {
	ps := make([]bench.ServePrompt, len(cases))
	for i, c := range cases {
		ps[i] = bench.InfillPrompt(tk, c.Prefix, c.Suffix, n)
	}
	if err := bench.WritePromptsFile(path, ps); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %d /infill prompts of up to %d context tokens to %s\n", len(cases), n, path)
	return nil
}
