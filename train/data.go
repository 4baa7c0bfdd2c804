package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"nanoserve/tokenizer"
)

// Doc is one document of the corpus: a file, or a blank-line separated
// chunk of a single-file corpus.
type Doc struct {
	Name string // path, or path#chunk
	Text string
}

// Corpus is a loaded corpus, split by document into train and held-out.
type Corpus struct {
	Train, HeldOut []Doc
	SHA256         string // over every document's name and text, in name order
	Desc           string // human-readable summary
	Bytes          int64
}

// LoadCorpus reads paths (files or directories, walked recursively; hidden
// and "testdata" directories are skipped). exts filters directory entries
// by suffix ("" or none: every file); files that are not valid UTF-8 text
// are skipped. A corpus of a single file is cut into blank-line separated
// chunks. heldOut (0..1) is the fraction of documents held out, chosen by a
// hash of the document name and seed, so the split is deterministic and
// independent of reading order.
func LoadCorpus(paths []string, exts []string, heldOut float64, seed uint64) (*Corpus, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("train: no corpus given")
	}
	if heldOut <= 0 || heldOut >= 1 {
		return nil, fmt.Errorf("train: held-out fraction %g outside (0, 1)", heldOut)
	}
	var docs []Doc
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("train: corpus: %w", err)
		}
		if !fi.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("train: corpus: %w", err)
			}
			if !isText(b) {
				return nil, fmt.Errorf("train: corpus file %s is not UTF-8 text", p)
			}
			docs = append(docs, Doc{p, string(b)})
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || !matchExt(d.Name(), exts) {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if isText(b) && len(b) > 0 {
				docs = append(docs, Doc{path, string(b)})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("train: corpus: %w", err)
		}
	}
	if len(docs) == 1 {
		docs = splitChunks(docs[0])
	}
	if len(docs) < 2 {
		return nil, fmt.Errorf("train: corpus has %d documents; need at least 2 to hold one out", len(docs))
	}
	slices.SortFunc(docs, func(a, b Doc) int { return strings.Compare(a.Name, b.Name) })
	c := &Corpus{}
	h := sha256.New()
	for _, d := range docs {
		fmt.Fprintf(h, "%s\x00%d\x00", d.Name, len(d.Text))
		h.Write([]byte(d.Text))
		c.Bytes += int64(len(d.Text))
		f := fnv.New64a()
		fmt.Fprintf(f, "%d\x00%s", seed, d.Name)
		if float64(f.Sum64()%1_000_000)/1e6 < heldOut {
			c.HeldOut = append(c.HeldOut, d)
		} else {
			c.Train = append(c.Train, d)
		}
	}
	// Guarantee both sides are non-empty.
	if len(c.HeldOut) == 0 {
		c.HeldOut, c.Train = c.Train[len(c.Train)-1:], c.Train[:len(c.Train)-1]
	}
	if len(c.Train) == 0 {
		c.Train, c.HeldOut = c.HeldOut[:1], c.HeldOut[1:]
	}
	c.SHA256 = hex.EncodeToString(h.Sum(nil))
	c.Desc = fmt.Sprintf("%s (%d documents, %d bytes; %d held out)", strings.Join(paths, " "), len(docs), c.Bytes, len(c.HeldOut))
	return c, nil
}

func matchExt(name string, exts []string) bool {
	if len(exts) == 0 {
		return true
	}
	for _, e := range exts {
		if e == "" || strings.HasSuffix(name, e) {
			return true
		}
	}
	return false
}

func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

// splitChunks cuts a document at blank lines ("\n\n"); each chunk keeps its
// trailing separator so the chunks concatenate to the text.
func splitChunks(d Doc) []Doc {
	var out []Doc
	s := d.Text
	for i := 0; len(s) > 0; i++ {
		j := strings.Index(s, "\n\n")
		if j < 0 {
			j = len(s)
		} else {
			j += 2
			for j < len(s) && s[j] == '\n' {
				j++
			}
		}
		out = append(out, Doc{fmt.Sprintf("%s#%d", d.Name, i), s[:j]})
		s = s[j:]
	}
	return out
}

// Tokens encodes docs into one stream, each document followed by sep (the
// end-of-text id).
func Tokens(tk *tokenizer.Tokenizer, docs []Doc, sep int) []int32 {
	var out []int32
	for _, d := range docs {
		for _, id := range tk.Encode(d.Text, false) {
			out = append(out, int32(id))
		}
		out = append(out, int32(sep))
	}
	return out
}

// TokenBytes returns the number of text bytes each id stands for (control
// tokens — the document separator — count as one byte, like a newline).
func TokenBytes(v tokenizer.Vocab) []int {
	n := make([]int, len(v.Tokens))
	for i, t := range v.Tokens {
		if v.Types != nil && v.Types[i] == tokenizer.TypeControl {
			n[i] = 1
			continue
		}
		n[i] = utf8.RuneCountInString(t) // one GPT-2 alphabet rune per byte
	}
	return n
}

// bpeSample returns training text for the tokenizer: whole training
// documents, in a deterministic order, up to maxBytes.
func bpeSample(docs []Doc, maxBytes int, seed uint64) []string {
	idx := make([]int, len(docs))
	key := make([]uint64, len(docs))
	for i, d := range docs {
		idx[i] = i
		f := fnv.New64a()
		fmt.Fprintf(f, "bpe\x00%d\x00%s", seed, d.Name)
		key[i] = f.Sum64()
	}
	slices.SortFunc(idx, func(a, b int) int {
		if key[a] < key[b] {
			return -1
		} else if key[a] > key[b] {
			return 1
		}
		return 0
	})
	var out []string
	n := 0
	for _, i := range idx {
		if maxBytes > 0 && n >= maxBytes {
			break
		}
		out = append(out, docs[i].Text)
		n += len(docs[i].Text)
	}
	return out
}
