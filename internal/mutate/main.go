// Command mutate is a small mutation tester: it applies one deliberate bug
// (a mutant) at a time to a scratch copy of the tree, runs the tests of
// the package that owns the code, and reports whether a test failed
// (killed) or every test passed (survived). A surviving mutant is a bug
// the tests would let through.
//
// It is a developer tool, not part of CI:
//
//	go run ./internal/mutate                      # every mutant in mutants.txt
//	go run ./internal/mutate -only kvcache-       # mutants whose name contains a string
//	go run ./internal/mutate -list other.txt -timeout 15m
//	go run ./internal/mutate -rev e0122bd         # the tree of a commit (are they survivors there?)
//
// A mutant is the exact text old in one file replaced by new; old must
// occur exactly once, so a mutant that no longer applies (the code moved)
// is reported, never silently skipped. The list format (mutants.txt):
//
//	=== name
//	file: path/in/the/module.go
//	pkg: ./package/ [./other/]   (the packages whose tests run)
//	run: TestA|TestB             (optional: go test -run, also for the baseline)
//	--- old
//	text, verbatim (tabs and all), as many lines as needed
//	+++ new
//	replacement text
//
// Lines starting with "#" between mutants are comments. The scratch copy
// (the worktree's tracked and untracked, non-ignored files, or with -rev
// a commit's tree) lives in one fixed directory beside a link to shared/,
// so the test data is found and the build cache (-trimpath) is reused from
// one mutant to the next. The unmutated tree's tests must pass first
// (-baseline=false skips that). Each mutant is built untimed (go test -run
// '^$': a mutant that does not compile is reported, not counted as
// killed), then its packages' tests run once under the timeout (a timeout
// counts as killed: the mutant hangs). Run it with the machine otherwise
// quiet, one mutant at a time (-p 1 by default).
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"nanoserve/internal/testshared"
)

// mutant is one deliberate bug.
type mutant struct {
	name, file, run string
	pkgs            []string
	old, new        string
}

func main() {
	list := flag.String("list", "internal/mutate/mutants.txt", "mutant list (relative to the module root)")
	only := flag.String("only", "", "run only mutants whose name contains this")
	scratch := flag.String("scratch", filepath.Join(os.TempDir(), "nanoserve-mutate"), "scratch directory (reused)")
	timeout := flag.Duration("timeout", 10*time.Minute, "per-mutant test timeout (a timeout counts as killed)")
	par := flag.Int("p", 1, "go test -p (packages built and tested in parallel)")
	rev := flag.String("rev", "", "test the tree of this commit instead of the worktree")
	baseline := flag.Bool("baseline", true, "first check that the unmutated tree passes")
	flag.Parse()
	if err := run(*list, *only, *scratch, *rev, *baseline, *timeout, *par); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func run(list, only, scratch, rev string, baseline bool, timeout time.Duration, par int) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	src, err := os.ReadFile(filepath.Join(root, list))
	if err != nil {
		return err
	}
	ms, err := parse(string(src))
	if err != nil {
		return err
	}
	tree, err := copyTree(root, scratch, rev)
	if err != nil {
		return err
	}
	if baseline {
		// The unmutated tree must pass, or every mutant would look killed.
		// A package runs the tests its mutants name (run:), all of them
		// if one of its mutants names none.
		var pkgs []string
		runs := map[string][]string{}
		for _, m := range ms {
			if only == "" || strings.Contains(m.name, only) {
				for _, p := range m.pkgs {
					if !slices.Contains(pkgs, p) {
						pkgs = append(pkgs, p)
					}
					if r := runs[p]; !slices.Contains(r, m.run) {
						runs[p] = append(r, m.run)
					}
				}
			}
		}
		for _, p := range pkgs {
			args := []string{"test", "-count=1", "-trimpath", fmt.Sprintf("-p=%d", par)}
			if r := runs[p]; !slices.Contains(r, "") {
				args = append(args, "-run", strings.Join(r, "|"))
			}
			cmd := exec.Command("go", append(args, p)...)
			cmd.Dir = tree
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("the unmutated tree fails its tests (%s %s): %s", p, failing(out), out)
			}
		}
		fmt.Printf("baseline: %s pass unmutated\n", strings.Join(pkgs, " "))
	}
	var killed, survived, broken int
	fmt.Printf("%-34s %-9s %8s  %s\n", "mutant", "result", "seconds", "failing tests")
	for _, m := range ms {
		if only != "" && !strings.Contains(m.name, only) {
			continue
		}
		res, detail, secs := try(tree, m, timeout, par)
		switch res {
		case "killed":
			killed++
		case "SURVIVED":
			survived++
		default:
			broken++
		}
		fmt.Printf("%-34s %-9s %8.1f  %s\n", m.name, res, secs, detail)
	}
	fmt.Printf("killed %d, survived %d, not applicable %d\n", killed, survived, broken)
	if survived+broken > 0 {
		return errors.New("some mutants survived or did not apply")
	}
	return nil
}

