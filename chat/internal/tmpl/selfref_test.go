package tmpl

import (
	"errors"
	"testing"
)

// A list that contains itself (list.append is allowed here) is compared,
// printed and serialized without recursing without end (before the checks,
// these crashed the process with a Go stack overflow or ran for minutes).
func TestSelfContainingList(t *testing.T) {
	tm, _ := Parse(`{% set l = [] %}{{ l.append(l) }}{{ l.append(l) }}{{ l }}|{{ '%s' % [l] }}`)
	if out, err := tm.Render(nil, Limits{}); err != nil || out != "NoneNone[[...], [...]]|[[[...], [...]]]" {
		t.Errorf("printed %q, %v; want Python's [[...], [...]]", out, err)
	}
	for _, src := range []string{
		`{% set l = [] %}{{ l.append(l) }}{{ l == l }}{{ [l] == [l] }}{{ l in l }}`,
		`{% set l = [] %}{{ l.append(l) }}{{ l }}`,
		`{% set l = [] %}{{ l.append(l) }}{{ l|tojson }}`,
		`{% set l = [] %}{% set m = [] %}{{ l.append(m) }}{{ m.append(l) }}{{ l == m }}{{ l < m }}{{ [l, m]|sort }}`,
		`{% set d = {} %}{{ d.update({'d': d}) }}{{ d == d }}{{ d }}`,
		`{% set l = [] %}{{ l.append(l) }}{{ l.append(l) }}{{ '%s' % l }}`,
		`{% set a = [[[1] * 1000] * 1000] * 1000 %}{% set b = [[[1] * 1000] * 1000] * 1000 %}{{ a == b }}{{ a < b }}{{ a in [b] }}`,
	} {
		tm, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tm.Render(nil, Limits{}); err != nil {
			t.Logf("%s: %v", src, err)
		}
	}
}

// Comparing repeated (shared) structures is charged to the step budget:
// [x] * 1000 three levels deep is a billion leaves in a few thousand slots.
func TestComparisonsAreCharged(t *testing.T) {
	src := `{% set a = [[[1] * 1000] * 1000] * 1000 %}{% set b = [[[1] * 1000] * 1000] * 1000 %}{{ b in [a] * 1000 }}`
	tm, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Render(nil, Limits{MaxSteps: 100_000}); !errors.Is(err, ErrLimit) {
		t.Errorf("err = %v, want the step limit", err)
	}
}
