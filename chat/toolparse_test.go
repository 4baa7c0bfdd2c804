package chat

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"nanoserve/internal/testshared"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// counterIDs returns a deterministic id source: id0, id1, ...
func counterIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("id%d", n-1) }
}

func TestParseToolCalls(t *testing.T) {
	type call = ToolCall
	cases := []struct {
		name    string
		f       ToolFormat
		text    string
		content string
		calls   []call
	}{
		{"hermes plain", ToolFormatHermes, "Hello there.", "Hello there.", nil},
		{"hermes one", ToolFormatHermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>", "",
			[]call{{"id0", "get_weather", `{"city": "Zürich"}`}}},
		{"hermes text then two", ToolFormatHermes, "Let me check.\n\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>",
			"Let me check.", []call{{"id0", "a", `{}`}, {"id1", "b", `{"x": [1, 2]}`}}},
		{"hermes text after", ToolFormatHermes, "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n\nDone. ", "Done. ", []call{{"id0", "a", `{}`}}},
		{"hermes bad json stays content", ToolFormatHermes, "x <tool_call>{\"name\": }</tool_call> y", "x <tool_call>{\"name\": }</tool_call> y", nil},
		{"hermes unclosed stays content", ToolFormatHermes, "x <tool_call>{\"name\": \"a\", \"arguments\": {}}", "x <tool_call>{\"name\": \"a\", \"arguments\": {}}", nil},
		{"hermes end marker inside a string", ToolFormatHermes, "<tool_call>{\"name\":\"w\",\"arguments\":{\"s\":\"a</tool_call>b\"}}</tool_call> x", "x",
			[]call{{"id0", "w", `{"s":"a</tool_call>b"}`}}},
		{"hermes unfinished then bad", ToolFormatHermes, "<tool_call>{\"name\":\"w</tool_call>}</tool_call>", "<tool_call>{\"name\":\"w</tool_call>}</tool_call>", nil},
		{"hermes string arguments", ToolFormatHermes, "<tool_call>{\"name\":\"a\",\"arguments\":\"{\\\"k\\\": 1}\"}</tool_call>", "", []call{{"id0", "a", `{"k": 1}`}}},
		{"hermes no arguments", ToolFormatHermes, "<tool_call>{\"name\":\"a\"}</tool_call>", "", []call{{"id0", "a", `{}`}}},
		{"hermes arguments not object", ToolFormatHermes, "<tool_call>{\"name\":\"a\",\"arguments\":[1]}</tool_call>", "<tool_call>{\"name\":\"a\",\"arguments\":[1]}</tool_call>", nil},
		{"hermes empty name", ToolFormatHermes, "<tool_call>{\"name\":\"\",\"arguments\":{}}</tool_call>", "<tool_call>{\"name\":\"\",\"arguments\":{}}</tool_call>", nil},
		{"llama bare", ToolFormatLlama3, " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", []call{{"id0", "get_weather", `{"city": "Paris"}`}}},
		{"llama python_tag", ToolFormatLlama3, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}", "", []call{{"id0", "f", `{}`}}},
		{"llama two with ;", ToolFormatLlama3, "{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {\"a\": 1}}", "", []call{{"id0", "f", `{}`}, {"id1", "g", `{"a": 1}`}}},
		{"llama array", ToolFormatLlama3, "[{\"name\": \"f\", \"parameters\": {}}]", "", []call{{"id0", "f", `{}`}}},
		{"llama json that is not a call", ToolFormatLlama3, "{\"answer\": 42}", "{\"answer\": 42}", nil},
		{"llama call then text", ToolFormatLlama3, "{\"name\": \"f\", \"parameters\": {}} and more", "{\"name\": \"f\", \"parameters\": {}} and more", nil},
		{"llama text", ToolFormatLlama3, "The answer is {42}.", "The answer is {42}.", nil},
		{"mistral marker", ToolFormatMistral, "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": \"b\"}}, {\"name\": \"g\", \"arguments\": {}}]", "",
			[]call{{"id0", "f", `{"a": "b"}`}, {"id1", "g", `{}`}}},
		{"mistral text before", ToolFormatMistral, "Sure. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]", "Sure.", []call{{"id0", "f", `{}`}}},
		{"mistral bare (control token dropped)", ToolFormatMistral, " [{\"name\": \"f\", \"arguments\": {}}]", "", []call{{"id0", "f", `{}`}}},
		{"mistral bad", ToolFormatMistral, "[TOOL_CALLS] [{\"name\": \"f\"", "[TOOL_CALLS] [{\"name\": \"f\"", nil},
		{"mistral list text", ToolFormatMistral, "[1, 2]", "[1, 2]", nil},
		{"generic call", ToolFormatGeneric, " {\"tool_call\": {\"name\": \"f\", \"arguments\": {\"a\": 1}}}\n", "", []call{{"id0", "f", `{"a": 1}`}}},
		{"generic calls", ToolFormatGeneric, "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\", \"arguments\": {\"x\": \"}\"}}]}", "",
			[]call{{"id0", "f", `{}`}, {"id1", "g", `{"x": "}"}`}}},
		{"generic response", ToolFormatGeneric, "{\"response\": \"Hi \\\"you\\\"\\n\"}", "Hi \"you\"\n", nil},
		{"generic structured response", ToolFormatGeneric, "{\"response\": {\"k\": [1]}}", `{"k": [1]}`, nil},
		{"generic cut short", ToolFormatGeneric, "{\"response\": \"Hi", "{\"response\": \"Hi", nil},
		{"generic other object", ToolFormatGeneric, "{\"answer\": 1}", "{\"answer\": 1}", nil},
		{"generic trailing text", ToolFormatGeneric, "{\"response\": \"a\"} b", "{\"response\": \"a\"} b", nil},
		{"generic bad call", ToolFormatGeneric, "{\"tool_call\": {\"name\": \"\"}}", "{\"tool_call\": {\"name\": \"\"}}", nil},
		{"generic plain text", ToolFormatGeneric, "Hello.", "Hello.", nil},
		{"none", ToolFormatNone, "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>", "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			content, calls := ParseToolCalls(c.f, c.text, counterIDs())
			if content != c.content || !reflect.DeepEqual(calls, c.calls) {
				t.Errorf("got content %q calls %+v\nwant content %q calls %+v", content, calls, c.content, c.calls)
			}
			checkStreamAgrees(t, c.f, c.text, []int{1})
			checkStreamAgrees(t, c.f, c.text, []int{3, 1, 7})
		})
	}
}

