package main

import (
	"flag"

	"nanoserve/engine"
	"nanoserve/grammar"
)

// grammarOptions are serve's structured-output limits (set by the flags
// registerGrammarFlags adds; every served model's engine gets them).
var grammarOptions engine.GrammarOptions

// registerGrammarFlags adds the flags that raise (or lower) what one
// constraint compile may take: a request past a limit gets a 400 naming
// the flag.
func registerGrammarFlags(fs *flag.FlagSet) {
	d := grammar.DefaultLimits()
	fs.Int64Var(&grammarOptions.Limits.Steps, "grammar-max-steps", d.Steps,
		"work steps one structured-output compile (and each token mask after it) may take (a CPU-time bound: ~10-50 ns each)")
	fs.Int64Var(&grammarOptions.Limits.Nodes, "grammar-max-nodes", d.Nodes, "grammar nodes (rules, positions, automaton stacks) one structured-output compile may create")
	fs.Int64Var(&grammarOptions.Limits.Bytes, "grammar-max-bytes", d.Bytes, "bytes one structured-output compile (and its mask caches) may hold")
	fs.Int64Var(&grammarOptions.CacheBytes, "grammar-cache-bytes", 256<<20, "bytes the compiled constraints kept for reuse may hold together")
	fs.IntVar(&grammarOptions.Compiles, "grammar-compiles", 0, "structured-output compiles that run at once; more wait (0: half the CPUs, at least 1)")
}
