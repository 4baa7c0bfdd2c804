package host

// The names served models answer to: a model's file names, the models of a
// folder, aliases.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Served is one model to serve.
type Served struct {
	Path  string   // local path
	Names []string // served name first
	Named bool     // named at start (loaded before the server is ready)
	// Aliases are the names the operator gave the model (--served-name,
	// --alias), as llama-server lists its --alias set; the names derived
	// from the file are not among them. Tags are its --tags.
	Aliases, Tags []string
}

// ListModels adds to out every model in dir ("": none) that out does not
// hold already — GGUF files (the first part of a split one) and Hugging
// Face folders (with a config.json), each named by its file — and then
// keeps each name for the first model that has it: a served name two
// models share is an error.
func ListModels(out []Served, dir string) ([]Served, error) {
	if dir != "" {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("--models-dir: %w", err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				if _, err := os.Stat(filepath.Join(p, "config.json")); err != nil {
					continue
				}
			case strings.EqualFold(filepath.Ext(e.Name()), ".gguf"):
				if m := splitPart.FindStringSubmatch(e.Name()); m != nil && m[1] != "00001" {
					continue // a later part of a split GGUF: its first part loads it
				}
			default:
				continue
			}
			if slices.ContainsFunc(out, func(o Served) bool { return sameFile(o.Path, p) }) {
				continue
			}
			out = append(out, Served{Path: p, Names: Names(filepath.Base(filepath.Clean(p)), p)})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--models-dir %s holds no model (GGUF files or Hugging Face folders)", dir)
	}
	// A name two models share belongs to the first only (two files named
	// alike in different folders); the served name must stay unique.
	seen := map[string]bool{}
	for i := range out {
		if seen[out[i].Names[0]] {
			return nil, fmt.Errorf("two models are served as %q: give one another name with --alias", out[i].Names[0])
		}
		var keep []string
		for _, n := range out[i].Names {
			if !seen[n] {
				seen[n] = true
				keep = append(keep, n)
			}
		}
		out[i].Names = keep
	}
	return out, nil
}

var splitPart = regexp.MustCompile(`-(\d{5})-of-\d{5}\.gguf$`)

func sameFile(a, b string) bool {
	fa, ea := os.Stat(a)
	fb, eb := os.Stat(b)
	return ea == nil && eb == nil && os.SameFile(fa, fb)
}

// Names are the names a model answers to: first, and its file's base
// name with and without extension.
func Names(first, path string) []string {
	names := []string{first}
	base := filepath.Base(filepath.Clean(path))
	for _, n := range []string{base, strings.TrimSuffix(base, filepath.Ext(base))} {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// ApplyAliases adds each --alias NAME=MODEL to the model MODEL names.
func ApplyAliases(entries []Served, aliases []string) error {
	for _, a := range aliases {
		name, target, ok := strings.Cut(a, "=")
		if !ok || name == "" || target == "" {
			return aliasError(a, "want NAME=MODEL")
		}
		found := false
		for i := range entries {
			if slices.Contains(entries[i].Names, target) {
				for j := range entries {
					if slices.Contains(entries[j].Names, name) {
						return aliasError(a, fmt.Sprintf("%q already names the model %q", name, entries[j].Names[0]))
					}
				}
				entries[i].Names = append(entries[i].Names, name)
				entries[i].Aliases = append(entries[i].Aliases, name)
				found = true
				break
			}
		}
		if !found {
			var all []string
			for _, e := range entries {
				all = append(all, e.Names[0])
			}
			return aliasError(a, fmt.Sprintf("no served model is called %q (served: %s)", target, strings.Join(all, ", ")))
		}
	}
	return nil
}

func aliasError(a, want string) error { return fmt.Errorf("--alias %v: %s", a, want) }

// ModelIDs splits the --alias values into llama-server's ids (values
// without "=", each possibly a comma-separated list) and nanoserve's
// NAME=MODEL aliases (for ApplyAliases).
func ModelIDs(aliases []string) (ids, rest []string) {
	for _, a := range aliases {
		if strings.Contains(a, "=") {
			rest = append(rest, a)
			continue
		}
		for n := range strings.SplitSeq(a, ",") {
			if n = strings.TrimSpace(n); n != "" && !slices.Contains(ids, n) {
				ids = append(ids, n)
			}
		}
	}
	// llama-server keeps its aliases in a sorted set and takes the first
	// as the model's id.
	slices.Sort(ids)
	return ids, rest
}

// NameFirst makes ids the first names of names (ids[0] the id), keeping
// the other names after them.
func NameFirst(names, ids []string) []string {
	out := slices.Clone(ids)
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
