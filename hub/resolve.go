package hub

// A model argument (`--model`) that may be a local path or a hub name.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Resolve turns a model argument into a local path: an existing file or
// folder as it is; otherwise a hub reference, taken from the cache or
// pulled (unless HF_HUB_OFFLINE is set; log, if set, is told before a
// download). ref is the reference when arg was one. A name that is no
// reference, or one that ends like a model file, is returned as it is
// for the loader to report the missing file.
func (c *Client) Resolve(ctx context.Context, arg, revision string, log io.Writer) (path, ref string, err error) {
	if _, err := os.Stat(arg); err == nil {
		return arg, "", nil
	}
	r, perr := ParseRef(arg)
	if perr != nil || r.File == "" && r.Quant == "" && modelExt(arg) {
		return arg, "", nil // a path: model.Load reports the missing file
	}
	if p, err := c.Cached(r, revision); err == nil {
		return p, r.String(), nil
	}
	if os.Getenv("HF_HUB_OFFLINE") != "" {
		return "", "", fmt.Errorf("%s is not in the cache %s and HF_HUB_OFFLINE is set", r, c.CacheDir)
	}
	if log != nil {
		fmt.Fprintf(log, "pulling %s from %s\n", r, c.Endpoint)
	}
	p, err := c.Pull(ctx, r, revision)
	if err != nil {
		return "", "", fmt.Errorf("%s is not a local file or folder, and the hub says: %w", arg, err)
	}
	return p, r.String(), nil
}

// modelExt reports whether a name ends like a model file rather than a
// repository (repository names may hold dots: Qwen/Qwen2.5-0.5B).
func modelExt(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".gguf", ".bin", ".safetensors", ".json", ".model", ".pt":
		return true
	}
	return false
}
