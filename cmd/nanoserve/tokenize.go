package main

import "errors"

func runTokenize(args []string) error { return errors.New("not implemented yet") }

func runDetokenize(args []string) error { return errors.New("not implemented yet") }
