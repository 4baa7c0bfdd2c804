package chat

import (
	"encoding/json"
	"errors"
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRaiseException(t *testing.T) {
	tmpl, err := Parse(`{% if messages[0].role != 'user' %}{{ raise_exception('first message must be "user", got ' + messages[0].role) }}{% endif %}ok`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render([]Message{{Role: "system", Content: "x"}}, Options{})
	var re *RaiseError
	if !errors.As(err, &re) {
		t.Fatalf("want *RaiseError, got %v", err)
	}
	if re.Message != `first message must be "user", got system` {
		t.Errorf("message %q", re.Message)
	}
	if !strings.Contains(err.Error(), re.Message) {
		t.Errorf("error text %q does not carry the message", err.Error())
	}
	out, err := tmpl.Render([]Message{{Role: "user", Content: "x"}}, Options{})
	if err != nil || out != "ok" {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestParseErrors(t *testing.T) {
	// Python Jinja2 rejects all of these at parse time; so must we. (The
	// engine is more lenient than Jinja2 on some other malformed tags, e.g.
	// "{% if %}" or "{% set x = %}" parse and render nothing.)
	for _, src := range []string{
		"{% for m in messages %}{{ m.content }}",
		"{{ messages[0].content ",
		"{% endfor %}",
		"{{ 'unterminated }}",
		"{% for %}{% endfor %}",
		"{{ (1 + }}",
		"{% if true %}a{% else %}b{% else %}c{% endif %}",
		"{% if x %}a{% endfor %}",
	} {
		_, err := Parse(src)
		if err == nil {
			t.Errorf("%q: no parse error", src)
		} else if !strings.HasPrefix(err.Error(), "chat: parse template:") {
			t.Errorf("%q: error %q lacks the chat prefix", src, err)
		}
	}
	if _, err := Parse("  \n"); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("empty template: got %v, want ErrNoTemplate", err)
	}
}

func TestConfigWithoutTemplate(t *testing.T) {
	shared := testshared.Dir(t)
	for _, p := range []string{
		"testdata/gguf/gpt2/hf/tokenizer_config.json",
		"testdata/gguf/llama_gqa/hf/tokenizer_config.json",
	} {
		b, err := os.ReadFile(filepath.Join(shared, p))
		if err != nil {
			t.Fatal(err)
		}
		_, bos, _, err := ConfigTemplate(b)
		if !errors.Is(err, ErrNoTemplate) {
			t.Errorf("%s: got %v, want ErrNoTemplate", p, err)
		}
		if err.Error() != "chat: model has no chat template; pass --chat-template FILE" {
			t.Errorf("error text %q", err)
		}
		if bos == "" {
			t.Errorf("%s: BOS should still be reported", p)
		}
	}
}

func TestParseConfig(t *testing.T) {
	cfg := `{
	  "bos_token": {"content": "<s>", "lstrip": false, "__type": "AddedToken"},
	  "eos_token": "</s>",
	  "unk_token": {"content": "<unk>"},
	  "pad_token": null,
	  "additional_special_tokens": ["<a>", {"content": "<b>"}],
	  "chat_template": [
	    {"name": "default", "template": "{{ bos_token }}D"},
	    {"name": "tool_use", "template": "T"}
	  ]
	}`
	c, err := ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if c.Template != "{{ bos_token }}D" || c.Named["tool_use"] != "T" || c.BOS != "<s>" || c.EOS != "</s>" {
		t.Errorf("config %+v", c)
	}
	if c.Vars["unk_token"] != "<unk>" || c.Vars["pad_token"] != nil {
		t.Errorf("vars %v", c.Vars)
	}
	if got, ok := c.Vars["additional_special_tokens"].([]any); !ok || len(got) != 2 || got[0] != "<a>" || got[1] != "<b>" {
		t.Errorf("additional_special_tokens %v", c.Vars["additional_special_tokens"])
	}
	src, bos, eos, err := ConfigTemplate([]byte(cfg))
	if err != nil || src != c.Template || bos != "<s>" || eos != "</s>" {
		t.Errorf("ConfigTemplate: %q %q %q %v", src, bos, eos, err)
	}
	for _, bad := range []string{
		`not json`,
		`{"chat_template": 5}`,
		`{"chat_template": [{"name": "x", "template": "y"}]}`,
		`{"bos_token": {"lstrip": true}}`,
		`{"additional_special_tokens": "x"}`,
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "chat: ") {
			t.Errorf("%s: got %v, want a chat: error", bad, err)
		}
	}
}

func TestStartsWithBOS(t *testing.T) {
	cf := loadCases(t)
	msgs := []Message{{Role: "user", Content: "hi"}}
	want := map[string]bool{
		"llama3": true, "llama3.2": true, "mistral-v0.3": true, // write {{ bos_token }} themselves
		"qwen3": false, "gguf_qwen2": false, "qwen2.5": false, // no BOS at all
		"smollm2": true, // bos_token is <|im_start|>, which the text starts with anyway
	}
	for _, spec := range cf.Templates {
		if _, ok := want[spec.Name]; !ok {
			continue // the llama.cpp collection: golden-tested, BOS texts are placeholders
		}
		tmpl, opt := loadTemplate(t, spec)
		opt.Now = fixedNow(t, cf.Now)
		out, err := tmpl.Render(msgs, opt)
		if err != nil {
			t.Fatal(err)
		}
		if got := StartsWithBOS(out, opt.BOS); got != want[spec.Name] {
			t.Errorf("%s: StartsWithBOS = %v, want %v (text %q)", spec.Name, got, want[spec.Name], out[:min(len(out), 40)])
		}
	}
	if StartsWithBOS("<s>x", "") {
		t.Error("empty BOS must never match")
	}
}

func TestMessageUnmarshal(t *testing.T) {
	var m Message
	err := json.Unmarshal([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f","arguments":{"z":1,"a":2.0}}}],"reasoning_content":"hmm"}`), &m)
	if err != nil {
		t.Fatal(err)
	}
	if m.Role != "assistant" || m.Content != "" || len(m.ToolCalls) != 1 || m.Extra["reasoning_content"] == nil {
		t.Fatalf("%+v", m)
	}
	out, err := Render(`{{ messages[0].tool_calls[0].function.arguments | tojson }}|{{ messages[0].reasoning_content }}|{{ 'tool_calls' in messages[0] }}{{ 'name' in messages[0] }}`, []Message{m}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"z": 1, "a": 2.0}|hmm|TrueFalse`; out != want {
		t.Errorf("got %q want %q", out, want)
	}
	if err := json.Unmarshal([]byte(`{"role": 5}`), &m); err == nil {
		t.Error("want an error for a non-string role")
	}
}

// Expected strings below are Python 3 json.dumps / datetime.strftime output.
func TestTojsonMatchesPython(t *testing.T) {
	floats := map[float64]string{
		1.0: "1.0", 0.1: "0.1", 1e16: "1e+16", 1234567890123456.0: "1234567890123456.0",
		1e-4: "0.0001", 1e-5: "1e-05", 123456789.0: "123456789.0", 2.5e-7: "2.5e-07",
		1.5e300: "1.5e+300", 3.14159: "3.14159", 100.0: "100.0", 1e15: "1000000000000000.0",
	}
	for f, want := range floats {
		got, err := Render(`{{ x|tojson }}`, nil, Options{Extra: map[string]any{"x": f}})
		if err != nil || got != want {
			t.Errorf("float %v: got %q, %v; want %s", f, got, err, want)
		}
	}
	v := json.RawMessage(`{"b": [1, 2.0, {"z": null, "a": true}], "a": "é\u2028\u0001\u007f\"\\/\n😀", "e": [], "f": {}}`)
	for _, c := range []struct {
		args string
		want string
	}{
		{"", "{\"b\": [1, 2.0, {\"z\": null, \"a\": true}], \"a\": \"é\u2028\\u0001\u007f\\\"\\\\/\\n😀\", \"e\": [], \"f\": {}}"},
		{"(ensure_ascii=true)", `{"b": [1, 2.0, {"z": null, "a": true}], "a": "\u00e9\u2028\u0001\u007f\"\\/\n\ud83d\ude00", "e": [], "f": {}}`},
		{"(indent=2)", "{\n  \"b\": [\n    1,\n    2.0,\n    {\n      \"z\": null,\n      \"a\": true\n    }\n  ],\n  \"a\": \"é\u2028\\u0001\u007f\\\"\\\\/\\n😀\",\n  \"e\": [],\n  \"f\": {}\n}"},
		{"(separators=(',', ':'), sort_keys=true)", "{\"a\":\"é\u2028\\u0001\u007f\\\"\\\\/\\n😀\",\"b\":[1,2.0,{\"a\":true,\"z\":null}],\"e\":[],\"f\":{}}"},
		{"(indent=0)", "{\n\"b\": [\n1,\n2.0,\n{\n\"z\": null,\n\"a\": true\n}\n],\n\"a\": \"é\u2028\\u0001\u007f\\\"\\\\/\\n😀\",\n\"e\": [],\n\"f\": {}\n}"},
	} {
		got, err := Render(`{{ x|tojson`+c.args+` }}`, nil, Options{Extra: map[string]any{"x": v}})
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("tojson%s:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
	if _, err := Render(`{{ nothing|tojson }}`, nil, Options{}); err == nil {
		t.Error("tojson of undefined must fail")
	}
}

func TestStrftimeMatchesPython(t *testing.T) {
	t1 := time.Date(2025, 3, 9, 14, 5, 6, 0, time.UTC)
	t2 := time.Date(2024, 1, 1, 0, 7, 0, 0, time.UTC)
	for _, c := range []struct {
		t         time.Time
		fmt, want string
	}{
		{t1, "%d %b %Y", "09 Mar 2025"},
		{t1, "%d %B %Y", "09 March 2025"},
		{t1, "%Y-%m-%d %H:%M:%S", "2025-03-09 14:05:06"},
		{t1, "%A %a %j %p %I %y", "Sunday Sun 068 PM 02 25"},
		{t1, "%-d/%-m %e|%Z|%z|%%|%c", "9/3  9|||%|Sun Mar  9 14:05:06 2025"},
		{t1, "%F %T %D %R %U %w", "2025-03-09 14:05:06 03/09/25 14:05 10 0"},
		{t2, "%I %p %-I %U %j %e", "12 AM 12 00 001  1"},
		{t2, "%c", "Mon Jan  1 00:07:00 2024"},
	} {
		if got := strftime(c.fmt, c.t); got != c.want {
			t.Errorf("strftime(%q): got %q want %q", c.fmt, got, c.want)
		}
	}
}

// FuzzRender checks that no template or message text makes Parse/Render panic.
func FuzzRender(f *testing.F) {
	for _, p := range []string{"templates/llama-3.2-1b-instruct.jinja", "templates/mistral-7b-instruct-v0.3.jinja", "templates/qwen2.5-0.5b-instruct.jinja"} {
		b, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), "hello")
	}
	f.Add("{{ messages[5].content }}", "x")
	f.Add("{% for m in messages %}{{ m.content|tojson(indent=2) }}{% endfor %}", "\x00\xff\"")
	f.Add("{{ raise_exception(1) }}", "")
	f.Add("{{ strftime_now('%-') }}{{ x|tojson(separators=1) }}", "")
	f.Add("{% set ns = namespace(a=1) %}{{ ns.a / 0 }}{{ messages|length }}", "")
	f.Add("{{ (messages|first).content[::-1] }}{{ range(3)|list }}", "abc")
	f.Fuzz(func(t *testing.T, src, content string) {
		tmpl, err := Parse(src)
		if err != nil {
			return
		}
		now := func() time.Time { return time.Unix(0, 0) }
		_, _ = tmpl.Render([]Message{{Role: "user", Content: content}}, Options{BOS: "<s>", Now: now})
	})
}

func BenchmarkRenderLlama3(b *testing.B) {
	buf, err := os.ReadFile(filepath.Join(testshared.Dir(b), "testdata/tokenizers/hf_llama3/tokenizer_config.json"))
	if err != nil {
		b.Fatal(err)
	}
	src, bos, eos, err := ConfigTemplate(buf)
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := Parse(src)
	if err != nil {
		b.Fatal(err)
	}
	msgs := []Message{{Role: "system", Content: "You are a helpful assistant."}}
	for i := range 9 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, Message{Role: role, Content: strings.Repeat("Some moderately long turn text. ", 8)})
	}
	opt := Options{BOS: bos, EOS: eos, AddGenerationPrompt: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(msgs, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRange(t *testing.T) {
	for src, want := range map[string]string{
		"{{ range(3)|list }}":                                         "[0, 1, 2]",
		"{{ range(1, 10, 3)|list }}":                                  "[1, 4, 7]",
		"{{ range(5, 0, -2)|list }}":                                  "[5, 3, 1]",
		"{{ range(2, 2)|list }}":                                      "[]",
		"{{ range(100000)|length }}":                                  "100000",
		"{% for i in range(0, messages|length) %}{{ i }}{% endfor %}": "0",
	} {
		got, err := Render(src, []Message{{Role: "user"}}, Options{})
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", src, got, err, want)
		}
	}
	for _, src := range []string{"{{ range(100001) }}", "{{ range(0, 10, 0) }}", "{{ range('a') }}", "{{ range(-9223372036854775807, 9223372036854775807) }}"} {
		if _, err := Render(src, []Message{{Role: "user"}}, Options{}); err == nil {
			t.Errorf("%s: want an error", src)
		}
	}
}