// accumulate runs text through a ToolStream in pieces of the given sizes
// (cycled) and rebuilds content and calls from the deltas the way a client
// accumulates OpenAI deltas. It also checks the delta shape.
func accumulate(t *testing.T, f ToolFormat, text string, sizes []int) (string, []ToolCall) {
	t.Helper()
	s := NewToolStream(f, counterIDs())
	var content strings.Builder
	var calls []ToolCall
	add := func(c string, ds []ToolCallDelta) {
		content.WriteString(c)
		for _, d := range ds {
			switch {
			case d.Index == len(calls):
				if d.ID == "" || d.Type != "function" || d.Name == "" || d.Arguments != "" {
					t.Fatalf("first delta of call %d: %+v", d.Index, d)
				}
				calls = append(calls, ToolCall{ID: d.ID, Name: d.Name})
			case d.Index == len(calls)-1:
				if d.ID != "" || d.Name != "" {
					t.Fatalf("later delta repeats id/name: %+v", d)
				}
				calls[d.Index].Arguments += d.Arguments
			default:
				t.Fatalf("delta index %d out of order (%d calls)", d.Index, len(calls))
			}
		}
	}
	for i, k := 0, 0; i < len(text); k++ {
		n := min(sizes[k%len(sizes)], len(text)-i)
		add(s.Push(text[i : i+n]))
		i += n
	}
	add(s.Finish())
	return content.String(), calls
}

func checkStreamAgrees(t *testing.T, f ToolFormat, text string, sizes []int) {
	t.Helper()
	wc, wcalls := ParseToolCalls(f, text, counterIDs())
	gc, gcalls := accumulate(t, f, text, sizes)
	if gc != wc || !reflect.DeepEqual(gcalls, wcalls) {
		t.Errorf("%s %q in pieces %v:\nstream  %q %+v\nwhole   %q %+v", f, text, sizes, gc, gcalls, wc, wcalls)
	}
}

