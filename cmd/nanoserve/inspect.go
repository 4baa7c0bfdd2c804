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
