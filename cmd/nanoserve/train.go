package main

import (
	"fmt"
	"os"
	"strings"

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
	var f train.Flags
	f.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return f.Options, err
	}
	err := f.Check(fs.Args())
	return f.Options, err
}
