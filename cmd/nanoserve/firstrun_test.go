package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"nanoserve/defaultmodel"
)

// readmePrompt is the prompt of the README's first command.
const readmePrompt = "if err != nil {"

// controlText matches the text of any control token the built-in model
// has (<|endoftext|>, <|fim_prefix|>, ...).
var controlText = regexp.MustCompile(`<\|[a-z_]+\|>`)

// checkGoCompletion asserts what the proof asks of a completion
// of prompt: non-empty, no control-token text, valid UTF-8; and, when
// parse is set, that it parses as Go inside a function once the braces it
// leaves open are closed. It returns whether it parsed.
func checkGoCompletion(t *testing.T, what, prompt, out string, parse bool) bool {
	t.Helper()
	if strings.TrimSpace(out) == "" {
		t.Errorf("%s: empty completion %q", what, out)
	}
	if m := controlText.FindString(out); m != "" {
		t.Errorf("%s: control token %s in %q", what, m, out)
	}
	if !utf8.ValidString(out) {
		t.Errorf("%s: invalid UTF-8 in %q", what, out)
	}
	src := "package p; func _() {" + prompt + out
	src += "\n" + strings.Repeat("}\n", max(defaultmodel.OpenBlocks(src), 0))
	_, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if parse && err != nil {
		t.Errorf("%s: %q does not parse: %v\n%s", what, out, err, src)
	}
	return err == nil
}

// TestFirstRunGenerate is the README's first command, as a new user runs
// it, 50 times with different seeds: with the built-in model's default
// policy (greedy: every seed gives the same completion) and at T = 1.
func TestFirstRunGenerate(t *testing.T) {
	if _, err := builtinModelPath(); err != nil {
		t.Skip("no built-in model in this build")
	}
	runs := 50
	if testing.Short() {
		runs = 5
	}
	parsedT1 := 0
	for seed := range runs {
		for _, temp := range []string{"", "1"} {
			args := []string{"generate", "--seed", fmt.Sprint(seed)}
			if temp != "" {
				args = append(args, "--temperature", temp, "--max-tokens", "64")
			}
			args = append(args, readmePrompt)
			var errb strings.Builder
			out, err := captureStdout(t, func() error {
				if code := run(args, io.Discard, &errb); code != 0 {
					return fmt.Errorf("exit %d: %s", code, errb.String())
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%q: %v", args, err)
			}
			out = strings.TrimSuffix(out, "\n") // generate ends the output with a newline
			if checkGoCompletion(t, fmt.Sprint(args), readmePrompt, out, temp == "") && temp != "" {
				parsedT1++
			}
		}
	}
	t.Logf("T = 1: %d of %d completions parse", parsedT1, runs)
}
