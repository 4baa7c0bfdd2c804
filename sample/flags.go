package sample

// The command-line face of a Policy: the sampling flags of nanoserve
// generate and chat, and how they build a Policy over a model's
// generation_config defaults.

import (
	"flag"
	"fmt"
	"strings"
)

// Flags binds the sampling flags of a flag set (RegisterFlags) and builds
// the Policy they declare (Policy). Special (--special: control tokens as
// text) rides along though it is no part of a Policy.
type Flags struct {
	Special bool

	fs                                     *flag.FlagSet
	temperature, topP, minP, repeatPenalty float64
	presence, frequency                    float64
	topK, repeatLastN, maxTokens, logprobs int
	seed                                   int64
	ignoreEOS                              bool
	stop                                   []string
}

// RegisterFlags adds the sampling flags to fs, with Defaults' values.
func (f *Flags) RegisterFlags(fs *flag.FlagSet) {
	f.fs = fs
	d := Defaults()
	fs.Float64Var(&f.temperature, "temperature", float64(d.Temperature), "sampling temperature (0: greedy argmax)")
	fs.IntVar(&f.topK, "top-k", d.TopK, "keep the k most likely tokens (0: all)")
	fs.Float64Var(&f.topP, "top-p", float64(d.TopP), "nucleus: keep the smallest set with probability ≥ p (1: all)")
	fs.Float64Var(&f.minP, "min-p", float64(d.MinP), "drop tokens below min-p × the top probability (0: off)")
	fs.Float64Var(&f.repeatPenalty, "repeat-penalty", float64(d.RepetitionPenalty), "repetition penalty over prompt and output (1: off)")
	fs.IntVar(&f.repeatLastN, "repeat-last-n", d.RepeatLastN, "window of the repetition penalty in tokens")
	fs.Float64Var(&f.presence, "presence-penalty", 0, "OpenAI presence penalty over the output")
	fs.Float64Var(&f.frequency, "frequency-penalty", 0, "OpenAI frequency penalty over the output")
	fs.Int64Var(&f.seed, "seed", -1, "RNG seed (-1: random, reported in --json)")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "maximum tokens to generate (0: until the context is full)")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", false, "do not stop at end-of-generation tokens")
	fs.Var((*stopList)(&f.stop), "stop", "stop string (repeatable); never emitted")
	fs.IntVar(&f.logprobs, "logprobs", -1, "report log-probabilities with N alternatives per token (-1: off)")
	fs.BoolVar(&f.Special, "special", false, "print control tokens (end of text, FIM markers, ...) as text; off, they are never shown")
}

// IsSet reports whether the command line set the named flag (any flag of
// the set RegisterFlags was given).
func (f *Flags) IsSet(name string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// Policy builds the declared policy (validated): the model's
// generation_config defaults (FromGenerationConfig; none: Defaults) with
// the flags the user set over them.
func (f *Flags) Policy(modelDefaults []byte) (Policy, error) {
	switch {
	case f.seed < -1:
		return Policy{}, fmt.Errorf("--seed %d: want a seed >= 0 (-1: random)", f.seed)
	case f.logprobs < -1:
		return Policy{}, fmt.Errorf("--logprobs %d: want a number of alternatives >= 0 (-1: off)", f.logprobs)
	}
	p := Defaults()
	if len(modelDefaults) > 0 {
		if g, _, err := FromGenerationConfig(modelDefaults); err == nil {
			p = g
		}
	}
	apply := func(name string, fn func()) {
		if f.IsSet(name) || len(modelDefaults) == 0 {
			fn()
		}
	}
	apply("temperature", func() { p.Temperature = float32(f.temperature) })
	apply("top-k", func() { p.TopK = f.topK })
	apply("top-p", func() { p.TopP = float32(f.topP) })
	apply("min-p", func() { p.MinP = float32(f.minP) })
	apply("repeat-penalty", func() { p.RepetitionPenalty = float32(f.repeatPenalty) })
	apply("repeat-last-n", func() { p.RepeatLastN = f.repeatLastN })
	p.PresencePenalty, p.FrequencyPenalty = float32(f.presence), float32(f.frequency)
	apply("max-tokens", func() { p.MaxTokens = f.maxTokens })
	p.IgnoreEOS = f.ignoreEOS
	p.Stop = append([]string(nil), f.stop...)
	if f.seed >= 0 {
		s := uint64(f.seed)
		p.Seed = &s
	}
	if f.logprobs >= 0 {
		n := f.logprobs
		p.Logprobs = &n
	}
	return p, p.Validate()
}

// stopList is the repeatable --stop flag.
type stopList []string

func (s *stopList) String() string     { return strings.Join(*s, ",") }
func (s *stopList) Set(v string) error { *s = append(*s, v); return nil }
