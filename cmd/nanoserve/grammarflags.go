package main

import (
	"flag"

	"nanoserve/engine"
)

// grammarOptions are serve's structured-output limits (set by the flags
// registerGrammarFlags adds; every served model's engine gets them).
var grammarOptions engine.GrammarOptions

func registerGrammarFlags(fs *flag.FlagSet) { grammarOptions.RegisterFlags(fs) }
