package hub

// The cache as `nanoserve list` shows it.

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteList writes repos as a table: repository, size, revisions
// (name=commit prefix) and the files of every snapshot.
func WriteList(w io.Writer, repos []CachedRepo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Repo, SizeMiB(r.Size), strings.Join(revs, ","), strings.Join(files, " "))
	}
	return tw.Flush()
}

// SizeMiB is n bytes in MiB, "size unknown" for -1.
func SizeMiB(n int64) string {
	if n < 0 {
		return "size unknown"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
