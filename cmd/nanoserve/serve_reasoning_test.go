package main

import (
	"strings"
	"testing"
)

// Bad reasoning flags fail before any model loads, naming the flag.
func TestServeReasoningFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--reasoning-format", "think"}, "--reasoning-format"},
		{[]string{"--reasoning-budget", "-2"}, "--reasoning-budget"},
		{[]string{"--reasoning", "maybe"}, "--reasoning"},
	} {
		err := runServe(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to name %s", c.args, err, c.want)
		}
	}
}
