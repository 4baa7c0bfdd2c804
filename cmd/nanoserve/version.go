package main

// nanoserve version (also --version): the release, the commit it was built
// from and the Go toolchain.

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3"; else the module version go install
// records, else "dev".
var version = "dev"

// commit, if set at build time (-ldflags "-X main.commit=$(git rev-parse
// HEAD)"), names the commit when the binary has no VCS stamp (go builds
// in a git worktree, or with -buildvcs=false, record none).
var commit = ""

// versionString is one line: nanoserve VERSION (commit REV[+dirty], TIME) GO OS/ARCH.
// The commit comes from the VCS stamp go build writes into the binary
// (debug.ReadBuildInfo); "unknown" when it was built without one (go run,
// go test, -buildvcs=false).
func versionString() string {
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
	return fmt.Sprintf("nanoserve %s (commit %s%s) %s %s/%s", v, rev, at, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func runVersion(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("version takes no arguments, got %q", args[0])
	}
	fmt.Println(versionString())
	return nil
}
