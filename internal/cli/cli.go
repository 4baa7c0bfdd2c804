// Package cli is the subcommand convention of the nanoserve binary: one
// program, one flag set per command, and mistakes answered in one line.
//
// An App maps command names to Commands. Run dispatches its arguments'
// first word ("help COMMAND" and "COMMAND -h" print the command's usage on
// stdout, exit 0); a command's flag set (Flags) reports its errors instead
// of exiting, so Run can replace package flag's usage dump with one line
// on stderr naming the closest flag or command (edit distance) and how to
// get help (exit 2); any other error is "nanoserve COMMAND: error" (exit
// 1). ParseInterspersed lets flags come before, between or after a
// command's positional arguments.
package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

// Command is one subcommand: it parses its own flags from args.
type Command struct {
	Summary string
	Run     func(args []string) error
}

// App is a program of subcommands.
type App struct {
	Name     string
	Commands map[string]Command
	// Args are each command's positional arguments, for the usage line
	// of the commands whose flag set prints the default usage; Summaries
	// the one-line summaries of commands not in Commands ("bench serve").
	Args, Summaries map[string]string
	// Help replaces a command's default usage text (usage line, summary,
	// "flags:"): its flag set prints it, a newline, then the flags.
	Help map[string]string

	flagOut   bytes.Buffer  // what the flag sets print (usage, parse errors)
	lastFlags *flag.FlagSet // the latest flag set made (for flag suggestions)
}

// Usage lists the commands.
func (a *App) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s COMMAND [flags] [args]\n\ncommands:\n", a.Name)
	names := make([]string, 0, len(a.Commands))
	for n := range a.Commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, a.Commands[n].Summary)
	}
	fmt.Fprintf(w, "\nrun '%s help COMMAND' (or '%s COMMAND -h') for a command's arguments and flags\n", a.Name, a.Name)
}

// Run runs the command args name and returns the exit code. A command's
// usage (help, -h) goes to stdout; a mistake (an unknown command or flag)
// is one line on stderr with the closest name and how to get help.
func (a *App) Run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		a.Usage(stderr)
		return 2
	}
	name := args[0]
	rest := args[1:]
	switch name {
	case "-h", "--help", "-help":
		a.Usage(stdout)
		return 0
	case "help":
		if len(rest) == 0 {
			a.Usage(stdout)
			return 0
		}
		name, rest = rest[0], []string{"-h"}
	case "--version", "-version":
		name = "version"
	}
	cmd, ok := a.Commands[name]
	if !ok {
		names := make([]string, 0, len(a.Commands))
		for n := range a.Commands {
			names = append(names, n)
		}
		fmt.Fprintf(stderr, "%s: unknown command %q%s; run '%s help' for the list\n", a.Name, name, didYouMean(name, names, ""), a.Name)
		return 2
	}
	a.flagOut.Reset()
	a.lastFlags = nil
	err := cmd.Run(rest)
	if errors.Is(err, flag.ErrHelp) {
		stdout.Write(a.flagOut.Bytes())
		return 0
	}
	if err != nil {
		msg := err.Error()
		if a.lastFlags != nil && isFlagError(msg) {
			if f, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
				var names []string
				a.lastFlags.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
				msg = "unknown flag " + f + didYouMean(strings.TrimLeft(f, "-"), names, "--")
			}
			fmt.Fprintf(stderr, "%s %s: %s; run '%s help %s' for usage\n", a.Name, name, msg, a.Name, name)
			return 2
		}
		fmt.Fprintf(stderr, "%s %s: %v\n", a.Name, name, err)
		return 1
	}
	return 0
}

// Flags returns a flag set for a subcommand that reports errors instead
// of exiting, so Run prints them uniformly. Its default usage names the
// command's positional arguments (Args); commands with more to say set
// their own.
func (a *App) Flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(a.Name+" "+name, flag.ContinueOnError)
	fs.SetOutput(&a.flagOut)
	fs.Usage = func() {
		if u, ok := a.Help[name]; ok {
			fmt.Fprintln(fs.Output(), u)
			fs.PrintDefaults()
			return
		}
		line := "usage: " + a.Name + " " + name + " [flags]"
		if arg := a.Args[name]; arg != "" {
			line += " " + arg
		}
		summary := a.Summaries[name]
		if c, ok := a.Commands[name]; ok {
			summary = c.Summary
		}
		fmt.Fprintf(fs.Output(), "%s\n\n%s\n\nflags:\n", line, summary)
		fs.PrintDefaults()
	}
	a.lastFlags = fs
	return fs
}

// isFlagError reports whether msg is one of package flag's parse errors.
func isFlagError(msg string) bool {
	for _, p := range []string{"flag provided but not defined: ", "flag needs an argument: ", "invalid value ", "invalid boolean value ", "bad flag syntax: "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// didYouMean returns " (did you mean PREFIX+NAME?)" for the name closest
// to s by edit distance (at most a third of s's length plus one), or "".
func didYouMean(s string, names []string, prefix string) string {
	best, bestD := "", len(s)/3+2
	sort.Strings(names)
	for _, n := range names {
		if d := EditDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + prefix + best + "?)"
}

// EditDistance is the Levenshtein distance between a and b (bytes).
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ParseInterspersed parses flags that may appear before or after
// positional arguments ("generate PROMPT --max-tokens 5" and "generate
// --max-tokens 5 PROMPT" both work). A lone "--" ends flag parsing.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// VersionCommand is a command that takes no arguments and prints the
// version line (Version of *version and *commit, read when it runs).
func (a *App) VersionCommand(summary string, version, commit *string) Command {
	return Command{Summary: summary, Run: func(args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("version takes no arguments, got %q", args[0])
		}
		fmt.Println(a.Version(*version, *commit))
		return nil
	}}
}

// Version is the program's version line: NAME VERSION (commit REV[+dirty],
// TIME) GO OS/ARCH. version "dev" gives way to the module version go
// install records; the commit comes from the VCS stamp go build writes
// into the binary (debug.ReadBuildInfo), "unknown" when it was built
// without one (go run, go test, -buildvcs=false), and commit, if set (at
// build time with -ldflags -X), replaces it.
func (a *App) Version(version, commit string) string {
	v, rev, at, dirty := version, "unknown", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = ", " + s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty {
		rev += "+dirty"
	}
	if commit != "" {
		rev = commit
	}
	return fmt.Sprintf("%s %s (commit %s%s) %s %s/%s", a.Name, v, rev, at, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
