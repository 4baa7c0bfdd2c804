package main

import "errors"

func runChat(args []string) error { return errors.New("not implemented yet") }
