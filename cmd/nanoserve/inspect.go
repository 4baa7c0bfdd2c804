package main

import "errors"

func runInspect(args []string) error { return errors.New("not implemented yet") }
