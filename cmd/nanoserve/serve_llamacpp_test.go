package main

import (
	"flag"
	"io"
	"slices"
	"testing"

	"nanoserve/server"
)

// TestModelIDs: llama-server's --alias NAME (no "=") names the model's id;
// a comma list is a sorted set whose first is the id (as llama-server);
// NAME=MODEL stays nanoserve's alias.
func TestModelIDs(t *testing.T) {
	ids, rest := modelIDs([]string{"tinyllama-2,fim,code", "x=y", "fim"})
	if !slices.Equal(ids, []string{"code", "fim", "tinyllama-2"}) || !slices.Equal(rest, []string{"x=y"}) {
		t.Fatalf("modelIDs = %q, %q", ids, rest)
	}
	got := nameFirst([]string{"llama_gqa-F16.gguf", "llama_gqa-F16"}, []string{"code", "llama_gqa-F16"})
	if want := []string{"code", "llama_gqa-F16", "llama_gqa-F16.gguf"}; !slices.Equal(got, want) {
		t.Fatalf("nameFirst = %q, want %q", got, want)
	}
}

// TestLlamaFlags: llama-server's switches reach the server options.
func TestLlamaFlags(t *testing.T) {
	parse := func(args ...string) (server.Options, error) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var lf llamaFlags
		lf.register(fs)
		var o server.Options
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		if err := lf.check(); err != nil {
			return o, err
		}
		lf.apply(&o)
		return o, nil
	}
	o, err := parse()
	if err != nil || o.NoMetrics || !o.AnyModelName || o.NPredict != 0 || o.Temperature != nil || o.Seed != nil {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = parse("--metrics=false", "--strict-model-names", "--n-predict", "64", "--temp", "0.8", "--seed", "42")
	if err != nil || !o.NoMetrics || o.AnyModelName || o.NPredict != 64 || o.Temperature == nil || *o.Temperature != 0.8 || o.Seed == nil || *o.Seed != 42 {
		t.Fatalf("set: %+v, %v", o, err)
	}
	if o, err = parse("--seed", "-1", "--n-predict", "-1"); err != nil || o.Seed != nil || o.NPredict != 0 {
		t.Fatalf("--seed -1 --n-predict -1: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"--temp", "-1"}, {"--seed", "x"}, {"--n-predict", "-2"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
