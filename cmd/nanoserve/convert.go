package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"nanoserve/convert"
)

// runConvert: nanoserve convert [flags] IN OUT.gguf
func runConvert(args []string) error {
	fs := newFlags("convert")
	var opts convert.Options
	opts.RegisterFlags(fs)
	quiet := fs.Bool("quiet", false, "do not list tensors")
	// Flags may come before, between or after the two paths.
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if err := checkThreads(opts.Threads); err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return errors.New("need exactly two arguments: IN OUT.gguf")
	}
	if !*quiet {
		opts.Log = func(s string) { fmt.Fprintln(os.Stderr, s) }
	}
	start := time.Now()
	if err := convert.Convert(pos[0], pos[1], opts); err != nil {
		return err
	}
	fi, err := os.Stat(pos[1])
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s (%.1f MiB) in %.2fs\n", pos[1], float64(fi.Size())/(1<<20), time.Since(start).Seconds())
	return nil
}
