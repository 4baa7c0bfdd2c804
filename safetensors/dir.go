package safetensors

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// IndexFile and SingleFile are the names OpenDir looks for.
const (
	IndexFile  = "model.safetensors.index.json"
	SingleFile = "model.safetensors"
)

// OpenDir opens a Hugging Face model folder: the shards listed in
// model.safetensors.index.json if it exists, else model.safetensors. All
// tensors are presented as one set; a name found in two shards, or a
// weight_map entry missing from its shard, is an error. Metadata of all
// shards is merged (the first shard's value wins).
func OpenDir(dir string) (*File, error) {
	idxPath := filepath.Join(dir, IndexFile)
	raw, err := os.ReadFile(idxPath)
	if errors.Is(err, fs.ErrNotExist) {
		single := filepath.Join(dir, SingleFile)
		if _, err := os.Stat(single); err != nil {
			return nil, fmt.Errorf("safetensors: %s has neither %s nor %s", dir, IndexFile, SingleFile)
		}
		return Open(single)
	}
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, idxPath, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("%w: %s has no weight_map", ErrInvalid, idxPath)
	}
	shardSet := map[string]bool{}
	for name, shard := range idx.WeightMap {
		// Shards must sit in dir itself: no paths that escape it.
		if shard == "" || shard != filepath.Base(shard) || strings.ContainsAny(shard, `/\`) || shard == "." || shard == ".." {
			return nil, fmt.Errorf("%w: %s maps tensor %q to %q, which is not a file name in the folder", ErrInvalid, idxPath, name, shard)
		}
		shardSet[shard] = true
	}
	shards := make([]string, 0, len(shardSet))
	for s := range shardSet {
		shards = append(shards, s)
	}
	sort.Strings(shards)

	out := &File{Metadata: map[string]string{}, index: map[string]*Tensor{}}
	owner := map[string]string{} // tensor name → shard
	for _, shard := range shards {
		f, err := Open(filepath.Join(dir, shard))
		if err != nil {
			out.Close()
			return nil, err
		}
		out.maps = append(out.maps, f.maps...)
		for k, v := range f.Metadata {
			if _, ok := out.Metadata[k]; !ok {
				out.Metadata[k] = v
			}
		}
		for _, t := range f.Tensors {
			if prev, dup := owner[t.Name]; dup {
				out.Close()
				return nil, fmt.Errorf("%w: tensor %q is in both %s and %s", ErrInvalid, t.Name, prev, shard)
			}
			owner[t.Name] = shard
			out.index[t.Name] = t
			out.Tensors = append(out.Tensors, t)
		}
	}
	for name, shard := range idx.WeightMap {
		if owner[name] != shard {
			out.Close()
			if owner[name] == "" {
				return nil, fmt.Errorf("%w: tensor %q is listed in %s but missing from %s", ErrInvalid, name, IndexFile, shard)
			}
			return nil, fmt.Errorf("%w: tensor %q is listed in %s for %s but found in %s", ErrInvalid, name, IndexFile, shard, owner[name])
		}
	}
	return out, nil
}

// Write writes tensors and metadata to a safetensors file at path (via a
// temporary file renamed into place). See WriteTo.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	tmp, err := createTemp(path)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	_, err = WriteTo(tmp, tensors, metadata)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("safetensors: %w", cerr)
	}
	if err == nil {
		if err = os.Rename(tmp.Name(), path); err != nil {
			err = fmt.Errorf("safetensors: %w", err)
		}
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// createTemp creates a new file beside path to write it under another
// name, with the mode a plain create gives (0666 less the umask), so the
// file renamed into place is as readable as any other the user writes:
// os.CreateTemp makes 0600 files, which another user (a container's
// non-root one) cannot read.
func createTemp(path string) (*os.File, error) {
	for {
		var b [8]byte
		rand.Read(b[:])
		f, err := os.OpenFile(path+".tmp"+hex.EncodeToString(b[:]), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}
