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
//	nanoserve train      train a small Llama from scratch
//	nanoserve pull       download REPO[:QUANT|:FILE] from the Hugging Face hub; list, rm: its cache
//	nanoserve version    the version, commit and Go version (also --version)
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
)

// command is one subcommand: it parses its own flags from args.
type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{
	"generate":   {"complete a prompt", runGenerate},
	"chat":       {"interactive chat", runChat},
	"serve":      {"OpenAI-compatible HTTP server", runServe},
	"inspect":    {"describe a model file", runInspect},
	"convert":    {"convert a model to GGUF", runConvert},
	"tokenize":   {"encode text to token ids", runTokenize},
	"detokenize": {"decode token ids to text", runDetokenize},
	"bench":      {"measure prefill and decode speed", runBench},
	"train":      {"train a small model from scratch", runTrain},
	"pull":       {"download a model from the Hugging Face hub", runPull},
	"list":       {"list the models in the Hugging Face cache", runList},
	"rm":         {"remove a model from the Hugging Face cache", runRm},
	"version":    {"print the version, commit and Go version", runVersion},
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: nanoserve COMMAND [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nrun 'nanoserve COMMAND -h' for a command's flags")
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "-h" || name == "--help" || name == "help" {
		usage()
		return
	}
	if name == "--version" || name == "-version" {
		name = "version"
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "nanoserve: unknown command %q\n", name)
		usage()
		os.Exit(2)
	}
	if err := cmd.run(os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "nanoserve %s: %v\n", name, err)
		os.Exit(1)
	}
}

// newFlags returns a flag set for a subcommand that reports errors instead
// of exiting, so main prints them uniformly.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("nanoserve "+name, flag.ContinueOnError)
	return fs
}

// parseInterspersed parses flags that may appear before or after positional
// arguments ("generate PROMPT --max-tokens 5" and "generate --max-tokens 5
// PROMPT" both work). A lone "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
