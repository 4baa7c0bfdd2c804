package train

import (
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"nanoserve/gguf"
)

// A manifest travels with the model file, so it names no path of the
// machine that trained it. PortablePaths rewrites every absolute path in a
// manifest string: one inside the Go tree as $GOROOT/… (the Go standard
// library is the built-in model's corpus root), one inside the repository
// (the module holding the working directory) relative to its root, and
// any other (a scratch file of the training run) as its base name.

// absPath matches an absolute path: a slash after the start, a space, an
// equals sign or an opening parenthesis, then non-space characters.
var absPath = regexp.MustCompile(`(^|[\s=(])(/[^\s,;)]*)`)

// PortablePaths returns s with its absolute paths made portable (see
// above), rooted at goroot and repo ("" skips that rule).
func PortablePaths(s, goroot, repo string) string {
	return absPath.ReplaceAllStringFunc(s, func(m string) string {
		i := strings.IndexByte(m, '/')
		lead, p := m[:i], filepath.Clean(m[i:])
		for _, r := range []struct{ root, name string }{{goroot, "$GOROOT"}, {repo, "."}} {
			if r.root == "" || r.root == "/" {
				continue
			}
			root := filepath.Clean(r.root)
			if p == root {
				return lead + r.name
			}
			if rel, ok := strings.CutPrefix(p, root+"/"); ok {
				if r.name == "." {
					return lead + rel
				}
				return lead + r.name + "/" + rel
			}
		}
		return lead + filepath.Base(p)
	})
}

// portable is PortablePaths with this machine's Go tree and repository.
func portable(s string) string { return PortablePaths(s, build.Default.GOROOT, repoRoot()) }

// repoRoot is the directory of the go.mod above the working directory,
// or "".
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// manifestStrings are the manifest keys that may hold paths.
var manifestStrings = []string{"corpus", "command", "init_from", "fim_eval", "tokenizer", "hyperparameters"}

// PortableManifest rewrites the path strings of the manifest in the GGUF
// at path with PortablePaths (goroot, repo); every other key and every
// tensor is copied unchanged (for a model trained before train wrote
// portable manifests).
func PortableManifest(path, goroot, repo string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := gguf.NewWriter()
	var keys []string
	vals := map[string]string{}
	for _, k := range manifestStrings {
		if s, err := f.String("nanoserve.train." + k); err == nil {
			keys = append(keys, "nanoserve.train."+k)
			vals["nanoserve.train."+k] = PortablePaths(s, goroot, repo)
		}
	}
	if err := w.AddFile(f, keys...); err != nil {
		return err
	}
	for _, k := range keys {
		if err := w.AddKV(k, gguf.String(vals[k])); err != nil {
			return err
		}
	}
	return w.WriteFile(path)
}
