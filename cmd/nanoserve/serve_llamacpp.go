package main

// llama-server's serve switches, so its clients and scripts (and llama.cpp's
// own server test suite, through internal/llamaserver) start nanoserve with
// the command lines they know:
//
//	--metrics[=false]      /metrics on (the default) or off (501)
//	--strict-model-names   a model field naming no served model is a 404 even
//	                       with one model (default: the one model answers)
//	--n-predict N          the token budget of a request that gives none
//	                       (-1 or 0: none)
//	--temp T, --seed S     the sampling defaults a request starts from
//	--alias NAME[,NAME]    (no "="): the first model's id, as llama-server's
//	                       --alias; several: the first in sorted order is the
//	                       id, the others more names

import (
	"flag"
	"slices"
	"strconv"
	"strings"

	"nanoserve/server"
)

// llamaFlags are llama-server's switches on serve.
type llamaFlags struct {
	metrics  bool
	strict   bool
	nPredict int
	temp     *float32
	seed     *uint64
}

func (lf *llamaFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&lf.metrics, "metrics", true, "serve /metrics (llama-server's switch; --metrics=false answers 501)")
	fs.BoolVar(&lf.strict, "strict-model-names", false, "answer 404 to a model field naming no served model even when one model is served\n"+
		"(default: a single-model server answers any name with its model, as llama-server)")
	fs.IntVar(&lf.nPredict, "n-predict", 0, "the token budget of a generation request that gives none (llama-server's --n-predict;\n"+
		"0 or -1: none, the context left)")
	fs.Func("temp", "default sampling temperature of requests that give none (llama-server's --temp; default: the model's)", func(v string) error {
		t, err := strconv.ParseFloat(v, 32)
		if err != nil || t < 0 {
			return errFlag("temp", v, "want a temperature, 0 or more")
		}
		f := float32(t)
		lf.temp = &f
		return nil
	})
	fs.Func("seed", "default sampling seed of requests that give none (llama-server's --seed; -1: a random seed per request)", func(v string) error {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errFlag("seed", v, "want an integer (-1: random)")
		}
		if s == -1 {
			lf.seed = nil
			return nil
		}
		u := uint64(s)
		lf.seed = &u
		return nil
	})
}

// check validates the switches.
func (lf *llamaFlags) check() error {
	if lf.nPredict < -1 {
		return errFlag("n-predict", lf.nPredict, "want a number of tokens (0 or -1: none)")
	}
	return nil
}

// apply copies the switches into the server options.
func (lf *llamaFlags) apply(o *server.Options) {
	o.NoMetrics = !lf.metrics
	o.AnyModelName = !lf.strict
	o.NPredict = max(lf.nPredict, 0)
	o.Temperature, o.Seed = lf.temp, lf.seed
}

// modelIDs splits the --alias values into llama-server's ids (values
// without "=", each possibly a comma-separated list) and nanoserve's
// NAME=MODEL aliases.
func modelIDs(aliases []string) (ids, rest []string) {
	for _, a := range aliases {
		if strings.Contains(a, "=") {
			rest = append(rest, a)
			continue
		}
		for n := range strings.SplitSeq(a, ",") {
			if n = strings.TrimSpace(n); n != "" && !slices.Contains(ids, n) {
				ids = append(ids, n)
			}
		}
	}
	// llama-server keeps its aliases in a sorted set and takes the first
	// as the model's id.
	slices.Sort(ids)
	return ids, rest
}

// nameFirst makes ids the first names of names (ids[0] the id), keeping
// the other names after them.
func nameFirst(names, ids []string) []string {
	out := slices.Clone(ids)
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