// try applies m in tree, runs its packages' tests and restores the file.
func try(tree string, m mutant, timeout time.Duration, par int) (result, detail string, secs float64) {
	path := filepath.Join(tree, m.file)
	orig, err := os.ReadFile(path)
	if err != nil {
		return "ERROR", err.Error(), 0
	}
	if n := strings.Count(string(orig), m.old); n != 1 {
		return "ERROR", fmt.Sprintf("old text occurs %d times in %s (want once)", n, m.file), 0
	}
	mut := strings.Replace(string(orig), m.old, m.new, 1)
	if err := os.WriteFile(path, []byte(mut), 0o644); err != nil {
		return "ERROR", err.Error(), 0
	}
	defer os.WriteFile(path, orig, 0o644)

	// Build first, untimed (running no test): compiling a package and its
	// tests can take minutes on a loaded machine and is not the tests' time.
	build := exec.Command("go", append([]string{"test", "-count=1", "-trimpath", "-run", "^$"}, m.pkgs...)...)
	build.Dir = tree
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "ERROR", "the mutant does not build: " + firstLine(out), 0
	}
	args := []string{"test", "-count=1", "-trimpath", fmt.Sprintf("-p=%d", par)}
	if m.run != "" {
		args = append(args, "-run", m.run)
	}
	args = append(args, m.pkgs...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	secs = time.Since(start).Seconds()
	switch {
	case ctx.Err() != nil:
		return "killed", "(timed out)", secs
	case err == nil:
		return "SURVIVED", "", secs
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		return "ERROR", "the mutant does not build: " + firstLine(out), secs
	}
	return "killed", failing(out), secs
}

// failing lists the top-level tests that failed in go test output.
func failing(out []byte) string {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutPrefix(line, "--- FAIL: "); ok {
			name, _, _ = strings.Cut(name, " ")
			if !strings.Contains(name, "/") {
				names = append(names, name)
			}
		}
		if strings.HasPrefix(line, "panic: ") && len(names) == 0 {
			names = append(names, "(panic)")
		}
	}
	if len(names) == 0 {
		return "(failed: " + firstLine(out) + ")"
	}
	return strings.Join(names, " ")
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// parse reads the mutant list (format in the package comment).
func parse(src string) ([]mutant, error) {
	var ms []mutant
	blocks := strings.Split("\n"+src, "\n=== ")
	for _, b := range blocks[1:] {
		head, rest, ok := strings.Cut(b, "\n--- old\n")
		if !ok {
			return nil, fmt.Errorf("mutant %q: no \"--- old\" line", firstLine([]byte(b)))
		}
		old, nw, ok := strings.Cut(rest, "\n+++ new\n")
		if !ok {
			return nil, fmt.Errorf("mutant %q: no \"+++ new\" line", firstLine([]byte(b)))
		}
		lines := strings.Split(head, "\n")
		m := mutant{name: strings.TrimSpace(lines[0]), old: old, new: trimComments(nw)}
		for _, l := range lines[1:] {
			k, v, _ := strings.Cut(l, ":")
			v = strings.TrimSpace(v)
			switch strings.TrimSpace(k) {
			case "file":
				m.file = v
			case "pkg":
				m.pkgs = strings.Fields(v)
			case "run":
				m.run = v
			case "":
			default:
				return nil, fmt.Errorf("mutant %q: unknown field %q", m.name, k)
			}
		}
		if m.name == "" || m.file == "" || len(m.pkgs) == 0 || m.old == "" {
			return nil, fmt.Errorf("mutant %q: needs a name, file, pkg and old text", m.name)
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, errors.New("no mutants in the list")
	}
	return ms, nil
}

// trimComments drops the "#" comment lines and blank lines that follow a
// mutant's new text before the next mutant.
func trimComments(s string) string {
	lines := strings.Split(s, "\n")
	for len(lines) > 1 {
		l := strings.TrimSpace(lines[len(lines)-1])
		if l != "" && !strings.HasPrefix(l, "#") {
			break
		}
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", errors.New("no go.mod above the working directory")
		}
		d = p
	}
}

// copyTree copies the worktree's files (tracked and untracked, not
// ignored), or with rev that commit's tree, to scratch/tree, replacing
// what was there, and links scratch/shared to the shared test data.
func copyTree(root, scratch, rev string) (string, error) {
	tree := filepath.Join(scratch, "tree")
	if err := os.RemoveAll(tree); err != nil {
		return "", err
	}
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return "", err
	}
	if err := linkShared(scratch); err != nil {
		return "", err
	}
	if rev != "" {
		cmd := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, rev, tree)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git archive %s: %v: %s", rev, err, out)
		}
		return tree, nil
	}
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git ls-files: %v", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if rel == "" {
			continue
		}
		if err := copyFile(filepath.Join(root, rel), filepath.Join(tree, rel)); err != nil {
			return "", err
		}
	}
	return tree, nil
}

// linkShared points scratch/shared at the shared test data, where the
// tests of scratch/tree look for it.
func linkShared(scratch string) error {
	shared, ok := testshared.Find()
	if !ok {
		return nil // the tests skip what needs it
	}
	link := filepath.Join(scratch, "shared")
	os.Remove(link)
	return os.Symlink(shared, link)
}

func copyFile(src, dst string) error {
	st, err := os.Lstat(src)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // deleted in the worktree, not yet in the index
		}
		return err
	}
	if !st.Mode().IsRegular() {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
