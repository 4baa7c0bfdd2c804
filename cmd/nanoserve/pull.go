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
			fmt.Fprintf(os.Stderr, "resuming %s at %s of %s\n", file, hub.SizeMiB(have), hub.SizeMiB(size))
		} else {
			fmt.Fprintf(os.Stderr, "downloading %s (%s)\n", file, hub.SizeMiB(size))
		}
	}
	return progress.New(os.Stderr, "downloading "+file, size, have, progress.Options{Unit: progress.Bytes, Terminal: term, Every: progressEvery})
}

// progressEvery is the time between two progress lines off a terminal.
var progressEvery = 10 * time.Second

// resolveModel turns a --model value into a local path (hub.Resolve): an
// existing file or folder, else a hub reference from the cache or pulled.
// ref is the reference when it was one.
func resolveModel(arg, revision string) (path, ref string, err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return hubClient().Resolve(ctx, arg, revision, os.Stderr)
}

func runPull(args []string) error {
	fs := newFlags("pull")
	revision := fs.String("revision", "main", "branch, tag or commit to pull")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errors.New("no model named")
	}
	refs, err := hub.ParseRefs(pos)
	if err != nil {
		return err
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
	return hub.WriteList(os.Stdout, repos)
}

func runRm(args []string) error {
	fs := newFlags("rm")
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
