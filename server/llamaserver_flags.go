package server

// llama-server's serve switches, so its clients and scripts (and llama.cpp's
// own server test suite, through internal/llamaserver) start nanoserve with
// the command lines they know:
//
//	--metrics[=false]      /metrics on (the default) or off (501)
//	--slots[=false]        GET /slots on (the default) or off (501;
//	                       llama-server's --no-slots)
//	--strict-model-names   a model field naming no served model is a 404 even
//	                       with one model (default: the one model answers)
//	--n-predict N          the token budget of a request that gives none
//	                       (-1 or 0: none)
//	--temp T, --seed S     the sampling defaults a request starts from
//	--verbose              every whole chat and completion answer carries
//	                       llama-server's __verbose debug object
//
// (llama-server's --alias NAME, the model's id, is host.ModelIDs.)

import (
	"flag"
	"fmt"
	"strconv"
)

// LlamaServerFlags are llama-server's switches on serve.
// RegisterLlamaServerFlags declares them; Check validates them and Apply
// fills the matching Options fields (NoMetrics, NoSlots, AnyModelName, NPredict,
// Temperature, Seed, Verbose).
type LlamaServerFlags struct {
	metrics  bool
	slots    bool
	strict   bool
	nPredict int
	temp     *float32
	seed     *uint64
	verbose  bool
}

// RegisterLlamaServerFlags declares llama-server's switches on fs.
func RegisterLlamaServerFlags(fs *flag.FlagSet) *LlamaServerFlags {
	lf := &LlamaServerFlags{}
	fs.BoolVar(&lf.metrics, "metrics", true, "serve /metrics (llama-server's switch; --metrics=false answers 501)")
	fs.BoolVar(&lf.slots, "slots", true, "serve GET /slots, the slot monitor (llama-server's switch; --slots=false answers 501)")
	fs.BoolVar(&lf.strict, "strict-model-names", false, "answer 404 to a model field naming no served model even when one model is served\n"+
		"(default: a single-model server answers any name with its model, as llama-server)")
	fs.BoolVar(&lf.verbose, "verbose", false, "put llama-server's __verbose debug object (the prompt as the model saw it, the raw reply, counts)\n"+
		"on every whole chat and completion answer (llama-server's --verbose; a request's \"verbose\": true does it for one)")
	fs.IntVar(&lf.nPredict, "n-predict", 0, "the token budget of a generation request that gives none (llama-server's --n-predict;\n"+
		"0 or -1: none, the context left)")
	fs.Func("temp", "default sampling temperature of requests that give none (llama-server's --temp; default: the model's)", func(v string) error {
		t, err := strconv.ParseFloat(v, 32)
		if err != nil || t < 0 {
			return flagError("temp", v, "want a temperature, 0 or more")
		}
		f := float32(t)
		lf.temp = &f
		return nil
	})
	fs.Func("seed", "default sampling seed of requests that give none (llama-server's --seed; -1: a random seed per request)", func(v string) error {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return flagError("seed", v, "want an integer (-1: random)")
		}
		if s == -1 {
			lf.seed = nil
			return nil
		}
		u := uint64(s)
		lf.seed = &u
		return nil
	})
	return lf
}

// Check validates the switches.
func (lf *LlamaServerFlags) Check() error {
	if lf.nPredict < -1 {
		return flagError("n-predict", lf.nPredict, "want a number of tokens (0 or -1: none)")
	}
	return nil
}

// Apply copies the switches into the server options.
func (lf *LlamaServerFlags) Apply(o *Options) {
	o.NoMetrics = !lf.metrics
	o.NoSlots = !lf.slots
	o.AnyModelName = !lf.strict
	o.NPredict = max(lf.nPredict, 0)
	o.Temperature, o.Seed = lf.temp, lf.seed
	o.Verbose = lf.verbose
}

// flagError is a flag validation error in cmd/nanoserve's form (errFlag):
// "--NAME VALUE: want ...".
func flagError(name string, v any, want string) error {
	return fmt.Errorf("--%s %v: %s", name, v, want)
}
