// Package hub downloads models from the Hugging Face hub into the hub's
// standard cache, so the files are shared with every other tool that uses
// it (huggingface_hub, transformers, llama.cpp's -hf).
//
// # References
//
// A model is named REPO[:FILE|:QUANT]: "org/name" picks the Q4_K_M GGUF if
// the repository has one, the only GGUF if there is one, and the whole
// repository (config, tokenizer, safetensors shards) if it has no GGUF;
// "org/name:Q8_0" picks the GGUF whose file name carries that quantization
// tag; "org/name:path/in/repo.gguf" names a file. A GGUF split over several
// files (…-00001-of-00003.gguf) is fetched whole, and the reference resolves
// to its first file, which is what the GGUF loader opens. "hf.co/" and
// "huggingface.co/" prefixes are accepted.
//
// # Protocol (what the client asks the hub)
//
//	GET  {endpoint}/api/models/{repo}/revision/{rev}  → {"sha": commit, "siblings": [{"rfilename": …}]}
//	HEAD {endpoint}/{repo}/resolve/{commit}/{file}    → ETag / X-Linked-Etag, X-Linked-Size, X-Repo-Commit
//	GET  {endpoint}/{repo}/resolve/{commit}/{file}    (redirected to a CDN for LFS files; Range to resume)
//
// Files stored with Git LFS (weights) carry X-Linked-Etag, the sha256 of the
// content; small files carry an ETag that is their git blob id, the sha1 of
// "blob <size>\x00" followed by the content. Every download is checked
// against its id before it becomes visible. HF_TOKEN is sent as a bearer
// token (Go's client drops it on redirects to another host); HF_ENDPOINT
// replaces https://huggingface.co.
//
// # Cache layout (HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)
//
//	models--org--name/blobs/<etag>                 file contents, named by their id
//	models--org--name/blobs/<etag>.incomplete      a download in progress (resumed with Range)
//	models--org--name/snapshots/<commit>/<file>    relative symlink to ../../blobs/<etag>
//	models--org--name/refs/<revision>              the commit a branch or tag resolved to
//	.locks/models--org--name/<etag>.lock           flock held while one process downloads a blob
//
// A blob is renamed into place only after its digest matched, and the
// snapshot link is made after that, so a reader never sees a partial or
// corrupt file; two processes pulling the same file serialise on its lock
// and the second finds the blob present.
package hub

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Ref names a model on the hub.
type Ref struct {
	Repo  string // "org/name"
	File  string // a file in the repository, or ""
	Quant string // a quantization tag such as "Q4_K_M", or ""
}

func (r Ref) String() string {
	switch {
	case r.File != "":
		return r.Repo + ":" + r.File
	case r.Quant != "":
		return r.Repo + ":" + r.Quant
	}
	return r.Repo
}

var (
	repoPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	quantPattern = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
)

// ErrRef reports a malformed reference.
var ErrRef = errors.New("hub: bad model reference")

// ParseRefs parses each of args (ParseRef), stopping at the first error.
func ParseRefs(args []string) ([]Ref, error) {
	refs := make([]Ref, len(args))
	for i, a := range args {
		r, err := ParseRef(a)
		if err != nil {
			return nil, err
		}
		refs[i] = r
	}
	return refs, nil
}

// ParseRef parses REPO[:FILE|:QUANT] (optionally prefixed by hf.co/ or
// huggingface.co/). The part after the colon is a FILE when it has an
// extension or a slash, else a QUANT tag.
func ParseRef(s string) (Ref, error) {
	for _, p := range []string{"https://huggingface.co/", "https://hf.co/", "huggingface.co/", "hf.co/"} {
		s = strings.TrimPrefix(s, p)
	}
	repo, tag, hasTag := strings.Cut(s, ":")
	if !repoPattern.MatchString(repo) || strings.Contains(repo, "..") {
		return Ref{}, fmt.Errorf("%w %q: want ORG/NAME[:FILE|:QUANT]", ErrRef, s)
	}
	r := Ref{Repo: repo}
	switch {
	case !hasTag:
	case tag == "":
		return Ref{}, fmt.Errorf("%w %q: empty tag after ':'", ErrRef, s)
	case strings.Contains(tag, "/") || path.Ext(tag) != "":
		clean := path.Clean(tag)
		if clean != tag || strings.HasPrefix(tag, "/") || strings.HasPrefix(tag, "../") || tag == ".." {
			return Ref{}, fmt.Errorf("%w %q: file %q is not a clean relative path", ErrRef, s, tag)
		}
		r.File = tag
	case quantPattern.MatchString(tag):
		r.Quant = tag
	default:
		return Ref{}, fmt.Errorf("%w %q: tag %q is neither a file nor a quantization tag", ErrRef, s, tag)
	}
	return r, nil
}

// LooksLikeRef reports whether s parses as a Ref. Callers check first
// whether s is a local path.
func LooksLikeRef(s string) bool {
	_, err := ParseRef(s)
	return err == nil
}

// repoDir is the cache folder name of a model repository.
func repoDir(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}

var splitFile = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// isGGUF reports whether a repository file is a model GGUF (not a vision
// projector, which llama.cpp publishes beside the model as mmproj-*.gguf).
func isGGUF(name string) bool {
	base := strings.ToLower(path.Base(name))
	return strings.HasSuffix(base, ".gguf") && !strings.HasPrefix(base, "mmproj")
}

