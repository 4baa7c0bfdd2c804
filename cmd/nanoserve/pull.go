package main

// nanoserve pull / list / rm: models from the Hugging Face hub, kept in the
// hub's standard cache (package hub) so other tools share the files.
// --model accepts the same REPO[:FILE|:QUANT] names and pulls on first use.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"nanoserve/hub"
	"nanoserve/internal/progress"
)

// hubClient is the client every command uses: configured from the
// environment (HF_ENDPOINT, HF_TOKEN, HF_HOME / HF_HUB_CACHE), with a
// progress bar on stderr.
func hubClient() *hub.Client {
	c := hub.FromEnv()
	c.Progress = progressBar
	return c
}

// progressBar meters one file's download (package progress): a bar on a
// terminal, a log line every 10 s otherwise (logs, CI: serve and generate
// with --model REPO:QUANT), and a last line when the file is done.
func progressBar(file string, size, have int64) io.WriteCloser {
	term := progress.IsTerminal(os.Stderr)
	if !term {
		if have > 0 {
			fmt.Fprintf(os.Stderr, "resuming %s at %s of %s\n", file, sizeMiB(have), sizeMiB(size))
		} else {
			fmt.Fprintf(os.Stderr, "downloading %s (%s)\n", file, sizeMiB(size))
		}
	}
	return progress.New(os.Stderr, "downloading "+file, size, have, progress.Options{Unit: progress.Bytes, Terminal: term, Every: progressEvery})
}

// progressEvery is the time between two progress lines off a terminal.
var progressEvery = 10 * time.Second

// sizeMiB is n bytes in MiB, "size unknown" for -1.
func sizeMiB(n int64) string {
	if n < 0 {
		return "size unknown"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// resolveModel turns a --model value into a local path: an existing file or
// folder as it is; otherwise a hub reference, taken from the cache or
// pulled (unless HF_HUB_OFFLINE is set). ref is the reference when it was
// one.
func resolveModel(arg, revision string) (path, ref string, err error) {
	if _, err := os.Stat(arg); err == nil {
		return arg, "", nil
	}
	r, perr := hub.ParseRef(arg)
	if perr != nil || r.File == "" && r.Quant == "" && modelExt(arg) {
		return arg, "", nil // a path: model.Load reports the missing file
	}
	c := hubClient()
	if p, err := c.Cached(r, revision); err == nil {
		return p, r.String(), nil
	}
	if os.Getenv("HF_HUB_OFFLINE") != "" {
		return "", "", fmt.Errorf("%s is not in the cache %s and HF_HUB_OFFLINE is set", r, c.CacheDir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(os.Stderr, "pulling %s from %s\n", r, c.Endpoint)
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

func runPull(args []string) error {
	fs := newFlags("pull")
	revision := fs.String("revision", "main", "branch, tag or commit to pull")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: nanoserve pull [flags] REPO[:QUANT|:FILE]...

Downloads a model from the Hugging Face hub into its cache ($HF_HOME/hub) and
prints the path to load. REPO alone takes the Q4_K_M GGUF (or the only GGUF,
or the whole repository when it has none); REPO:Q8_0 the GGUF of that
quantization (all files of a split); REPO:path/file.gguf one file.
Interrupted downloads resume. HF_TOKEN authenticates (gated and private
models); HF_ENDPOINT names another hub.

flags:`)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errors.New("no model named")
	}
	var refs []hub.Ref
	for _, a := range pos {
		r, err := hub.ParseRef(a)
		if err != nil {
			return err
		}
		refs = append(refs, r)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c := hubClient()
	for _, r := range refs {
		p, err := c.Pull(ctx, r, *revision)
		if err != nil {
			return err
		}
		fmt.Println(p)
	}
	return nil
}

func runList(args []string) error {
	fs := newFlags("list")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nanoserve list\n\nLists the models in the Hugging Face cache ($HF_HOME/hub): repository, size, revisions, files.")
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q", pos[0])
	}
	c := hub.FromEnv()
	repos, err := c.List()
	if err != nil {
		return err
	}
	if len(repos) == 0 {
		fmt.Fprintf(os.Stderr, "no models in %s (nanoserve pull REPO:QUANT)\n", c.CacheDir)
		return nil
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPOSITORY\tSIZE\tREVISIONS\tFILES")
	for _, r := range repos {
		var revs []string
		for name, commit := range r.Refs {
			revs = append(revs, name+"="+commit[:min(len(commit), 12)])
		}
		slices.Sort(revs)
		var files []string
		for _, fs := range r.Snapshots {
			for _, f := range fs {
				if !slices.Contains(files, f) {
					files = append(files, f)
				}
			}
		}
		slices.Sort(files)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Repo, sizeMiB(r.Size), strings.Join(revs, ","), strings.Join(files, " "))
	}
	return tw.Flush()
}

func runRm(args []string) error {
	fs := newFlags("rm")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nanoserve rm REPO[:QUANT|:FILE]...\n\nRemoves a repository from the Hugging Face cache, or only the files of one quantization\n(and the blobs nothing links to any more).")
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errors.New("no model named")
	}
	c := hub.FromEnv()
	for _, a := range pos {
		r, err := hub.ParseRef(a)
		if err != nil {
			return err
		}
		removed, err := c.Remove(r)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "removed %s (%d paths)\n", r, len(removed))
	}
	return nil
}
