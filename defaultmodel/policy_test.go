package defaultmodel

import "testing"

// TestBlockStop: the output is cut just after the brace closing the block
// the prompt opened; braces in strings, runes and comments do not count;
// a prompt with no open block is never cut; pieces may split anywhere.
func TestBlockStop(t *testing.T) {
	for _, c := range []struct{ prompt, out, want string }{
		{"if err != nil {", "\n\t\treturn err\n\t}\n\treturn nil\n}", "\n\t\treturn err\n\t}"},
		{"func f() {", "\n\tif x {\n\t\ty()\n\t}\n}\nfunc g() {}", "\n\tif x {\n\t\ty()\n\t}\n}"},
		{"func f() {", "\n\ts := \"}\" // }\n\tr := '}'\n}\nmore", "\n\ts := \"}\" // }\n\tr := '}'\n}"},
		{"s := \"{\"; f() {", "}x", "}"},
		{"package main", "\n\nfunc main() {\n}\n}", "\n\nfunc main() {\n}\n}"},
	} {
		for split := 0; split <= len(c.out); split++ {
			b := NewBlockStop(c.prompt)
			got, done := b.Cut(c.out[:split])
			if !done {
				rest, _ := b.Cut(c.out[split:])
				got += rest
			}
			if got != c.want {
				t.Errorf("prompt %q, output %q split at %d: %q, want %q", c.prompt, c.out, split, got, c.want)
				break
			}
		}
	}
}