// TestToolStreamHoldsBack: no prefix of a marker is shown as content
// before the text after it decides, and text is shown as soon as it is
// decided.
func TestToolStreamHoldsBack(t *testing.T) {
	s := NewToolStream(ToolFormatHermes, counterIDs())
	if c, _ := s.Push("Hi <tool"); c != "Hi" {
		t.Errorf("pushed %q, want the text before the partial marker and its space held", "Hi")
	}
	if c, _ := s.Push("box> ok"); c != " <toolbox> ok" {
		t.Errorf("got %q after the marker failed to complete", c)
	}
	c, ds := s.Push(" <tool_call>{\"name\": \"f\", \"arguments\": {\"a\":1}}")
	if c != "" || ds != nil {
		t.Errorf("an open call block emitted %q %+v", c, ds)
	}
	c, ds = s.Push("</tool_call>")
	if c != "" || len(ds) != 2 || ds[0].Name != "f" || ds[1].Arguments != `{"a":1}` {
		t.Errorf("closed block: %q %+v", c, ds)
	}
	// Llama: a reply that starts like JSON is held; one that does not flows.
	l := NewToolStream(ToolFormatLlama3, counterIDs())
	if c, _ := l.Push(" {\"na"); c != "" {
		t.Errorf("llama bare start emitted %q", c)
	}
	l = NewToolStream(ToolFormatLlama3, counterIDs())
	if c, _ := l.Push("Paris is"); c != "Paris is" {
		t.Errorf("llama text held: %q", c)
	}
}

