// Command nanoserve runs, inspects, converts, benchmarks and trains language
// models. One binary, one subcommand per job:
//
//	nanoserve generate   complete a prompt (greedy or sampled), stream or --json
//	nanoserve chat       interactive chat through the model's chat template
//	nanoserve serve      OpenAI-compatible HTTP API (completions, chat, SSE streaming, metrics)
//	nanoserve inspect    describe a model file
//	nanoserve convert    write any model we read as GGUF (optionally quantized)
//	nanoserve tokenize   text -> ids;  nanoserve detokenize: ids -> text
//	nanoserve bench      prefill / decode throughput, llama-bench style; bench serve: load-test a running server
//	nanoserve train      train a small Llama from scratch (--fim-rate: fill-in-the-middle samples)
//	nanoserve complete   fill in the middle at FILE:LINE:COL (or --prefix-file/--suffix-file)
//	nanoserve fim-eval   score fill-in-the-middle on held-out files against baselines
//	nanoserve pull       download REPO[:QUANT|:FILE] from the Hugging Face hub; list, rm: its cache
//	nanoserve version    the version, commit and Go version (also --version)
package main

import (
	"os"

	"nanoserve/console"
	"nanoserve/internal/cli"
)

// commands are the subcommands by name.
var commands = map[string]cli.Command{
	"generate":   {Summary: "complete a prompt", Run: runGenerate},
	"chat":       {Summary: "interactive chat", Run: runChat},
	"serve":      {Summary: "OpenAI-compatible HTTP server", Run: runServe},
	"inspect":    {Summary: "describe a model file", Run: runInspect},
	"convert":    {Summary: "convert a model to GGUF", Run: runConvert},
	"tokenize":   {Summary: "encode text to token ids", Run: runTokenize},
	"detokenize": {Summary: "decode token ids to text", Run: runDetokenize},
	"bench":      {Summary: "measure prefill and decode speed", Run: runBench},
	"train":      {Summary: "train a small model from scratch", Run: runTrain},
	"complete":   {Summary: "fill in the middle at FILE:LINE:COL", Run: runComplete},
	"fim-eval":   {Summary: "score fill-in-the-middle on held-out files", Run: runFIMEval},
	"pull":       {Summary: "download a model from the Hugging Face hub", Run: runPull},
	"list":       {Summary: "list the models in the Hugging Face cache", Run: runList},
	"rm":         {Summary: "remove a model from the Hugging Face cache", Run: runRm},
	"version":    app.VersionCommand("print the version, commit and Go version", &version, &commit),
}

// app is the binary's commands (package cli: dispatch, usage, one-line
// mistakes); init fills in its commands, whose functions make flag sets
// through it.
var app = cli.App{Name: "nanoserve", Summaries: map[string]string{"bench serve": "load-test a running server"},
	// Each command's positional arguments, for the usage line of the
	// commands whose flag set prints the default usage.
	Args: map[string]string{
		"tokenize":    "[TEXT]",
		"detokenize":  "[ID...]",
		"bench":       "| nanoserve bench serve [flags]",
		"bench serve": "",
		"train":       "[--corpus] PATH...",
		"complete":    "FILE:LINE:COL | --prefix-file P [--suffix-file S]",
		"fim-eval":    "",
		"version":     "",
	},
	// The commands whose usage says more than the default (their flags follow).
	Help: map[string]string{
		"generate": "usage: nanoserve generate [flags] PROMPT   (an empty PROMPT starts a document: BOS, else end-of-text)",
		"chat":     "usage: nanoserve chat [flags]\n\n" + console.Help + "\n\nflags:",
		"inspect": "usage: nanoserve inspect [MODEL] [--json] [--tokenizer PATH] [--no-hash]\n\n" +
			"MODEL is a file, a Hugging Face directory or a hub name REPO[:QUANT] (pulled if not cached);\n" +
			"without it, the built-in model that generate and serve use.",
		"convert": "usage: nanoserve convert [flags] IN OUT.gguf\n\nIN is a GGUF file, a Hugging Face directory or a llama2.c .bin (with --tokenizer).\n\nflags:",
		"pull": `usage: nanoserve pull [flags] REPO[:QUANT|:FILE]...

Downloads a model from the Hugging Face hub into its cache ($HF_HOME/hub) and
prints the path to load. REPO alone takes the Q4_K_M GGUF (or the only GGUF,
or the whole repository when it has none); REPO:Q8_0 the GGUF of that
quantization (all files of a split); REPO:path/file.gguf one file.
Interrupted downloads resume. HF_TOKEN authenticates (gated and private
models); HF_ENDPOINT names another hub.

flags:`,
		"list": "usage: nanoserve list\n\nLists the models in the Hugging Face cache ($HF_HOME/hub): repository, size, revisions, files.",
		"rm":   "usage: nanoserve rm REPO[:QUANT|:FILE]...\n\nRemoves a repository from the Hugging Face cache, or only the files of one quantization\n(and the blobs nothing links to any more).",
	}}

func init() { app.Commands = commands }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is main with its arguments and outputs: the exit code.
var run = app.Run

// newFlags returns a command's flag set (cli.App.Flags); parseInterspersed
// lets its flags come between positional arguments.
var (
	newFlags          = app.Flags
	parseInterspersed = cli.ParseInterspersed
)
