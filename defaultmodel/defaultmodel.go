// Package defaultmodel embeds nanoserve's built-in model: a small Llama
// trained by `nanoserve train` on the Go standard library's source code
// (domain autocomplete for Go), so `nanoserve generate` and `serve` work on
// a fresh machine with no download. model/README.md gives the command that
// produced it; `nanoserve inspect` shows its training manifest.
//
// model.Load takes a path, so Path writes the embedded bytes once to the
// user cache directory under their SHA-256 and returns that file.
//
// policy.go holds how the model is run: its completion policy (Policy:
// greedy with a frequency penalty, measured against the alternatives on
// held-out Go); sample.BlockStop ends its completions at the end of the
// block the prompt opened.
package defaultmodel

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileName is the embedded model's name inside model/.
const FileName = "nanoserve-go.gguf"

//go:embed model
var files embed.FS

// ErrMissing is returned when this build carries no built-in model.
var ErrMissing = errors.New("defaultmodel: no built-in model in this build")

// Bytes returns the embedded GGUF.
func Bytes() ([]byte, error) {
	b, err := files.ReadFile("model/" + FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrMissing
	}
	return b, err
}

// Path returns a file holding the built-in model, writing it to
// <user cache dir>/nanoserve/<sha256>.gguf the first time.
func Path() (string, error) {
	b, err := Bytes()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "nanoserve")
	path := filepath.Join(dir, "builtin-"+hex.EncodeToString(sum[:8])+".gguf")
	if fi, err := os.Stat(path); err == nil && fi.Size() == int64(len(b)) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("defaultmodel: %w", err)
	}
	f, err := os.CreateTemp(dir, "builtin-*.tmp")
	if err != nil {
		return "", fmt.Errorf("defaultmodel: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("defaultmodel: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("defaultmodel: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("defaultmodel: %w", err)
	}
	return path, nil
}
