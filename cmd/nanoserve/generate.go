package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"nanoserve/console"
	"nanoserve/defaultmodel"
	"nanoserve/engine"
	"nanoserve/sample"
)

// policyFlags are the sampling flags of generate and chat.
type policyFlags struct {
	special                                bool // control tokens as text (not part of the policy: Request.Special)
	temperature, topP, minP, repeatPenalty float64
	presence, frequency                    float64
	topK, repeatLastN, maxTokens, logprobs int
	seed                                   int64
	ignoreEOS                              bool
	stop                                   stringList
}

func (pf *policyFlags) register(fs *flag.FlagSet) {
	d := sample.Defaults()
	fs.Float64Var(&pf.temperature, "temperature", float64(d.Temperature), "sampling temperature (0: greedy argmax)")
	fs.IntVar(&pf.topK, "top-k", d.TopK, "keep the k most likely tokens (0: all)")
	fs.Float64Var(&pf.topP, "top-p", float64(d.TopP), "nucleus: keep the smallest set with probability ≥ p (1: all)")
	fs.Float64Var(&pf.minP, "min-p", float64(d.MinP), "drop tokens below min-p × the top probability (0: off)")
	fs.Float64Var(&pf.repeatPenalty, "repeat-penalty", float64(d.RepetitionPenalty), "repetition penalty over prompt and output (1: off)")
	fs.IntVar(&pf.repeatLastN, "repeat-last-n", d.RepeatLastN, "window of the repetition penalty in tokens")
	fs.Float64Var(&pf.presence, "presence-penalty", 0, "OpenAI presence penalty over the output")
	fs.Float64Var(&pf.frequency, "frequency-penalty", 0, "OpenAI frequency penalty over the output")
	fs.Int64Var(&pf.seed, "seed", -1, "RNG seed (-1: random, reported in --json)")
	fs.IntVar(&pf.maxTokens, "max-tokens", 0, "maximum tokens to generate (0: until the context is full)")
	fs.BoolVar(&pf.ignoreEOS, "ignore-eos", false, "do not stop at end-of-generation tokens")
	fs.Var(&pf.stop, "stop", "stop string (repeatable); never emitted")
	fs.IntVar(&pf.logprobs, "logprobs", -1, "report log-probabilities with N alternatives per token (-1: off)")
	fs.BoolVar(&pf.special, "special", false, "print control tokens (end of text, FIM markers, ...) as text; off, they are never shown")
}

// policy builds the declared sampling policy, starting from the model's
// generation_config defaults for the flags the user did not set.
func (pf *policyFlags) policy(fs *flag.FlagSet, modelDefaults []byte) (sample.Policy, error) {
	switch {
	case pf.seed < -1:
		return sample.Policy{}, errFlag("seed", pf.seed, "want a seed >= 0 (-1: random)")
	case pf.logprobs < -1:
		return sample.Policy{}, errFlag("logprobs", pf.logprobs, "want a number of alternatives >= 0 (-1: off)")
	}
	p := sample.Defaults()
	if len(modelDefaults) > 0 {
		if g, _, err := sample.FromGenerationConfig(modelDefaults); err == nil {
			p = g
		}
	}
	apply := func(name string, fn func()) {
		if flagSet(fs, name) || len(modelDefaults) == 0 {
			fn()
		}
	}
	apply("temperature", func() { p.Temperature = float32(pf.temperature) })
	apply("top-k", func() { p.TopK = pf.topK })
	apply("top-p", func() { p.TopP = float32(pf.topP) })
	apply("min-p", func() { p.MinP = float32(pf.minP) })
	apply("repeat-penalty", func() { p.RepetitionPenalty = float32(pf.repeatPenalty) })
	apply("repeat-last-n", func() { p.RepeatLastN = pf.repeatLastN })
	p.PresencePenalty, p.FrequencyPenalty = float32(pf.presence), float32(pf.frequency)
	apply("max-tokens", func() { p.MaxTokens = pf.maxTokens })
	p.IgnoreEOS = pf.ignoreEOS
	p.Stop = append([]string(nil), pf.stop...)
	if pf.seed >= 0 {
		s := uint64(pf.seed)
		p.Seed = &s
	}
	if pf.logprobs >= 0 {
		n := pf.logprobs
		p.Logprobs = &n
	}
	return p, p.Validate()
}

