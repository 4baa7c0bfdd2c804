//go:build unix

package safetensors

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Write used to leave its output 0600 (os.CreateTemp's mode); it now has
// the mode a plain create gives, 0666 less the umask.
func TestWriteModeFollowsUmask(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	old := syscall.Umask(0o022)
	err := Write(path, nil, map[string]string{"format": "pt"})
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v (%v), want 0644", st.Mode().Perm(), err)
	}
}
