package main

import (
	"errors"
	"fmt"
)

// errFlag makes flag validation errors uniform.
func errFlag(name string, v any, want string) error {
	return fmt.Errorf("--%s %v: %s", name, v, want)
}

var errLongCtx = errors.New("pass --allow-long-context to run past it (attention beyond the trained positions degrades)")
