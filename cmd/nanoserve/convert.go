package main

import "errors"

func runConvert(args []string) error { return errors.New("not implemented yet") }
