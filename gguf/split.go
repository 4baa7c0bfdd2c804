package gguf

// Split models (llama.cpp's gguf-split convention). A model too large for
// one file is stored as N complete GGUF files named
//
//	PREFIX-00001-of-0000N.gguf … PREFIX-0000N-of-0000N.gguf   (1-based, 5 digits)
//
// Every file carries three metadata keys: split.no (uint16, the 0-based
// index of this file), split.count (uint16, N) and split.tensors.count
// (int32, the number of tensors over all files). The first file also holds
// all the model's other metadata; the others hold only the split keys.
// Each file has its own tensor infos and data section; a tensor lives
// wholly in one file, and its Offset is relative to that file's data. The
// first file may hold no tensors at all (gguf-split --no-tensor-first-split,
// so its small header downloads first).
//
// OpenSplit opens the first file and, when it says split.count > 1, maps the
// rest and merges them into one File: the first file's metadata, the tensors
// of all files in file order, each TensorInfo.Split naming the file its data
// lives in.

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
)

// Split metadata keys.
const (
	KeySplitNo      = "split.no"            // uint16: 0-based index of this file
	KeySplitCount   = "split.count"         // uint16: number of files
	KeySplitTensors = "split.tensors.count" // int32: tensors over all files
)

var splitName = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// SplitPath is the name of file i (0-based) of n: prefix-%05d-of-%05d.gguf
// with i+1.
func SplitPath(prefix string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, i+1, n)
}

// ParseSplitPath reverses SplitPath: it returns the prefix, the 0-based
// index and the count of a split file name, ok = false for any other name.
func ParseSplitPath(path string) (prefix string, i, n int, ok bool) {
	m := splitName.FindStringSubmatch(path)
	if m == nil {
		return "", 0, 0, false
	}
	no, _ := strconv.Atoi(m[2])
	cnt, _ := strconv.Atoi(m[3])
	if no < 1 || no > cnt {
		return "", 0, 0, false
	}
	return m[1], no - 1, cnt, true
}