// toolSamples are the seeds of the fuzzers and the random-split test.
var toolSamples = []string{
	"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>",
	"a <tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call> b <tool_call>{\"name\": }</tool_call>\n<tool_call>{\"name\":\"g\"}</tool_call>  ",
	"<think>\nhmm <tool\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"</tool_call>\"}}\n</tool_call>",
	"  {\"name\": \"f\", \"parameters\": {\"x\": \"<|python_tag|>\"}}; [{\"name\": \"g\", \"parameters\": {}}]",
	"<|python_tag|>{\"name\": \"f\", \"parameters\": {}}",
	"Text [TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": [1, {\"b\": null}]}}]",
	"[{\"name\": \"f\", \"arguments\": {}}] trailing",
	"[TOOL_CALLS [ ] \t\n",
	"{\"name\": \"f\", \"parameters\": {}",
	"{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {}}]}",
	" {\"response\": \"<tool_call>\"} ",
	"héllo 🦙 <tool_call>{\"name\":\"🦙\",\"arguments\":{\"k\":\"\\u00e9\"}}</tool_call>",
}

func allFormats() []ToolFormat {
	return []ToolFormat{ToolFormatHermes, ToolFormatLlama3, ToolFormatMistral, ToolFormatGeneric, ToolFormatNone}
}

// TestToolStreamRandomSplits: for every sample and format, random chunkings
// of the text accumulate to the one-shot parse.
func TestToolStreamRandomSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, text := range toolSamples {
		for _, f := range allFormats() {
			for range 30 {
				sizes := make([]int, 1+rng.IntN(4))
				for i := range sizes {
					sizes[i] = 1 + rng.IntN(12)
				}
				checkStreamAgrees(t, f, text, sizes)
			}
		}
	}
}

// FuzzToolStream: for any text and chunking, the stream accumulates to the
// one-shot parse, and every parsed call has a name and object arguments.
func FuzzToolStream(f *testing.F) {
	for _, s := range toolSamples {
		f.Add(s, uint8(3), uint8(0))
	}
	f.Fuzz(func(t *testing.T, text string, size, format uint8) {
		fm := allFormats()[int(format)%len(allFormats())]
		sz := []int{1 + int(size%16), 1 + int(size/16)}
		checkStreamAgrees(t, fm, text, sz)
		_, calls := ParseToolCalls(fm, text, counterIDs())
		for _, c := range calls {
			var obj map[string]any
			if c.Name == "" || json.Unmarshal([]byte(c.Arguments), &obj) != nil {
				t.Fatalf("bad call %+v from %q", c, text)
			}
		}
	})
}

func TestDetectToolFormat(t *testing.T) {
	want := map[string]ToolFormat{
		"qwen2.5-0.5b-instruct.jinja":    ToolFormatHermes,
		"mistral-7b-instruct-v0.3.jinja": ToolFormatMistral,
		"llama-3.2-1b-instruct.jinja":    ToolFormatLlama3,
		"smollm2-135m-instruct.jinja":    ToolFormatNone,
		"quirks.jinja":                   ToolFormatNone,
	}
	for file, f := range want {
		b, err := os.ReadFile(filepath.Join("testdata/templates", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := DetectToolFormat(string(b)); got != f {
			t.Errorf("%s: detected %q, want %q", file, got, f)
		}
	}
	for rel, f := range map[string]ToolFormat{
		"testdata/tokenizers/hf_qwen3/tokenizer_config.json":  ToolFormatHermes,
		"testdata/gguf/qwen2/hf/tokenizer_config.json":        ToolFormatHermes,
		"testdata/tokenizers/hf_llama3/tokenizer_config.json": ToolFormatNone, // Llama-3 (3.0) has no tool calling
	} {
		b, err := os.ReadFile(filepath.Join(testshared.Dir(t), rel))
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseConfig(b)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := Parse(c.Template)
		if err != nil {
			t.Fatal(err)
		}
		if got := tmpl.ToolFormat(); got != f {
			t.Errorf("%s: detected %q, want %q", rel, got, f)
		}
	}
	for _, s := range []string{"", "auto", "hermes", "qwen", "llama3", "llama3-json", "mistral", "none"} {
		if _, err := ParseToolFormat(s); err != nil {
			t.Errorf("ParseToolFormat(%q): %v", s, err)
		}
	}
	if _, err := ParseToolFormat("gpt"); err == nil || !strings.Contains(err.Error(), "hermes") {
		t.Errorf("ParseToolFormat(gpt): %v", err)
	}
}

func TestToolCallIDs(t *testing.T) {
	for range 20 {
		id := NewToolCallID(ToolFormatMistral)
		if !isMistralID(id) {
			t.Fatalf("mistral id %q", id)
		}
		id = NewToolCallID(ToolFormatHermes)
		if !strings.HasPrefix(id, "call_") || len(id) != 29 || !utf8.ValidString(id) {
			t.Fatalf("id %q", id)
		}
	}
	m := ToolFormatMistral.TemplateID("call_abc")
	if !isMistralID(m) || m != ToolFormatMistral.TemplateID("call_abc") || m == ToolFormatMistral.TemplateID("call_abd") {
		t.Errorf("mapped id %q not a stable 9-alnum id", m)
	}
	if ToolFormatMistral.TemplateID("abcDEF123") != "abcDEF123" || ToolFormatHermes.TemplateID("call_abc") != "call_abc" {
		t.Error("ids that fit were changed")
	}
	v, err := ToolCall{ID: "x", Name: "f", Arguments: `{"b": 1.0, "a": "é"}`}.TemplateValue()
	if err != nil || string(v) != `{"id":"x","type":"function","function":{"name":"f","arguments":{"b": 1.0, "a": "é"}}}` {
		t.Errorf("TemplateValue = %s, %v", v, err)
	}
	for _, bad := range []string{`[1]`, `"{}"`, `{`, `nope`} {
		if _, err := (ToolCall{Name: "f", Arguments: bad}).TemplateValue(); err == nil {
			t.Errorf("arguments %q accepted", bad)
		}
	}
}

// FuzzOpenAIToolCall: any request bytes either convert — arguments an
// object, a string id mapped to Mistral's 9 alphanumerics — or fail with an
// error; never a panic.
func FuzzOpenAIToolCall(f *testing.F) {
	f.Add([]byte(`{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": [1, 2.0]}"}}`))
	f.Add([]byte(`{"function":{"arguments":"","name":"g"},"id":"abcDEF123"}`))
	f.Add([]byte(`{"id":7,"function":{"name":"f","arguments":{"x":null}}}`))
	f.Add([]byte(`{"function":{"name":"f","arguments":"[1]"}}`))
	tmpl, err := Parse(`{% for c in messages[0].tool_calls %}{{ c.id }} {{ c.function.arguments|tojson }} {{ c.function.arguments.items()|list|length }}{% endfor %}`)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := OpenAIToolCall(json.RawMessage(raw), ToolFormatMistral)
		if err != nil {
			return
		}
		out, err := tmpl.Render([]Message{{Role: "assistant", ToolCalls: []any{v}}}, Options{})
		if err != nil {
			t.Fatalf("%s: converted but does not render: %v", raw, err)
		}
		var head struct {
			ID any `json:"id"`
		}
		json.Unmarshal(raw, &head)
		if _, ok := head.ID.(string); ok && !isMistralID(strings.SplitN(out, " ", 2)[0]) {
			t.Fatalf("%s: id not mapped: %q", raw, out)
		}
	})
}
