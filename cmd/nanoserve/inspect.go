package main

import (
	"fmt"
	"os"

	"nanoserve/inspect"
	"nanoserve/model"
)

func runInspect(args []string) error {
	fs := newFlags("inspect")
	asJSON := fs.Bool("json", false, "print JSON")
	tok := fs.String("tokenizer", "", "tokenizer file or folder (for llama2.c checkpoints)")
	noHash := fs.Bool("no-hash", false, "skip the sha256 of the weight files")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nanoserve inspect [MODEL] [--json] [--tokenizer PATH] [--no-hash]\n\n"+
			"MODEL is a file, a Hugging Face directory or a hub name REPO[:QUANT] (pulled if not cached);\n"+
			"without it, the built-in model that generate and serve use.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fs.Usage()
		return fmt.Errorf("want at most one MODEL, got %d", len(pos))
	}
	arg := "" // the built-in model
	if len(pos) == 1 {
		arg = pos[0]
	}
	path, _, err := modelPath(arg, "main")
	if err != nil {
		return err
	}
	m, err := model.Load(path, model.Options{Tokenizer: *tok, Threads: 1})
	if err != nil {
		return err
	}
	defer m.Close()
	info, err := inspect.Describe(path, m, !*noHash)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(info)
	}
	inspect.Print(os.Stdout, info)
	return nil
}
