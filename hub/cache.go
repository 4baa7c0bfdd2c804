package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CachedRepo describes one model repository in the cache.
type CachedRepo struct {
	Repo      string            // "org/name"
	Dir       string            // its models--org--name folder
	Size      int64             // bytes of its blobs
	Refs      map[string]string // revision → commit
	Snapshots map[string][]string
}

// List describes every model repository in the cache, sorted by name.
func (c *Client) List() ([]CachedRepo, error) {
	ents, err := os.ReadDir(c.CacheDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	var out []CachedRepo
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), "models--")
		if !ok || !e.IsDir() {
			continue
		}
		dir := filepath.Join(c.CacheDir, e.Name())
		r := CachedRepo{Repo: strings.Replace(name, "--", "/", 1), Dir: dir, Refs: map[string]string{}, Snapshots: map[string][]string{}}
		blobs, _ := os.ReadDir(filepath.Join(dir, "blobs"))
		for _, b := range blobs {
			if fi, err := b.Info(); err == nil && !strings.HasSuffix(b.Name(), ".incomplete") {
				r.Size += fi.Size()
			}
		}
		filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(filepath.Join(dir, "refs"), p)
				r.Refs[filepath.ToSlash(rel)] = strings.TrimSpace(string(b))
			}
			return nil
		})
		snaps, _ := os.ReadDir(filepath.Join(dir, "snapshots"))
		for _, s := range snaps {
			files, _ := listFiles(filepath.Join(dir, "snapshots", s.Name()))
			r.Snapshots[s.Name()] = files
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b CachedRepo) int { return strings.Compare(a.Repo, b.Repo) })
	return out, nil
}

// Remove deletes a reference from the cache. A bare REPO removes the whole
// repository folder; REPO:FILE or REPO:QUANT removes those files from every
// snapshot, and the blobs no snapshot links to any more. It returns the
// paths removed.
func (c *Client) Remove(r Ref) ([]string, error) {
	dir := filepath.Join(c.CacheDir, repoDir(r.Repo))
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotCached, r.Repo)
	}
	if r.File == "" && r.Quant == "" {
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("hub: %w", err)
		}
		os.RemoveAll(filepath.Join(c.CacheDir, ".locks", repoDir(r.Repo)))
		return []string{dir}, nil
	}
	var removed []string
	snaps, _ := os.ReadDir(filepath.Join(dir, "snapshots"))
	for _, s := range snaps {
		snap := filepath.Join(dir, "snapshots", s.Name())
		files, _ := listFiles(snap)
		sel, err := selectFiles(r, files)
		if err != nil {
			continue
		}
		for _, f := range sel.Files {
			p := filepath.Join(snap, filepath.FromSlash(f))
			if os.Remove(p) == nil {
				removed = append(removed, p)
			}
		}
	}
	if len(removed) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotCached, r)
	}
	// Collect the blobs still linked from some snapshot; remove the rest.
	linked := map[string]bool{}
	filepath.WalkDir(filepath.Join(dir, "snapshots"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			if t, err := filepath.EvalSymlinks(p); err == nil {
				linked[filepath.Base(t)] = true
			}
		}
		return nil
	})
	blobs, _ := os.ReadDir(filepath.Join(dir, "blobs"))
	for _, b := range blobs {
		if !linked[b.Name()] && !strings.HasSuffix(b.Name(), ".incomplete") {
			p := filepath.Join(dir, "blobs", b.Name())
			if os.Remove(p) == nil {
				removed = append(removed, p)
			}
		}
	}
	return removed, nil
}
