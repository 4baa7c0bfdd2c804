package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// test.sh's gofmt step was `test -z "$(gofmt -l . | tee /dev/stderr)"`: tee
// opens /dev/stderr afresh, truncating a log that stdout and stderr share
// (`./test.sh > log 2>&1`), so the log began with NUL bytes. The step, run
// as test.sh runs it into such a log, leaves the log clean, and still
// fails naming an unformatted file.
func TestTestShGofmtStepLog(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("gofmt"); err != nil {
		t.Skip("no gofmt")
	}
	src, err := os.ReadFile("../../test.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "echo \"== gofmt\"\n")
	step, _, ok2 := strings.Cut(rest, "echo \"== tests\"")
	if !ok || !ok2 {
		t.Fatal("test.sh has no gofmt step between \"== gofmt\" and \"== tests\"")
	}
	for _, c := range []struct {
		name, file string
		fail       bool
	}{{"formatted", "package x\n", false}, {"unformatted", "package  x\n", true}} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(c.file), 0o644); err != nil {
			t.Fatal(err)
		}
		script := "set -euo pipefail\necho '== before'\n" + step + "echo '== after'\n"
		cmd := exec.Command(bash, "-c", "bash -c \"$0\" > log 2>&1", script)
		cmd.Dir = dir
		runErr := cmd.Run()
		log, err := os.ReadFile(filepath.Join(dir, "log"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(log, 0) >= 0 {
			t.Errorf("%s: the log holds NUL bytes: %q", c.name, log)
		}
		if !bytes.HasPrefix(log, []byte("== before\n")) {
			t.Errorf("%s: the log lost its start: %q", c.name, log)
		}
		if c.fail != (runErr != nil) || c.fail && !bytes.Contains(log, []byte("x.go")) || !c.fail && !bytes.Contains(log, []byte("== after")) {
			t.Errorf("%s: err %v, log %q", c.name, runErr, log)
		}
	}
}