// hasQuant reports whether the file's path carries tag as a whole token
// (in its name, or a folder's: "Q4_K_M/m-00001-of-00002.gguf"): Q4_K
// matches "m-Q4_K.gguf" but not "m-Q4_K_M.gguf".
func hasQuant(name, tag string) bool {
	base := strings.ToLower(name)
	tag = strings.ToLower(tag)
	for i := 0; ; {
		j := strings.Index(base[i:], tag)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || strings.ContainsRune("-._/", rune(base[j-1]))
		end := j + len(tag)
		after := end == len(base) || strings.ContainsRune("-./", rune(base[end]))
		if before && after {
			return true
		}
		i = j + 1
	}
}

// DefaultQuant is the tag a bare REPO picks when several GGUFs are offered
// (llama.cpp's choice: a good size/quality balance).
const DefaultQuant = "Q4_K_M"

// Selection is the set of files a Ref resolves to, and the one the model
// loader opens (a GGUF, the first file of a split, or "" for the whole
// directory).
type Selection struct {
	Files []string
	Entry string
}

// ErrNoMatch means the repository has no file the reference asks for.
var ErrNoMatch = errors.New("hub: no matching file")

// selectFiles picks the files of a repository (given as its file list) that
// a Ref names.
func selectFiles(r Ref, files []string) (Selection, error) {
	var ggufs []string
	for _, f := range files {
		if isGGUF(f) {
			ggufs = append(ggufs, f)
		}
	}
	switch {
	case r.File != "":
		for _, f := range files {
			if f == r.File {
				if isGGUF(f) {
					return ggufGroup(f, files)
				}
				return Selection{Files: []string{f}, Entry: f}, nil
			}
		}
		return Selection{}, fmt.Errorf("%w: %s has no file %q%s", ErrNoMatch, r.Repo, r.File, offer(ggufs))
	case r.Quant != "":
		var hits []string
		for _, f := range ggufs {
			if hasQuant(f, r.Quant) {
				hits = append(hits, f)
			}
		}
		return pickOne(r, hits, ggufs, files)
	case len(ggufs) > 0:
		var hits []string
		for _, f := range ggufs {
			if hasQuant(f, DefaultQuant) {
				hits = append(hits, f)
			}
		}
		if len(hits) == 0 {
			hits = ggufs
		}
		return pickOne(r, hits, ggufs, files)
	}
	// A transformers repository: the whole directory, minus the .gitattributes
	// and, when safetensors exist, the duplicate weights in other formats.
	hasST, hasConfig := false, false
	for _, f := range files {
		hasST = hasST || strings.HasSuffix(f, ".safetensors")
		hasConfig = hasConfig || f == "config.json"
	}
	if !hasConfig {
		return Selection{}, fmt.Errorf("%w: %s has neither a GGUF file nor a config.json (not a model repository?)", ErrNoMatch, r.Repo)
	}
	var sel Selection
	for _, f := range files {
		if path.Base(f) == ".gitattributes" {
			continue
		}
		if hasST {
			switch strings.ToLower(path.Ext(f)) {
			case ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx", ".ckpt", ".ot", ".gguf":
				continue
			}
		}
		sel.Files = append(sel.Files, f)
	}
	return sel, nil
}

// pickOne reduces the GGUFs matching a reference to one model: a single
// file, or the files of one split.
func pickOne(r Ref, hits, ggufs, files []string) (Selection, error) {
	models := map[string]bool{} // single files and split prefixes
	var first string
	for _, f := range hits {
		key := f
		if m := splitFile.FindStringSubmatch(f); m != nil {
			key = m[1]
		}
		if !models[key] {
			models[key] = true
			if first == "" {
				first = f
			}
		}
	}
	switch len(models) {
	case 0:
		what := "a GGUF file"
		if r.Quant != "" {
			what = "a GGUF file tagged " + r.Quant
		}
		return Selection{}, fmt.Errorf("%w: %s has no %s%s", ErrNoMatch, r.Repo, what, offer(ggufs))
	case 1:
		return ggufGroup(first, files)
	}
	keys := make([]string, 0, len(models))
	for k := range models {
		keys = append(keys, k)
	}
	return Selection{}, fmt.Errorf("%w: %s: %q matches several models (%s); name one as REPO:FILE or REPO:QUANT",
		ErrNoMatch, r.Repo, r.String(), strings.Join(slices.Sorted(slices.Values(keys)), ", "))
}

// ggufGroup is f alone, or all files of the split f belongs to, which must
// all be listed.
func ggufGroup(f string, files []string) (Selection, error) {
	m := splitFile.FindStringSubmatch(f)
	if m == nil {
		return Selection{Files: []string{f}, Entry: f}, nil
	}
	var n int
	fmt.Sscanf(m[3], "%d", &n)
	have := map[string]bool{}
	for _, x := range files {
		have[x] = true
	}
	var sel Selection
	for i := 1; i <= n; i++ {
		p := fmt.Sprintf("%s-%05d-of-%05d.gguf", m[1], i, n)
		if !have[p] {
			return Selection{}, fmt.Errorf("%w: split model %s is missing its file %s", ErrNoMatch, f, p)
		}
		sel.Files = append(sel.Files, p)
	}
	sel.Entry = sel.Files[0]
	return sel, nil
}

// offer lists the quantization tags of the GGUFs on offer, for errors.
func offer(ggufs []string) string {
	if len(ggufs) == 0 {
		return ""
	}
	seen := map[string]bool{}
	var names []string
	for _, f := range ggufs {
		if m := splitFile.FindStringSubmatch(f); m != nil {
			f = m[1] + "-….gguf"
		}
		if !seen[f] {
			seen[f] = true
			names = append(names, f)
		}
	}
	return " (it has: " + strings.Join(slices.Sorted(slices.Values(names)), ", ") + ")"
}
