package tmpl

import (
	"errors"
	"strings"
	"testing"
)

// Errors say where (line, column), in what construct, and what was expected
// or went wrong.
func TestErrorsSayWhere(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"a\n{% if x %}b", "line 2, column 12: unexpected end of template; expected {% elif %} or {% else %} or {% endif %}"},
		{"{% for x y %}{% endfor %}", "line 1, column 10: {% for %}: expected 'in' after the loop variable, found 'y'"},
		{"{{ 1 + }}", "line 1, column 8: expected an expression, found '}}'"},
		{"x\n  {% endif %}", "line 2, column 3: unexpected {% endif %}"},
		{"{% frobnicate %}", "line 1, column 4: unknown statement {% frobnicate %} (supported: if, for, set, macro, call, filter, with, raw, generation, break, continue)"},
		{"{{ 'abc }}", "line 1, column 4: string literal: expected a closing '"},
		{"{% macro m(a=1, b) %}{% endmacro %}", "line 1, column 18: {% macro %}: a parameter without a default follows one with a default"},
		{"{{ {'a' 1} }}", "line 1, column 9: dict literal: expected ':', found number 1"},
		{"{% set x = %}", "line 1, column 12: expected an expression, found '%}'"},
		{"{{ x|nope }}", "line 1, column 6: filter: no filter named 'nope'"},
		{"{{ x ? y }}", "line 1, column 6: {{ ... }}: expected an expression, found the character '?'"},
		{"{# never closed", "line 1, column 1: comment: expected a closing '#}'"},
	} {
		_, err := Parse(c.src)
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q):\n got %v\nwant %s", c.src, err, c.want)
		}
	}
	vars := map[string]Value{"n": Int(1)}
	for _, c := range []struct{ src, want string }{
		{"{% for i in range(3) %}\n  {{ n + 'a' }}{% endfor %}", "line 2, column 8: '+': unsupported operand type(s) for +: 'int' and 'str'"},
		{"{{ n.x.y }}", "line 1, column 7: attribute '.y': 'int object' has no attribute 'x'"},
		{"{{ missing.y }}", "line 1, column 11: attribute '.y': 'missing' is undefined"},
		{"{{ [1]|join(n) }}|{{ 'a'.split(1) }}", "line 1, column 31: method 'split': argument 1 must be str, not int"},
		{"{% set ns = 3 %}{% set ns.a = 1 %}", "line 1, column 20: {% set %}: ns is not a namespace; only a namespace() takes {% set ns.a = ... %}"},
	} {
		tm, err := Parse(c.src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.src, err)
		}
		_, err = tm.Render(vars, Limits{})
		if err == nil || err.Error() != c.want {
			t.Errorf("Render(%q):\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}

// Every limit fails with an error matching ErrLimit at the construct that
// exceeded it.
func TestLimits(t *testing.T) {
	for _, c := range []struct {
		src  string
		lim  Limits
		want string
	}{
		{"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", Limits{MaxDepth: 5}, "line 1, column 20: exceeded the recursion depth limit: more than 5 nested macro calls (a recursion that does not end?)"},
		{"{% for i in range(100) %}{% endfor %}", Limits{MaxSteps: 50}, "line 1, column 4: exceeded the step limit: more than 50 evaluation steps (a loop or recursion that does not end?)"},
		{"x{{ 'ab' * 10 }}", Limits{MaxOutput: 10}, "line 1, column 10: the output or a string in it would exceed 10 bytes"},
		{"{% for i in range(3) %}abcd{% endfor %}", Limits{MaxOutput: 10}, "line 1, column 24: the output or a string in it would exceed 10 bytes"},
		{"{% set s = 'abcdefgh' %}{{ s ~ s ~ s }}", Limits{MaxAlloc: 20}, "line 1, column 34: the render would allocate more than 20 bytes of strings and lists"},
		{"{{ " + nest("(", 300) + "1" + nest(")", 300) + " }}", Limits{}, "line 1, column 204: blocks or expressions nested deeper than 200"},
	} {
		tm, err := Parse(c.src)
		if err == nil {
			_, err = tm.Render(nil, c.lim)
		}
		if !errors.Is(err, ErrLimit) || err.Error() != c.want {
			t.Errorf("%.40q:\n got %v\nwant %s (matching ErrLimit)", c.src, err, c.want)
		}
	}
}

func nest(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// An operator, filter or attribute chain (a+b+c..., x|f|f..., x.a.a...) is a
// tree as deep as it is long, and the evaluator recurses on it: long chains
// count as nesting. (Before, a 2 MB "1+1+...+1" overflowed the Go stack at
// render.)
func TestChainsAreNesting(t *testing.T) {
	for _, link := range []string{" + 1", "|string", ".a", " or x", " ~ 'a'", " == 1", "[0]"} {
		src := "{{ x" + strings.Repeat(link, 1000) + " }}"
		if _, err := Parse(src); !errors.Is(err, ErrLimit) {
			t.Errorf("%.30q...: err = %v, want the nesting limit", src, err)
		}
		if _, err := Parse("{{ x" + strings.Repeat(link, 150) + " }}"); err != nil {
			t.Errorf("150 links of %q: %v", link, err)
		}
	}
}
