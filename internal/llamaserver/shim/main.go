// Command shim is llama-server's command line in front of `nanoserve serve`,
// for running llama.cpp's server test suite against nanoserve (see
// internal/llamaserver/README.md). The suite starts it through
// $LLAMA_SERVER_BIN_PATH; it translates the arguments
// (llamaserver.Translate) and execs nanoserve, so the suite's signals reach
// the server.
//
// Environment: NANOSERVE_BIN (the nanoserve binary; default: "nanoserve" on
// $PATH), NANOSERVE_SHARED (the ../shared folder; default: found by walking
// up from this binary and the working directory). llama-server's built-in
// chat templates the suite names are written to the temporary folder.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"nanoserve/internal/llamaserver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "shim:", err)
		os.Exit(2)
	}
}

func run() error {
	bin := os.Getenv("NANOSERVE_BIN")
	if bin == "" {
		bin = "nanoserve"
	}
	bin, err := exec.LookPath(bin)
	if err != nil {
		return err
	}
	help, _ := exec.Command(bin, "serve", "-h").CombinedOutput()
	known := llamaserver.ParseHelp(string(help))
	if len(known) == 0 {
		return fmt.Errorf("%s serve -h listed no flags", bin)
	}
	llamaserver.TemplateDir = os.TempDir()
	shared := os.Getenv("NANOSERVE_SHARED")
	if shared == "" {
		shared = findShared()
	}
	t, err := llamaserver.Translate(os.Args[1:], shared, known)
	if err != nil {
		return err
	}
	for _, n := range t.Notes {
		fmt.Fprintln(os.Stderr, "shim: model:", n)
	}
	if len(t.Dropped) > 0 {
		fmt.Fprintln(os.Stderr, "shim: not passed (nanoserve serve has no such flag):", strings.Join(t.Dropped, " "))
	}
	argv := append([]string{bin, "serve"}, t.Args...)
	fmt.Fprintln(os.Stderr, "shim: exec", strings.Join(argv, " "))
	return syscall.Exec(bin, argv, os.Environ())
}

// findShared walks up from the working directory looking for shared/README.md.
func findShared() string {
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, "shared")
		if _, err := os.Stat(filepath.Join(p, "README.md")); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "../shared"
		}
		dir = parent
	}
}
