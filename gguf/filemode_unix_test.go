//go:build unix

package gguf

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// WriteFile used to leave its output 0600 (os.CreateTemp's mode, kept by
// the rename), so a model converted as one user could not be read by
// another (a container's non-root user). It now has the mode a plain
// create gives: 0666 less the umask.
func TestWriteFileModeFollowsUmask(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ umask, want int }{{0o022, 0o644}, {0o002, 0o664}, {0o077, 0o600}} {
		old := syscall.Umask(c.umask)
		path := filepath.Join(dir, "m.gguf")
		w := NewWriter()
		if err := w.AddKV(KeyAlignment, Uint32(32)); err != nil {
			t.Fatal(err)
		}
		err := w.WriteFile(path)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := int(st.Mode().Perm()); got != c.want {
			t.Errorf("umask %03o: mode %03o, want %03o", c.umask, got, c.want)
		}
		os.Remove(path)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
