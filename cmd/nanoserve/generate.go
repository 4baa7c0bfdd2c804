package main

import "errors"

func runGenerate(args []string) error { return errors.New("not implemented yet") }
