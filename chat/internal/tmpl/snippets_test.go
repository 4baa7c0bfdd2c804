package tmpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata/snippets.json with testdata/snippets.py (needs python3 + jinja2)")

type snippet struct {
	Src        string  `json:"src"`
	Output     *string `json:"output"`
	Error      *string `json:"error"`
	ParseError *string `json:"parse_error"`
}

// jsonValue decodes one JSON document into a Value, keeping key order.
func jsonValue(t testing.TB, raw []byte) Value {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func() Value
	walk = func() Value {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch x := tok.(type) {
		case nil:
			return None()
		case bool:
			return Bool(x)
		case string:
			return String(x)
		case json.Number:
			if !strings.ContainsAny(string(x), ".eE") {
				n, _ := x.Int64()
				return Int(n)
			}
			f, _ := x.Float64()
			return Float(f)
		case json.Delim:
			if x == '[' {
				var items []Value
				for dec.More() {
					items = append(items, walk())
				}
				dec.Token()
				return NewList(items)
			}
			d := NewDict()
			for dec.More() {
				k, _ := dec.Token()
				d.Dict().SetStr(k.(string), walk())
			}
			dec.Token()
			return d
		}
		t.Fatalf("bad token %v", tok)
		return Value{}
	}
	return walk()
}

var addr = regexp.MustCompile(` at 0x[0-9a-f]+>`)

var errRaised = errors.New("raised")

// snippetVars are the variables snippets.py renders with, plus HF's globals.
func snippetVars(t testing.TB, raw json.RawMessage) map[string]Value {
	v := jsonValue(t, raw)
	vars := map[string]Value{}
	for i := range v.Dict().Len() {
		k, val := v.Dict().At(i)
		vars[k.Str()] = val
	}
	vars["raise_exception"] = NewFunc("raise_exception", func(c *Call) (Value, error) {
		return Value{}, fmt.Errorf("%w: %s", errRaised, Repr(c.Args[0]))
	})
	vars["strftime_now"] = NewFunc("strftime_now", func(c *Call) (Value, error) { return String("2025-03-09"), nil })
	return vars
}

// TestSnippets renders each snippet of testdata/snippets.json (one piece of
// Jinja semantics each) and compares with Python Jinja2's result: the same
// bytes, or an error where Jinja2 fails (at parse time where it fails at
// parse time).
func TestSnippets(t *testing.T) {
	if *update {
		cmd := exec.Command("python3", "testdata/snippets.py")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("testdata/snippets.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vars     json.RawMessage `json:"vars"`
		Snippets []snippet       `json:"snippets"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	same, opaque := 0, 0
	for _, s := range file.Snippets {
		tm, perr := Parse(s.Src)
		switch {
		case s.ParseError != nil:
			if perr == nil {
				t.Errorf("%q: Jinja2 refuses it (%s) but Parse accepted it", s.Src, *s.ParseError)
			} else {
				same++
			}
			continue
		case perr != nil:
			t.Errorf("%q: parse error %v", s.Src, perr)
			continue
		}
		got, err := tm.Render(snippetVars(t, file.Vars), Limits{})
		switch {
		case s.Output != nil:
			if err != nil {
				t.Errorf("%q: render error %v; Jinja2 renders %q", s.Src, err, *s.Output)
			} else if addr.MatchString(*s.Output) {
				opaque++ // prints a Python object address: cannot be reproduced
			} else if got != *s.Output {
				t.Errorf("%q:\n got %q\nwant %q", s.Src, got, *s.Output)
			} else {
				same++
			}
		case s.Error != nil:
			switch {
			case err != nil:
				same++
			case strings.HasPrefix(*s.Error, "SecurityError"):
				// mutation: allowed here, see methods.go
			default:
				t.Errorf("%q: Jinja2 fails (%s) but rendered %q", s.Src, *s.Error, got)
			}
		}
	}
	t.Logf("%d of %d snippets behave as in Jinja2 (%d print Python object addresses)", same, len(file.Snippets), opaque)
}
