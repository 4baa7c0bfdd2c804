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
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
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
	"complete":   {"fill in the middle at FILE:LINE:COL", runComplete},
	"fim-eval":   {"score fill-in-the-middle on held-out files", runFIMEval},
	"pull":       {"download a model from the Hugging Face hub", runPull},
	"list":       {"list the models in the Hugging Face cache", runList},
	"rm":         {"remove a model from the Hugging Face cache", runRm},
	"version":    {"print the version, commit and Go version", runVersion},
}

// summaries are the commands' one-line summaries (filled by init: the
// flag sets' usage cannot refer to commands, whose functions make them).
var summaries = map[string]string{"bench serve": "load-test a running server"}

func init() {
	for n, c := range commands {
		summaries[n] = c.summary
	}
}

// commandArgs are each command's positional arguments, for the usage line
// of the commands whose flag set prints the default usage.
var commandArgs = map[string]string{
	"tokenize":    "[TEXT]",
	"detokenize":  "[ID...]",
	"bench":       "| nanoserve bench serve [flags]",
	"bench serve": "",
	"train":       "[--corpus] PATH...",
	"complete":    "FILE:LINE:COL | --prefix-file P [--suffix-file S]",
	"fim-eval":    "",
	"version":     "",
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: nanoserve COMMAND [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'nanoserve help COMMAND' (or 'nanoserve COMMAND -h') for a command's arguments and flags")
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is main with its arguments and outputs: the exit code. A command's
// usage (help, -h) goes to stdout; a mistake (an unknown command or flag)
// is one line on stderr with the closest name and how to get help.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		usage(stderr)
		return 2
	}
	name := args[0]
	rest := args[1:]
	switch name {
	case "-h", "--help", "-help":
		usage(stdout)
		return 0
	case "help":
		if len(rest) == 0 {
			usage(stdout)
			return 0
		}
		name, rest = rest[0], []string{"-h"}
	case "--version", "-version":
		name = "version"
	}
	cmd, ok := commands[name]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		fmt.Fprintf(stderr, "nanoserve: unknown command %q%s; run 'nanoserve help' for the list\n", name, didYouMean(name, names, ""))
		return 2
	}
	flagOut.Reset()
	lastFlags = nil
	err := cmd.run(rest)
	if errors.Is(err, flag.ErrHelp) {
		stdout.Write(flagOut.Bytes())
		return 0
	}
	if err != nil {
		msg := err.Error()
		if lastFlags != nil && isFlagError(msg) {
			if f, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
				var names []string
				lastFlags.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
				msg = "unknown flag " + f + didYouMean(strings.TrimLeft(f, "-"), names, "--")
			}
			fmt.Fprintf(stderr, "nanoserve %s: %s; run 'nanoserve help %s' for usage\n", name, msg, name)
			return 2
		}
		fmt.Fprintf(stderr, "nanoserve %s: %v\n", name, err)
		return 1
	}
	return 0
}

// flagOut collects what the flag sets print (usage, parse errors); run
// shows the usage for -h and replaces a parse error's usage dump with one
// line. lastFlags is the latest flag set made (for flag suggestions).
var (
	flagOut   bytes.Buffer
	lastFlags *flag.FlagSet
)

// isFlagError reports whether msg is one of package flag's parse errors.
func isFlagError(msg string) bool {
	for _, p := range []string{"flag provided but not defined: ", "flag needs an argument: ", "invalid value ", "invalid boolean value ", "bad flag syntax: "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// didYouMean returns " (did you mean PREFIX+NAME?)" for the name closest
// to s by edit distance (at most a third of s's length plus one), or "".
func didYouMean(s string, names []string, prefix string) string {
	best, bestD := "", len(s)/3+2
	sort.Strings(names)
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + prefix + best + "?)"
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// newFlags returns a flag set for a subcommand that reports errors instead
// of exiting, so run prints them uniformly. Its default usage names the
// command's positional arguments (commandArgs); commands with more to say
// set their own.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("nanoserve "+name, flag.ContinueOnError)
	fs.SetOutput(&flagOut)
	fs.Usage = func() {
		line := "usage: nanoserve " + name + " [flags]"
		if a := commandArgs[name]; a != "" {
			line += " " + a
		}
		summary := summaries[name]
		fmt.Fprintf(fs.Output(), "%s\n\n%s\n\nflags:\n", line, summary)
		fs.PrintDefaults()
	}
	lastFlags = fs
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
