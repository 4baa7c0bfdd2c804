package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"nanoserve/console"
	"nanoserve/defaultmodel"
	"nanoserve/engine"
	"nanoserve/sample"
)

func runGenerate(args []string) error {
	fs := newFlags("generate")
	var mf modelFlags
	var pf sample.Flags
	var sf specFlags
	mf.register(fs)
	pf.RegisterFlags(fs)
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object (ids, text, finish_reason, timings) instead of streaming text")
	verbose := fs.Bool("verbose", false, "print timings to stderr after streaming")
	parseSpecial := fs.Bool("parse-special", false, "treat special-token text in the prompt as special tokens")
	healing := fs.Bool("token-healing", false, "token healing: re-generate the prompt's last token so a prompt cut inside a token\n"+
		"(\"if err != nil {\" where the model knows \" {\\n\") continues as the model would have written it;\n"+
		"the output never repeats the prompt's text (default: on for the built-in autocomplete model, off\n"+
		"for --model, where prompts are taken token for token as llama.cpp does)")
	schemaPath := fs.String("json-schema", "", "constrain the output to JSON valid under this JSON Schema file")
	grammarPath := fs.String("grammar", "", "constrain the output to this GBNF grammar file (llama.cpp's format, start rule root)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return fmt.Errorf("want one PROMPT argument, got %d (quote the prompt)", len(pos))
	}
	prompt := ""
	if len(pos) == 1 {
		prompt = pos[0]
	}
	if err := sf.check(); err != nil {
		return err
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	pol, err := pf.Policy(m.Gen.Sampling)
	if err != nil {
		return err
	}
	opts := console.GenerateOptions{JSON: *asJSON, Verbose: *verbose}
	heal := *healing
	if mf.model == "" { // the built-in completion model: its policy, its block stop, prompts that end mid-token
		defaultmodel.ApplyPolicy(&pol, pf.IsSet)
		opts.Cut = sample.NewBlockStop(prompt).Cut
		heal = heal || !pf.IsSet("token-healing")
	}
	spec, closeDraft, err := sf.options(&mf, m, mf.ctxSize)
	if err != nil {
		return err
	}
	defer closeDraft()
	eng, err := engine.New(m, engine.Options{CtxSize: mf.ctxSize, Spec: spec, KVType: mf.kv})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	req := engine.Request{Prompt: prompt, ParseSpecial: *parseSpecial, Policy: pol, TokenHealing: heal, Special: pf.Special, NonEmpty: mf.model == ""}
	if err := console.Constrain(eng, &req, *schemaPath, *grammarPath); err != nil {
		return err
	}
	return console.Generate(ctx, eng, req, opts, os.Stdout, os.Stderr)
}
