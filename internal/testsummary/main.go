// Command testsummary reads `go test -json` output and prints what a person
// needs from it: the usual one line per package (ok / FAIL / no test files),
// the full output of every failed test, the number of tests passed, failed
// and skipped, and why tests skipped, grouped by reason. test.sh uses it so
// that its closing line counts tests, not packages, and a suite that mostly
// skipped (no ../shared, say) says so instead of looking green.
//
//	go test -json ./... | go run ./internal/testsummary -counts FILE
//
// -counts writes "PASSED FAILED SKIPPED" to FILE for the calling script,
// -skips the skip groups.
// The exit status is 1 when a test or a package failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// Summary is what the stream said.
type Summary struct {
	Passed, Failed, Skipped int
	PackagesFailed          int
	Skips                   map[string][]string // reason -> "pkg.Test" names
}

var fileLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// Summarize reads the JSON stream and writes the human lines to w.
func Summarize(r io.Reader, w io.Writer) (Summary, error) {
	s := Summary{Skips: map[string][]string{}}
	out := map[string][]string{} // "pkg\x00Test" -> output lines
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // build errors and the like come as plain text
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			if e.Test == "" {
				// Package-level lines: keep the usual ok/FAIL/--- lines.
				if strings.HasPrefix(e.Output, "ok ") || strings.HasPrefix(e.Output, "FAIL") ||
					strings.HasPrefix(e.Output, "?") || strings.HasPrefix(e.Output, "panic") {
					fmt.Fprint(w, e.Output)
				}
				continue
			}
			out[key] = append(out[key], e.Output)
		case "pass":
			if e.Test != "" {
				s.Passed++
			}
			delete(out, key)
		case "fail":
			if e.Test == "" {
				s.PackagesFailed++
				continue
			}
			s.Failed++
			for _, l := range out[key] {
				fmt.Fprint(w, l)
			}
			delete(out, key)
		case "skip":
			if e.Test == "" {
				continue
			}
			s.Skipped++
			reason := skipReason(out[key])
			s.Skips[reason] = append(s.Skips[reason], shortPkg(e.Package)+"."+e.Test)
			delete(out, key)
		}
	}
	return s, sc.Err()
}

// skipReason is the message t.Skip printed: the last "file.go:NN: msg"
// line of the test's output, without the location.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if loc := fileLine.FindString(lines[i]); loc != "" {
			return strings.TrimSpace(lines[i][len(loc):])
		}
	}
	return "(no reason given)"
}

func shortPkg(p string) string { return strings.TrimPrefix(p, "nanoserve/") }

// PrintSkips writes one group per reason, largest first.
func PrintSkips(w io.Writer, s Summary) {
	reasons := make([]string, 0, len(s.Skips))
	for r := range s.Skips {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if a, b := len(s.Skips[reasons[i]]), len(s.Skips[reasons[j]]); a != b {
			return a > b
		}
		return reasons[i] < reasons[j]
	})
	for _, r := range reasons {
		names := s.Skips[r]
		shown := names
		if len(shown) > 4 {
			shown = shown[:4]
		}
		more := ""
		if len(names) > len(shown) {
			more = fmt.Sprintf(", ... %d more", len(names)-len(shown))
		}
		fmt.Fprintf(w, "  %4d skipped: %s (%s%s)\n", len(names), r, strings.Join(shown, ", "), more)
	}
}

func main() {
	counts := flag.String("counts", "", "write \"PASSED FAILED SKIPPED\" to this file")
	skips := flag.String("skips", "", "also write the skip groups to this file")
	flag.Parse()
	s, err := Summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	fmt.Printf("tests: %d passed, %d failed, %d skipped\n", s.Passed, s.Failed, s.Skipped)
	PrintSkips(os.Stdout, s)
	if *skips != "" {
		var b strings.Builder
		PrintSkips(&b, s)
		if err := os.WriteFile(*skips, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
	}
	if *counts != "" {
		if err := os.WriteFile(*counts, fmt.Appendf(nil, "%d %d %d\n", s.Passed, s.Failed, s.Skipped), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
	}
	if s.Failed > 0 || s.PackagesFailed > 0 {
		os.Exit(1)
	}
}
