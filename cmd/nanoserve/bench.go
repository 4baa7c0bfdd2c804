package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"nanoserve/bench"
)

func runBench(args []string) error {
	if len(args) > 0 && args[0] == "serve" {
		return runBenchServe(args[1:])
	}
	fs := newFlags("bench")
	var f bench.Flags
	f.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := f.Check(); err != nil {
		return err
	}
	f.Target.Log, f.Options.Progress = os.Stderr, os.Stderr
	res, err := bench.Measure(f.Target, f.Options)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(res)
	}
	return bench.WriteMarkdown(os.Stdout, res)
}

// runBenchServe is `nanoserve bench serve`: load a running OpenAI-compatible
// server and measure it from the client (package bench, RunServe).
func runBenchServe(args []string) error {
	fs := newFlags("bench serve")
	var f bench.ServeFlags
	f.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := f.Check(); err != nil {
		return err
	}
	f.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := bench.RunServe(ctx, f.ServeOptions)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(res)
	}
	return bench.WriteServeMarkdown(os.Stdout, res)
}
