package main

import "errors"

func runTrain(args []string) error { return errors.New("not implemented yet") }