// SplitInfo returns a file's split.no and split.count; a file without the
// keys is file 0 of 1.
func (f *File) SplitInfo() (no, count int, err error) {
	c, err := f.Uint(KeySplitCount)
	if errors.Is(err, ErrMissingKey) {
		return 0, 1, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if c == 0 || c > math.MaxUint16 {
		return 0, 0, fmt.Errorf("%w: %s = %d", ErrInvalid, KeySplitCount, c)
	}
	k, err := f.Uint(KeySplitNo)
	if err != nil {
		return 0, 0, err
	}
	if k >= c {
		return 0, 0, fmt.Errorf("%w: %s = %d but %s = %d", ErrInvalid, KeySplitNo, k, KeySplitCount, c)
	}
	return int(k), int(c), nil
}

// OpenSplit opens a GGUF model that may be split over several files: path
// is a single file, or the first file of a split (the others are found
// beside it by name). Naming a later file of a split is an error that names
// the first. The returned File's Close unmaps every file.
func OpenSplit(path string) (*File, error) {
	first, err := Open(path)
	if err != nil {
		return nil, err
	}
	no, count, err := first.SplitInfo()
	if err != nil {
		first.Close()
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	if count == 1 {
		return first, nil
	}
	prefix, i, n, ok := ParseSplitPath(path)
	if no != 0 {
		first.Close()
		if ok && n == count {
			return nil, fmt.Errorf("%w: %s is file %d of a %d-file split model; open the first, %s",
				ErrInvalid, path, no+1, count, filepath.Base(SplitPath(prefix, 0, n)))
		}
		return nil, fmt.Errorf("%w: %s is file %d of a %d-file split model; open the first", ErrInvalid, path, no+1, count)
	}
	if !ok || i != 0 || n != count {
		first.Close()
		return nil, fmt.Errorf("%w: %s says %s = %d but is not named PREFIX-00001-of-%05d.gguf, so its other files cannot be found",
			ErrInvalid, path, KeySplitCount, count, count)
	}
	merged, err := mergeSplits(first, prefix, count)
	if err != nil {
		first.Close()
		return nil, err
	}
	return merged, nil
}

// mergeSplits opens files 1..count-1 and appends their tensors to first.
func mergeSplits(first *File, prefix string, count int) (*File, error) {
	f := first
	f.Paths = []string{SplitPath(prefix, 0, count)}
	for k := 1; k < count; k++ {
		p := SplitPath(prefix, k, count)
		part, err := Open(p)
		if err != nil {
			f.closeParts()
			return nil, fmt.Errorf("%w (file %d of the split model %s)", err, k+1, f.Paths[0])
		}
		f.parts = append(f.parts, part)
		f.Paths = append(f.Paths, p)
		no, cnt, err := part.SplitInfo()
		if err != nil {
			f.closeParts()
			return nil, fmt.Errorf("%w (in %s)", err, p)
		}
		if no != k || cnt != count {
			f.closeParts()
			return nil, fmt.Errorf("%w: %s says it is file %d of %d, its name says %d of %d", ErrInvalid, p, no+1, cnt, k+1, count)
		}
		for _, t := range part.Tensors {
			if _, dup := f.tensorIndex[t.Name]; dup {
				f.closeParts()
				return nil, fmt.Errorf("%w: tensor %q is in two files of the split model (again in %s)", ErrInvalid, t.Name, p)
			}
			t.Split = k
			f.tensorIndex[t.Name] = len(f.Tensors)
			f.Tensors = append(f.Tensors, t)
		}
	}
	if v, err := f.Int(KeySplitTensors); err == nil && v != int64(len(f.Tensors)) {
		f.closeParts()
		return nil, fmt.Errorf("%w: %s = %d but the %d files hold %d tensors", ErrInvalid, KeySplitTensors, v, count, len(f.Tensors))
	}
	return f, nil
}

func (f *File) closeParts() error {
	var first error
	for _, p := range f.parts {
		if err := p.Close(); err != nil && first == nil {
			first = err
		}
	}
	f.parts = nil
	return first
}

// WriteSplit writes the Writer's model as a split of n files named by
// SplitPath(prefix, i, n): the metadata in the first, the tensors dealt out
// in order, ⌈T/n⌉ per file. It returns the paths written.
func (w *Writer) WriteSplit(prefix string, n int) ([]string, error) {
	if n < 1 || n > math.MaxUint16 || n > max(len(w.tensors), 1) {
		return nil, fmt.Errorf("gguf: cannot split %d tensors into %d files", len(w.tensors), n)
	}
	for _, k := range []string{KeySplitNo, KeySplitCount, KeySplitTensors} {
		if w.keys[k] {
			return nil, fmt.Errorf("gguf: WriteSplit: the Writer already has %s", k)
		}
	}
	per := (len(w.tensors) + n - 1) / n
	var paths []string
	for i := range n {
		part := NewWriter()
		if i == 0 {
			for _, kv := range w.kv {
				part.AddKV(kv.Key, kv.Value)
			}
		} else if w.keys[KeyAlignment] {
			v, _ := w.get(KeyAlignment)
			part.AddKV(KeyAlignment, v)
		}
		part.AddKV(KeySplitNo, Uint16(uint16(i)))
		part.AddKV(KeySplitCount, Uint16(uint16(n)))
		part.AddKV(KeySplitTensors, Int32(int32(len(w.tensors))))
		lo, hi := min(i*per, len(w.tensors)), min((i+1)*per, len(w.tensors))
		for _, t := range w.tensors[lo:hi] {
			part.tensors = append(part.tensors, t)
			part.names[t.info.Name] = true
		}
		p := SplitPath(prefix, i, n)
		if err := part.WriteFile(p); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func (w *Writer) get(key string) (Value, bool) {
	for _, kv := range w.kv {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return Value{}, false
}
