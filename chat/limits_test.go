package chat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileTemplates each exceed one render or parse limit. Before the limits
// (now in chat/internal/tmpl) the first killed the process with "fatal
// error: stack overflow", and the others ran for minutes or allocated
// gigabytes.
var hostileTemplates = map[string]string{
	"recursive macro":    `{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}`,
	"mutual recursion":   `{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}`,
	"caller recursion":   `{% macro m() %}{{ caller() }}{% endmacro %}{% macro r() %}{% call m() %}{{ r() }}{% endcall %}{% endmacro %}{{ r() }}`,
	"nested loops":       `{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}`,
	"doubling string":    `{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}`,
	"repetition":         `{{ 'a' * 1000000000 }}`,
	"replace blowup":     `{% set s = 'a' * 1000000 %}{{ s|replace('a', s) }}`,
	"replace method":     `{% set s = 'a' * 1000000 %}{{ s.replace('a', s) }}`,
	"indent width":       `{{ 'a\nb'|indent(1000000000) }}`,
	"aliased join":       `{% set s = 'a' * 1000000 %}{% set l = [] %}{% for i in range(100000) %}{% set _ = l.append(s) %}{% endfor %}{{ l|join('') }}`,
	"aliased print":      `{% set s = 'a' * 1000000 %}{% set l = [] %}{% for i in range(1000) %}{% set _ = l.append(s) %}{% endfor %}{% set l2 = [] %}{% for i in range(1000) %}{% set _ = l2.append(l) %}{% endfor %}{{ l2 }}`,
	"aliased tojson":     `{% set s = 'a' * 1000000 %}{% set l = [] %}{% for i in range(1000) %}{% set _ = l.append(s) %}{% endfor %}{% set l2 = [] %}{% for i in range(1000) %}{% set _ = l2.append(l) %}{% endfor %}{{ l2|tojson }}`,
	"list doubling":      `{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}`,
	"nested parens":      `{{ ` + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + ` }}`,
	"nested not":         `{{ ` + strings.Repeat("not ", 100000) + `true }}`,
	"nested blocks":      strings.Repeat(`{% if true %}`, 100000) + strings.Repeat(`{% endif %}`, 100000),
	"output per message": `{% for m in messages %}{% for i in range(100000) %}{{ m.content * 1000 }}{% endfor %}{% endfor %}`,
}

func TestHostileTemplatesFailWithLimitError(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "Hello"}}
	for name, src := range hostileTemplates {
		t.Run(name, func(t *testing.T) {
			out, err := Render(src, msgs, Options{})
			if err == nil {
				t.Fatalf("rendered %d bytes, want a limit error", len(out))
			}
			if !errors.Is(err, ErrTemplateLimit) {
				t.Fatalf("err = %v, want one matching ErrTemplateLimit", err)
			}
			if !strings.HasPrefix(err.Error(), "chat: ") {
				t.Errorf("err = %q, want the chat: prefix", err)
			}
		})
	}
}

// A bounded recursion and a long but finite loop are legitimate and render.
func TestLimitsLeaveBoundedTemplatesAlone(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{{ n }}{% endmacro %}{{ f(100)|length }}`, "193"},
		{`{% set ns = namespace(n=0) %}{% for a in range(1000) %}{% for b in range(100) %}{% set ns.n = ns.n + 1 %}{% endfor %}{% endfor %}{{ ns.n }}`, "100000"},
		{`{{ ('ab' * 1000000)|length }}`, "2000000"},
	} {
		got, err := Render(c.src, nil, Options{})
		if err != nil || got != c.want {
			t.Errorf("Render(%.60q) = %q, %v; want %q", c.src, got, err, c.want)
		}
	}
}

// Options.Limits tightens the defaults per render.
func TestOptionsLimits(t *testing.T) {
	src := `{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(20) }}`
	if _, err := Render(src, nil, Options{}); err != nil {
		t.Fatalf("default limits: %v", err)
	}
	if _, err := Render(src, nil, Options{Limits: Limits{MaxDepth: 10}}); !errors.Is(err, ErrTemplateLimit) {
		t.Fatalf("MaxDepth 10: err = %v, want ErrTemplateLimit", err)
	}
	if _, err := Render(`{{ 'x' * 100 }}`, nil, Options{Limits: Limits{MaxOutput: 50}}); !errors.Is(err, ErrTemplateLimit) {
		t.Fatalf("MaxOutput 50: err = %v, want ErrTemplateLimit", err)
	}
	if _, err := Render(`{% for i in range(100) %}{% endfor %}`, nil, Options{Limits: Limits{MaxSteps: 50}}); !errors.Is(err, ErrTemplateLimit) {
		t.Fatalf("MaxSteps 50: err = %v, want ErrTemplateLimit", err)
	}
}

func TestProbe(t *testing.T) {
	good, err := Parse(`{% for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := good.Probe(Options{}); err != nil {
		t.Errorf("Probe(good) = %v", err)
	}
	bad, err := Parse(hostileTemplates["recursive macro"])
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Probe(Options{}); !errors.Is(err, ErrTemplateLimit) {
		t.Errorf("Probe(recursive) = %v, want ErrTemplateLimit", err)
	}
}

// A request-sized message (4 MiB, the server's body limit) renders through
// the real templates, and reading it many times costs no allocation budget:
// only expressions that build values are charged.
func TestLimitsAllowLargeMessages(t *testing.T) {
	big := strings.Repeat("word ", 4<<20/5-1) + "end"
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: big}}
	files, _ := filepath.Glob("testdata/templates/*.jinja")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Render(string(b), msgs, Options{BOS: "<s>", EOS: "</s>", AddGenerationPrompt: true})
		if err != nil && !errors.As(err, new(*RaiseError)) {
			t.Errorf("%s: %v", filepath.Base(p), err)
		} else if err == nil && !strings.Contains(out, big) {
			t.Errorf("%s: the message is not in the output", filepath.Base(p))
		}
	}
	src := `{% for m in messages %}{% for i in range(500) %}{% if m.content %}{% endif %}{% endfor %}{{ m.content|length }}{% endfor %}`
	if _, err := Render(src, msgs, Options{}); err != nil {
		t.Errorf("reading a 4 MiB content 500 times: %v", err)
	}
}
