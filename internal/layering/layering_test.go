package layering

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// moduleRoot walks up from the test's folder to go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = up
	}
}

// arrows parses DESIGN.md's dependency block: for each package named on
// the left of a line, its stated imports (nil: not stated exactly).
func arrows(t *testing.T, design string) map[string][]string {
	t.Helper()
	_, rest, ok := strings.Cut(design, "Dependencies point one way")
	if !ok {
		t.Fatal("DESIGN.md has no \"Dependencies point one way\" paragraph")
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("DESIGN.md's dependency block is not closed")
	}
	comment := regexp.MustCompile(`\([^)]*\)`)
	name := regexp.MustCompile(`^[a-z0-9/_]+$`)
	list := func(s string) ([]string, bool) {
		var out []string
		for f := range strings.SplitSeq(s, ",") {
			f = strings.TrimSpace(f)
			if !name.MatchString(f) || f == "everything" {
				return nil, false
			}
			out = append(out, f)
		}
		return out, true
	}
	out := map[string][]string{}
	for line := range strings.SplitSeq(block, "\n") {
		for stmt := range strings.SplitSeq(comment.ReplaceAllString(line, ""), ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			left, right, arrow := strings.Cut(stmt, "←")
			pkgs, ok := list(left)
			if !ok {
				t.Fatalf("DESIGN.md arrow %q: the left side is not a list of packages", strings.TrimSpace(stmt))
			}
			imps := []string{}
			exact := true
			if arrow {
				imps, exact = list(right)
			}
			for _, p := range pkgs {
				if _, dup := out[p]; dup {
					t.Errorf("DESIGN.md names %s on the left of two arrows", p)
				}
				if exact {
					out[p] = imps
				} else {
					out[p] = nil
				}
			}
		}
	}
	return out
}

// TestDesignArrows: DESIGN.md's arrows are the packages' imports.
func TestDesignArrows(t *testing.T) {
	root := moduleRoot(t)
	design, err := os.ReadFile(filepath.Join(root, "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	stated := arrows(t, string(design))
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "nanoserve/"
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(f[0], mod)
		var imps []string
		for _, imp := range f[1:] {
			if p, ok := strings.CutPrefix(imp, mod); ok {
				imps = append(imps, p)
			}
		}
		slices.Sort(imps)
		want, named := stated[pkg]
		switch {
		case !named && !strings.HasPrefix(pkg, "internal/") && !strings.HasPrefix(pkg, "cmd/") && !strings.Contains(pkg, "/internal/"):
			t.Errorf("package %s is on no line of DESIGN.md's dependency block (it imports %v)", pkg, imps)
		case named && want != nil:
			w := slices.Sorted(slices.Values(want))
			if !slices.Equal(imps, w) {
				t.Errorf("%s imports %v; DESIGN.md says %v", pkg, imps, w)
			}
		}
	}
}
