package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the CLI golden files")

// threadsDefault is the one machine-dependent default in a usage text.
var threadsDefault = regexp.MustCompile(`worker threads \(default \d+\)`)

// TestCLIGolden: `nanoserve help generate` prints generate's usage (its
// PROMPT argument and flags) on stdout, as `generate -h` does; a mistyped
// flag or command is one line on stderr naming the closest one and how to
// get help. The goldens are in testdata (go test -run TestCLIGolden
// -update rewrites them).
func TestCLIGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
		code   int
		stderr bool
	}{
		{"help-generate.golden", []string{"help", "generate"}, 0, false},
		{"help-generate.golden", []string{"generate", "-h"}, 0, false},
		{"typo-flag.golden", []string{"generate", "--temprature", "0", "x"}, 2, true},
		{"typo-command.golden", []string{"genrate", "x"}, 2, true},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		got := out.Bytes()
		if c.stderr {
			got = errb.Bytes()
			if out.Len() != 0 {
				t.Errorf("%q wrote to stdout: %q", c.args, out.String())
			}
		}
		got = threadsDefault.ReplaceAll(got, []byte("worker threads (default N)"))
		path := filepath.Join("testdata", c.golden)
		if *updateGolden {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !bytes.Equal(got, want) {
			t.Errorf("nanoserve %q: exit %d (want %d), output\n%s\nwant\n%s", c.args, code, c.code, got, want)
		}
	}
}
