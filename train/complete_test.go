package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSplitAtCursor: FILE:LINE:COL splits the file before byte COL of line
// LINE (1-based); a position outside the file is an error naming it.
func TestSplitAtCursor(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a:b.go") // a colon in the name
	text := "package p\n\nfunc f() {\n\treturn\n}\n"
	os.WriteFile(p, []byte(text), 0o644)
	for arg, wantPrefix := range map[string]string{
		p + ":1:1": "",
		p + ":4:2": "package p\n\nfunc f() {\n\t",
		p + ":4:8": "package p\n\nfunc f() {\n\treturn",
		p + ":6:1": text,
	} {
		pre, suf, err := SplitAtCursor(arg)
		if err != nil || pre != wantPrefix || pre+suf != text {
			t.Errorf("%s: %q | %q, %v", arg, pre, suf, err)
		}
	}
	for arg, want := range map[string]string{
		p + ":4:9":     "column 9 is past its end",
		p + ":9:1":     "fewer than 9 lines",
		p + ":0:1":     "must be numbers from 1",
		"nocolons":     "want FILE:LINE:COL",
		p + ":x:1":     "must be numbers from 1",
		"/no/such:1:1": "no such file",
	} {
		if _, _, err := SplitAtCursor(arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", arg, err, want)
		}
	}
}
