package server

import (
	"flag"
	"io"
	"testing"
)

// TestLlamaFlags: llama-server's switches reach the server options.
func TestLlamaFlags(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		lf := RegisterLlamaServerFlags(fs)
		var o Options
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		if err := lf.Check(); err != nil {
			return o, err
		}
		lf.Apply(&o)
		return o, nil
	}
	o, err := parse()
	if err != nil || o.NoMetrics || o.NoSlots || !o.AnyModelName || o.NPredict != 0 || o.Temperature != nil || o.Seed != nil {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = parse("--metrics=false", "--slots=false", "--strict-model-names", "--n-predict", "64", "--temp", "0.8", "--seed", "42")
	if err != nil || !o.NoMetrics || !o.NoSlots || o.AnyModelName || o.NPredict != 64 || o.Temperature == nil || *o.Temperature != 0.8 || o.Seed == nil || *o.Seed != 42 {
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
	// The errors read as cmd/nanoserve's (errFlag).
	if _, err := parse("--n-predict", "-2"); err == nil || err.Error() != "--n-predict -2: want a number of tokens (0 or -1: none)" {
		t.Errorf("--n-predict -2: %v", err)
	}
}
