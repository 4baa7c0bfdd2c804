package main

// nanoserve version (also --version): the release, the commit it was built
// from and the Go toolchain.

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3"; else the module version go install
// records, else "dev".
var version = "dev"

// commit, if set at build time (-ldflags "-X main.commit=$(git rev-parse
// HEAD)"), names the commit when the binary has no VCS stamp (go builds
// in a git worktree, or with -buildvcs=false, record none).
var commit = ""

// versionString is one line: nanoserve VERSION (commit REV[+dirty], TIME) GO OS/ARCH
// (cli.App.Version).
func versionString() string { return app.Version(version, commit) }
