package chat

import (
	"encoding/json"
	"errors"
	"flag"
	"nanoserve/internal/testshared"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "regenerate testdata/golden with testdata/render_golden.py (needs python3 + jinja2)")

type templateSpec struct {
	Name         string         `json:"name"`
	File         string         `json:"file"`
	SharedConfig string         `json:"shared_config"`
	BOS          string         `json:"bos"`
	EOS          string         `json:"eos"`
	Vars         map[string]any `json:"vars"`
}

type caseSpec struct {
	Name                string            `json:"name"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	Vars                map[string]any    `json:"vars"`
	Tools               []json.RawMessage `json:"tools"`
	Messages            []Message         `json:"messages"`
	OpenAI              bool              `json:"openai"` // tool_calls arguments are JSON strings
}

type casesFile struct {
	Now       string         `json:"now"`
	Templates []templateSpec `json:"templates"`
	Cases     []caseSpec     `json:"cases"`
}

type goldenFile struct {
	Template   string  `json:"template"`
	ParseError *string `json:"parse_error"` // Jinja2 refused to compile it
	Results    []struct {
		Case   string  `json:"case"`
		Output *string `json:"output"`
		Raised *string `json:"raised"`
		Error  *string `json:"error"`
	} `json:"results"`
}

func loadCases(t testing.TB) casesFile {
	t.Helper()
	b, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cf casesFile
	if err := json.Unmarshal(b, &cf); err != nil {
		t.Fatal(err)
	}
	return cf
}

// loadTemplate returns the compiled template and the base options for a spec.
func loadTemplate(t testing.TB, spec templateSpec) (*Template, Options) {
	t.Helper()
	opt := Options{Extra: map[string]any{}}
	var src string
	if spec.SharedConfig != "" {
		b, err := os.ReadFile(filepath.Join(testshared.Dir(t), spec.SharedConfig))
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseConfig(b)
		if err != nil {
			t.Fatal(err)
		}
		src, opt.BOS, opt.EOS = c.Template, c.BOS, c.EOS
		for k, v := range c.Vars {
			opt.Extra[k] = v
		}
	} else {
		b, err := os.ReadFile(filepath.Join("testdata", spec.File))
		if err != nil {
			t.Fatal(err)
		}
		src, opt.BOS, opt.EOS = string(b), spec.BOS, spec.EOS
	}
	for k, v := range spec.Vars {
		opt.Extra[k] = v
	}
	tmpl, err := Parse(src)
	if err != nil {
		t.Fatalf("%s: %v", spec.Name, err)
	}
	return tmpl, opt
}

// templateSource reads a spec's source without parsing it.
func templateSource(t testing.TB, spec templateSpec) string {
	t.Helper()
	if spec.SharedConfig != "" {
		b, err := os.ReadFile(filepath.Join(testshared.Dir(t), spec.SharedConfig))
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseConfig(b)
		if err != nil {
			t.Fatal(err)
		}
		return c.Template
	}
	b, err := os.ReadFile(filepath.Join("testdata", spec.File))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fixedNow(t testing.TB, s string) func() time.Time {
	tm, err := time.Parse("2006-01-02T15:04:05Z", s)
	if err != nil {
		t.Fatal(err)
	}
	return func() time.Time { return tm }
}

func TestGolden(t *testing.T) {
	if *update {
		cmd := exec.Command("python3", "testdata/render_golden.py", testshared.Dir(t))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("render_golden.py: %v", err)
		}
	}
	cf := loadCases(t)
	var identical, raised, failed, permissive, refused int
	defer func() {
		t.Logf("%d templates x %d conversations: %d renders byte-identical to Jinja2, %d raise_exception identical, %d failing in both, %d rendered here where Jinja2's sandbox refuses a mutation, %d templates refused at parse by both",
			len(cf.Templates), len(cf.Cases), identical, raised, failed, permissive, refused)
	}()
	for _, spec := range cf.Templates {
		t.Run(spec.Name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata/golden", spec.Name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var g goldenFile
			if err := json.Unmarshal(b, &g); err != nil {
				t.Fatal(err)
			}
			if g.ParseError != nil {
				if _, err := Parse(templateSource(t, spec)); err == nil {
					t.Fatalf("Jinja2 refused the template (%s) but Parse accepted it", *g.ParseError)
				}
				refused++
				return
			}
			tmpl, base := loadTemplate(t, spec)
			want := map[string]int{}
			for i, r := range g.Results {
				want[r.Case] = i
			}
			for _, c := range cf.Cases {
				t.Run(c.Name, func(t *testing.T) {
					i, ok := want[c.Name]
					if !ok {
						t.Fatalf("no golden for case %q (run go test ./chat -run TestGolden -update)", c.Name)
					}
					gr := g.Results[i]
					opt := base
					opt.Extra = map[string]any{}
					for k, v := range base.Extra {
						opt.Extra[k] = v
					}
					for k, v := range c.Vars {
						opt.Extra[k] = v
					}
					opt.AddGenerationPrompt = c.AddGenerationPrompt
					if c.Tools != nil {
						for _, tool := range c.Tools {
							opt.Tools = append(opt.Tools, tool)
						}
					}
					opt.Now = fixedNow(t, cf.Now)
					msgs := c.Messages
					if c.OpenAI {
						msgs = openAIMessages(t, msgs)
					}
					got, err := tmpl.Render(msgs, opt)
					switch {
					case gr.Output != nil:
						if err != nil {
							t.Fatalf("render error %v; Python rendered:\n%s", err, *gr.Output)
						}
						if got != *gr.Output {
							t.Errorf("mismatch at byte %d\n got: %q\nwant: %q", firstDiff(got, *gr.Output), got, *gr.Output)
						} else {
							identical++
						}
					case gr.Raised != nil:
						var re *RaiseError
						if !errors.As(err, &re) || re.Message != *gr.Raised {
							t.Fatalf("want raise_exception(%q), got output %q, err %v", *gr.Raised, got, err)
						}
						raised++
					case gr.Error != nil:
						switch {
						case err != nil:
							failed++
						case strings.HasPrefix(*gr.Error, "SecurityError:"):
							// Jinja2's immutable sandbox refuses list.append & co.;
							// this interpreter allows them (see tmpl/methods.go).
							permissive++
						default:
							t.Fatalf("Python failed (%s) but Go rendered %q", *gr.Error, got)
						}
					}
				})
			}
		})
	}
}

func firstDiff(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// openAIMessages converts the tool calls of OpenAI-shaped messages with
// OpenAIToolCall, as the server does (ids kept: the cases use ids every
// template accepts).
func openAIMessages(t *testing.T, in []Message) []Message {
	t.Helper()
	out := make([]Message, len(in))
	for i, m := range in {
		out[i] = m
		out[i].ToolCalls = nil
		for _, c := range m.ToolCalls {
			v, err := OpenAIToolCall(c.(json.RawMessage), ToolFormatHermes)
			if err != nil {
				t.Fatal(err)
			}
			out[i].ToolCalls = append(out[i].ToolCalls, v)
		}
	}
	return out
}