func runGenerate(args []string) error {
	fs := newFlags("generate")
	var mf modelFlags
	var pf policyFlags
	var sf specFlags
	mf.register(fs)
	pf.register(fs)
	sf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object (ids, text, finish_reason, timings) instead of streaming text")
	verbose := fs.Bool("verbose", false, "print timings to stderr after streaming")
	parseSpecial := fs.Bool("parse-special", false, "treat special-token text in the prompt as special tokens")
	healing := fs.Bool("token-healing", false, "token healing: re-generate the prompt's last token so a prompt cut inside a token\n"+
		"(\"if err != nil {\" where the model knows \" {\\n\") continues as the model would have written it;\n"+
		"the output never repeats the prompt's text (default: on for the built-in autocomplete model, off\n"+
		"for --model, where prompts are taken token for token as llama.cpp does)")
	schemaPath := fs.String("json-schema", "", "constrain the output to JSON valid under this JSON Schema file")
	grammarPath := fs.String("grammar", "", "constrain the output to this GBNF grammar file (llama.cpp's format, start rule root)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nanoserve generate [flags] PROMPT   (an empty PROMPT starts a document: BOS, else end-of-text)")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return fmt.Errorf("want one PROMPT argument, got %d (quote the prompt)", len(pos))
	}
	prompt := ""
	if len(pos) == 1 {
		prompt = pos[0]
	}
	if err := sf.check(); err != nil {
		return err
	}
	m, err := mf.load()
	if err != nil {
		return err
	}
	defer m.Close()
	pol, err := pf.policy(fs, m.Gen.Sampling)
	if err != nil {
		return err
	}
	var block *defaultmodel.BlockStop
	if mf.model == "" {
		builtinPolicy(fs, &pol) // the built-in completion model's policy
		block = defaultmodel.NewBlockStop(prompt)
	}
	spec, closeDraft, err := sf.options(&mf, m, mf.ctxSize)
	if err != nil {
		return err
	}
	defer closeDraft()
	eng, err := engine.New(m, engine.Options{CtxSize: mf.ctxSize, Spec: spec, KVType: mf.kv})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	heal := *healing
	if !flagSet(fs, "token-healing") && mf.model == "" {
		heal = true // the built-in model is for autocomplete: prompts end mid-token
	}
	req := engine.Request{Prompt: prompt, ParseSpecial: *parseSpecial, Policy: pol, TokenHealing: heal, Special: pf.special, NonEmpty: block != nil}
	if err := console.Constrain(eng, &req, *schemaPath, *grammarPath); err != nil {
		return err
	}

	var cut func(string) (string, bool)
	if block != nil {
		cut = block.Cut
	}
	return console.Generate(ctx, eng, req, console.GenerateOptions{JSON: *asJSON, Verbose: *verbose, Cut: cut}, os.Stdout, os.Stderr)
}

// builtinPolicy applies the built-in model's completion policy to p for
// the flags of fs the user did not set.
func builtinPolicy(fs *flag.FlagSet, p *sample.Policy) {
	d := defaultmodel.Policy()
	if !flagSet(fs, "temperature") {
		p.Temperature = d.Temperature
	}
	if !flagSet(fs, "frequency-penalty") {
		p.FrequencyPenalty = d.FrequencyPenalty
	}
	if !flagSet(fs, "max-tokens") {
		p.MaxTokens = defaultmodel.MaxTokens
	}
}

// flagSet reports whether the command line set the named flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
