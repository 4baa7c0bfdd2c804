package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"nanoserve/tensor"
	"nanoserve/train"
)

// runTrain trains a small Llama from scratch (see package train) and
// promotes it to --out only past the release gate.
func runTrain(args []string) error {
	o, err := parseTrainFlags(args)
	if err != nil {
		return err
	}
	o.Log = os.Stderr
	o.Command = "nanoserve train " + strings.Join(args, " ")
	rep, err := train.Run(o)
	if err != nil {
		return err
	}
	fmt.Printf("%s: held-out %.4f bits/byte, KN trigram baseline %.4f, %.0f tokens/s\n",
		o.Out, rep.HeldOutBPB, rep.BaselineBPB, rep.TokensPerSec)
	return nil
}

// parseTrainFlags turns train's command line into the run's options,
// refusing a flag no run can use before anything is read.
func parseTrainFlags(args []string) (train.Options, error) {
	fs := newFlags("train")
	var o train.Options
	o.RegisterFlags(fs)
	dtype := fs.String("dtype", "f16", "weight type of the written matrices: f16 or f32")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := o.Check(); err != nil {
		return o, err
	}
	if len(o.Corpus) == 0 {
		o.Corpus = append(o.Corpus, fs.Args()...)
	}
	if len(o.Corpus) == 0 || o.Out == "" {
		return o, errors.New("need --corpus PATH... and --out MODEL.gguf")
	}
	switch strings.ToLower(*dtype) {
	case "f16":
		o.WeightType = tensor.F16
	case "f32":
		o.WeightType = tensor.F32
	default:
		return o, fmt.Errorf("--dtype %q: want f16 or f32", *dtype)
	}
	o.Progress = !*quiet
	return o, nil
}
