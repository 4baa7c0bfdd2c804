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

// TestCompletionGap: complete's gap is a FILE:LINE:COL or the text of
// --prefix-file (and --suffix-file), never both; --max-tokens below 1 and
// unreadable files are errors.
func TestCompletionGap(t *testing.T) {
	dir := t.TempDir()
	pre, suf := filepath.Join(dir, "pre.go"), filepath.Join(dir, "suf.go")
	if err := os.WriteFile(pre, []byte("func f() {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(suf, []byte("}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c            Completion
		args         []string
		prefix, suff string
		err          string
	}{
		{Completion{MaxTokens: 1, PrefixFile: pre}, nil, "func f() {\n", "", ""},
		{Completion{MaxTokens: 1, PrefixFile: pre, SuffixFile: suf}, nil, "func f() {\n", "}\n", ""},
		{Completion{MaxTokens: 1}, []string{pre + ":1:5"}, "func", " f() {\n", ""},
		{Completion{MaxTokens: 0, PrefixFile: pre}, nil, "", "", "--max-tokens 0"},
		{Completion{MaxTokens: 1, PrefixFile: pre}, []string{pre + ":1:1"}, "", "", "need FILE:LINE:COL"},
		{Completion{MaxTokens: 1, SuffixFile: suf}, nil, "", "", "need FILE:LINE:COL"},
		{Completion{MaxTokens: 1, PrefixFile: pre, SuffixFile: filepath.Join(dir, "none")}, nil, "", "", "none"},
	} {
		p, s, err := c.c.Gap(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v %q: err %v, want one saying %q", c.c, c.args, err, c.err)
			}
			continue
		}
		if err != nil || p != c.prefix || s != c.suff {
			t.Errorf("%+v %q: %q, %q, %v; want %q, %q", c.c, c.args, p, s, err, c.prefix, c.suff)
		}
	}
}
