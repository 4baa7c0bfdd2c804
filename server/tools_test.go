package server

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/internal/testshared"
	"nanoserve/model"
)

// The tool tests serve the shared random-weight Qwen2 GGUF (Qwen3
// vocabulary, 512 positions) with its own Hugging Face chat template,
// which teaches the Hermes format (<tool_call>...</tool_call>). Its
// replies are noise, so tests that need the model to *write* a call
// script the reply with Server.gen; the prompt rendering, tokenization
// and context checks before it are the real ones.
var (
	qwenOnce sync.Once
	qwenEng  *engine.Engine
	qwenTmpl *chat.Template
	qwenOpts chat.Options
	qwenErr  error
)

const qwenModel = "qwen2-tiny"

func qwenToolServer(t *testing.T, mod func(*Options)) *testServer {
	t.Helper()
	dir := testshared.Dir(t)
	qwenOnce.Do(func() {
		var m *model.Model
		m, qwenErr = model.Load(filepath.Join(dir, "testdata/gguf/qwen2/qwen2-F16.gguf"), model.Options{Threads: 1})
		if qwenErr != nil {
			return
		}
		if qwenEng, qwenErr = engine.New(m, engine.Options{}); qwenErr != nil {
			return
		}
		var b []byte
		if b, qwenErr = os.ReadFile(filepath.Join(dir, "testdata/gguf/qwen2/hf/tokenizer_config.json")); qwenErr != nil {
			return
		}
		var cfg *chat.Config
		if cfg, qwenErr = chat.ParseConfig(b); qwenErr != nil {
			return
		}
		qwenTmpl, qwenErr = chat.Parse(cfg.Template)
		qwenOpts = chat.Options{BOS: cfg.BOS, EOS: cfg.EOS, Extra: cfg.Vars}
	})
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	opts := Options{ModelNames: []string{qwenModel}, Template: qwenTmpl, TemplateOptions: qwenOpts,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(qwenEng, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return newTS(s, hs.URL)
}

// script makes the server's generator yield the replies in turn (each
// cut into pieces of a few bytes, at rune boundaries, as the engine
// yields text) and records the prompts it was given.
type script struct {
	mu      sync.Mutex
	replies []string
	prompts []string
}

func (sc *script) gen(ctx context.Context, req engine.Request) (iter.Seq[engine.Token], func() *engine.Result) {
	sc.mu.Lock()
	sc.prompts = append(sc.prompts, req.Prompt)
	reply := sc.replies[0]
	if len(sc.replies) > 1 {
		sc.replies = sc.replies[1:]
	}
	sc.mu.Unlock()
	res := &engine.Result{FinishReason: engine.FinishStop}
	toks := func(yield func(engine.Token) bool) {
		for _, piece := range pieces(reply, 5) {
			res.Text += piece
			res.IDs = append(res.IDs, 0)
			res.Usage.CompletionTokens++
			if !yield(engine.Token{Text: piece}) {
				res.FinishReason = engine.FinishCancelled
				return
			}
		}
	}
	return toks, func() *engine.Result {
		if res.Text != reply && res.FinishReason == engine.FinishStop { // non-streamed: the whole reply
			res.Text, res.Usage.CompletionTokens = reply, len(pieces(reply, 5))
		}
		return res
	}
}

func (sc *script) set(replies ...string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.replies = replies
}

func (sc *script) prompt(i int) string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.prompts[i]
}

// pieces cuts s into pieces of about n bytes without splitting a rune.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		for k < len(s) && !isRuneStart(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather in a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

const callReply = "I'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>"

type toolReply struct {
	Choices []struct {
		Message struct {
			Role      string          `json:"role"`
			Content   *string         `json:"content"`
			ToolCalls json.RawMessage `json:"tool_calls"`
			Function  json.RawMessage `json:"function_call"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// streamed gathers a chat SSE body: content, the raw tool-call deltas, the
// legacy function_call deltas and the finish reason.
func streamed(t *testing.T, body []byte) (content string, deltas []map[string]any, fdeltas []map[string]any, finish string) {
	t.Helper()
	for _, ev := range sseEvents(t, body) {
		if ev == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   *string          `json:"content"`
					ToolCalls []map[string]any `json:"tool_calls"`
					Function  map[string]any   `json:"function_call"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &ch); err != nil {
			t.Fatalf("chunk %s: %v", ev, err)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				content += *c.Delta.Content
			}
			if len(c.Delta.ToolCalls) > 1 {
				t.Errorf("chunk with %d tool-call deltas; OpenAI sends one per chunk", len(c.Delta.ToolCalls))
			}
			deltas = append(deltas, c.Delta.ToolCalls...)
			if c.Delta.Function != nil {
				fdeltas = append(fdeltas, c.Delta.Function)
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	return
}

// TestToolCallsWire: a scripted Hermes reply becomes tool_calls with
// finish_reason "tool_calls", non-streamed and streamed, in OpenAI's exact
// shapes; parallel_tool_calls false keeps one call; tool_choice "none"
// leaves the text alone; the legacy functions field answers with
// function_call.
func TestToolCallsWire(t *testing.T) {
	sc := &script{replies: []string{callReply}}
	ts := qwenToolServer(t, func(o *Options) {})
	ts.gen = scripted(sc.gen)
	req := `{"messages":[{"role":"user","content":"Weather in Zürich?"}],"tools":[` + weatherTool + `]`

	status, _, body := ts.post(t, "/v1/chat/completions", req+`}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	r := decode[toolReply](t, body)
	msg := r.Choices[0].Message
	var calls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	json.Unmarshal(msg.ToolCalls, &calls)
	if r.Choices[0].FinishReason != "tool_calls" || msg.Content == nil || *msg.Content != "I'll check." || len(calls) != 1 ||
		!strings.HasPrefix(calls[0].ID, "call_") || calls[0].Type != "function" || calls[0].Function.Name != "get_weather" ||
		calls[0].Function.Arguments != `{"city": "Zürich"}` {
		t.Fatalf("non-streamed reply %s", body)
	}
	// The template writes each tool with tojson, keys in the client's order.
	if !strings.Contains(sc.prompt(0), "<tools>\n"+`{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city."`) {
		t.Errorf("prompt does not list the tool:\n%s", sc.prompt(0))
	}

	status, _, body = ts.post(t, "/v1/chat/completions", req+`,"stream":true}`)
	if status != 200 {
		t.Fatalf("stream status %d: %s", status, body)
	}
	content, deltas, _, finish := streamed(t, body)
	if content != "I'll check." || finish != "tool_calls" || len(deltas) != 2 {
		t.Fatalf("streamed content %q finish %q deltas %v", content, finish, deltas)
	}
	first, _ := json.Marshal(deltas[0])
	id, _ := deltas[0]["id"].(string)
	if want := `{"function":{"arguments":"","name":"get_weather"},"id":"` + id + `","index":0,"type":"function"}`; string(first) != want || !strings.HasPrefix(id, "call_") {
		t.Errorf("first tool delta %s, want %s", first, want)
	}
	second, _ := json.Marshal(deltas[1])
	if string(second) != `{"function":{"arguments":"{\"city\": \"Zürich\"}"},"index":0}` {
		t.Errorf("argument delta %s", second)
	}

	// Two calls; parallel_tool_calls false answers the first only.
	two := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"A\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"B\"}}\n</tool_call>"
	for _, par := range []string{"true", "false"} {
		sc.set(two)
		_, _, body = ts.post(t, "/v1/chat/completions", req+`,"parallel_tool_calls":`+par+`}`)
		r = decode[toolReply](t, body)
		json.Unmarshal(r.Choices[0].Message.ToolCalls, &calls)
		_, _, sbody := ts.post(t, "/v1/chat/completions", req+`,"parallel_tool_calls":`+par+`,"stream":true}`)
		_, deltas, _, _ = streamed(t, sbody)
		want := map[string]int{"true": 2, "false": 1}[par]
		if len(calls) != want || len(deltas) != 2*want || r.Choices[0].Message.Content != nil || calls[want-1].Function.Arguments != map[int]string{1: `{"city": "A"}`, 2: `{"city": "B"}`}[want] {
			t.Errorf("parallel_tool_calls %s: %s / %d deltas", par, body, len(deltas))
		}
	}

	// tool_choice none: the reply is text, unparsed.
	sc.set(callReply)
	_, _, body = ts.post(t, "/v1/chat/completions", req+`,"tool_choice":"none"}`)
	r = decode[toolReply](t, body)
	if r.Choices[0].FinishReason != "stop" || *r.Choices[0].Message.Content != callReply || r.Choices[0].Message.ToolCalls != nil {
		t.Errorf("tool_choice none: %s", body)
	}

	// Legacy functions: function_call, non-streamed and streamed.
	legacy := `{"messages":[{"role":"user","content":"Weather?"}],"functions":[{"name":"get_weather","parameters":{"type":"object"}}]`
	_, _, body = ts.post(t, "/v1/chat/completions", legacy+`}`)
	r = decode[toolReply](t, body)
	if r.Choices[0].FinishReason != "function_call" || string(r.Choices[0].Message.Function) != `{"name":"get_weather","arguments":"{\"city\": \"Zürich\"}"}` ||
		r.Choices[0].Message.ToolCalls != nil {
		t.Errorf("legacy: %s", body)
	}
	_, _, body = ts.post(t, "/v1/chat/completions", legacy+`,"stream":true}`)
	_, deltas, fdeltas, finish := streamed(t, body)
	if finish != "function_call" || len(deltas) != 0 || len(fdeltas) != 2 || fdeltas[0]["name"] != "get_weather" || fdeltas[1]["arguments"] != `{"city": "Zürich"}` {
		t.Errorf("legacy stream: finish %q deltas %v %v", finish, deltas, fdeltas)
	}
}

// TestToolConversationPrompt: a conversation with an assistant call (as
// OpenAI sends it, arguments a string) and a tool result reaches the
// template as Hugging Face passes it: the prompt equals chat.Render of the
// HF-shaped messages, and the call is rendered exactly as the model wrote
// it. Legacy function_call / function messages render the same way.
func TestToolConversationPrompt(t *testing.T) {
	sc := &script{replies: []string{"It is 21 °C."}}
	ts := qwenToolServer(t, nil)
	ts.gen = scripted(sc.gen)
	body := `{"messages":[{"role":"user","content":"Weather in Zürich?"},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Zürich\"}"}}]},
	  {"role":"tool","tool_call_id":"call_1","content":"{\"temp\": 21}"}],
	  "tools":[` + weatherTool + `]}`
	status, _, b := ts.post(t, "/v1/chat/completions", body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	opts := qwenOpts
	opts.AddGenerationPrompt = true
	opts.Tools = []any{json.RawMessage(weatherTool)}
	want, err := qwenTmpl.Render([]chat.Message{
		{Role: "user", Content: "Weather in Zürich?"},
		{Role: "assistant", ToolCalls: []any{json.RawMessage(`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":{"city": "Zürich"}}}`)}},
		{Role: "tool", ToolCallID: "call_1", Content: `{"temp": 21}`},
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.prompt(0); got != want {
		t.Errorf("prompt\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(want, "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response>") {
		t.Errorf("rendered history does not hold the call as the model writes it:\n%s", want)
	}
	legacy := `{"messages":[{"role":"user","content":"Weather in Zürich?"},
	  {"role":"assistant","content":null,"function_call":{"name":"get_weather","arguments":"{\"city\": \"Zürich\"}"}},
	  {"role":"function","name":"get_weather","content":"{\"temp\": 21}"}],
	  "functions":[{"name":"get_weather","description":"Weather in a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`
	if status, _, b := ts.post(t, "/v1/chat/completions", legacy); status != 200 {
		t.Fatalf("legacy status %d: %s", status, b)
	}
	if got := sc.prompt(1); got != want {
		t.Errorf("legacy prompt\n%s\nwant\n%s", got, want)
	}
}

// TestToolsRealModel: with no script, the random-weight model answers a
// tools request (auto, two choices) through the real engine; its noise is
// content.
func TestToolsRealModel(t *testing.T) {
	ts := qwenToolServer(t, nil)
	for _, stream := range []string{"false", "true"} {
		status, _, b := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather in Zürich?"}],"tools":[`+weatherTool+`],
		  "max_tokens":6,"temperature":1,"seed":3,"n":2,"stream":`+stream+`}`)
		if status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
		if stream == "false" {
			r := decode[toolReply](t, b)
			for _, c := range r.Choices {
				if len(r.Choices) != 2 || c.FinishReason != "length" || c.Message.Content == nil || *c.Message.Content == "" {
					t.Errorf("reply %s", b)
				}
			}
		} else if content, _, _, finish := streamed(t, b); finish != "length" || content == "" {
			t.Errorf("stream: %q %q", content, finish)
		}
	}
}

// TestForcedLegacyFunctionCall: the legacy function_call naming a function
// is enforced like tool_choice (here in the Qwen2 template's Hermes format)
// and answered in the legacy shape.
func TestForcedLegacyFunctionCall(t *testing.T) {
	ts := qwenToolServer(t, nil)
	status, _, b := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":90,"temperature":1,"seed":5,
	  "functions":[{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99}},"required":["n"],"additionalProperties":false}}],"function_call":{"name":"f"}}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	r := decode[toolReply](t, b)
	var fn struct{ Name, Arguments string }
	var args struct{ N *int }
	if len(r.Choices) != 1 || r.Choices[0].FinishReason != "function_call" || json.Unmarshal(r.Choices[0].Message.Function, &fn) != nil ||
		fn.Name != "f" || json.Unmarshal([]byte(fn.Arguments), &args) != nil || args.N == nil || *args.N < 0 || *args.N > 99 {
		t.Errorf("reply %s", b)
	}
}

// TestToolErrors: every malformed tool field is a 400 naming it; tools on
// a template without a tool-call format, and the choices that need
// constrained decoding, are 400s that say so — never ignored.
func TestToolErrors(t *testing.T) {
	ts := qwenToolServer(t, nil)
	user := `"messages":[{"role":"user","content":"x"}]`
	tools := `"tools":[` + weatherTool + `]`
	cases := []struct {
		name, body  string
		param, want string
	}{
		{"tools not array", `{` + user + `,"tools":{"a":1}}`, "tools", "must be an array"},
		{"tools empty", `{` + user + `,"tools":[]}`, "tools", "must not be empty"},
		{"tool type", `{` + user + `,"tools":[{"type":"custom","custom":{"name":"x"}}]}`, "tools[0].type", `"custom" is not supported`},
		{"tool without function", `{` + user + `,"tools":[{"type":"function"}]}`, "tools[0].function", "required"},
		{"tool name", `{` + user + `,"tools":[{"type":"function","function":{"name":"get weather"}}]}`, "tools[0].function.name", "letters, digits"},
		{"tool name repeated", `{` + user + `,"tools":[` + weatherTool + `,` + weatherTool + `]}`, "tools[1].function.name", "repeated"},
		{"parameters", `{` + user + `,"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`, "tools[0].function.parameters", "JSON Schema object"},
		{"choice string", `{` + user + `,` + tools + `,"tool_choice":"always"}`, "tool_choice", `"always" is not supported`},
		{"choice unknown function", `{` + user + `,` + tools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`, "tool_choice", `"nope", which is not among`},
		{"choice allowed_tools", `{` + user + `,` + tools + `,"tool_choice":{"type":"allowed_tools"}}`, "tool_choice", "not supported"},
		{"choice without tools", `{` + user + `,"tool_choice":"required"}`, "tool_choice", "needs tools"},
		{"functions and tools", `{` + user + `,` + tools + `,"functions":[{"name":"f"}]}`, "functions", "cannot be used together"},
		{"function_call unknown", `{` + user + `,"functions":[{"name":"f"}],"function_call":{"name":"g"}}`, "function_call", `"g", which is not among the functions`},
		{"function_call without functions", `{` + user + `,"function_call":{"name":"f"}}`, "function_call", "needs tools"},
		{"tool message without id", `{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", "required"},
		{"tool message without content", `{"messages":[{"role":"tool","tool_call_id":"a"}]}`, "messages[0].content", "required"},
		{"function message without name", `{"messages":[{"role":"function","content":"x"}]}`, "messages[0].name", "required"},
		{"user with tool_calls", `{"messages":[{"role":"user","content":"x","tool_calls":[]}]}`, "messages[0].tool_calls", "only assistant"},
		{"tool_calls not array", `{"messages":[{"role":"assistant","tool_calls":{}}]}`, "messages[0].tool_calls", "must be an array"},
		{"call without id", `{"messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].id", "required"},
		{"call arguments not JSON", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{city"}}]}]}`, "messages[0].tool_calls[0]", "JSON object encoded as a string"},
		{"call arguments array", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[0].tool_calls[0]", "JSON object"},
		{"call without name", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"arguments":"{}"}}]}]}`, "messages[0].tool_calls[0]", `"name"`},
		{"call type", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"custom","custom":{}}]}]}`, "messages[0].tool_calls[0].type", `"custom"`},
		{"legacy call arguments", `{"messages":[{"role":"assistant","function_call":{"name":"f","arguments":"nope"}}]}`, "messages[0].function_call", "JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := postRaw(t, ts.url+"/v1/chat/completions", tc.body)
			checkError(t, resp, b, 400, tc.param, "", tc.want)
		})
	}
	// With the tool-call format switched off (--tool-call-format none):
	// tools are a 400 unless tool_choice is "none" (then they only reach
	// the template). A template without one gets the generic format
	// (TestGenericTools).
	plain := newTestServer(t, func(o *Options) { o.ToolFormat = chat.ToolFormatNone })
	resp, b := postRaw(t, plain.url+"/v1/chat/completions", `{`+user+`,`+tools+`}`)
	checkError(t, resp, b, 400, "tools", "", "no tool-call format")
	resp, b = postRaw(t, plain.url+"/v1/chat/completions", `{`+user+`,`+tools+`,"tool_choice":"none","max_tokens":2}`)
	if resp.StatusCode != 200 {
		t.Errorf("tool_choice none on a plain template: %d %s", resp.StatusCode, b)
	}
	// ... and --tool-call-format makes them readable.
	forced := newTestServer(t, func(o *Options) { o.ToolFormat = chat.ToolFormatHermes })
	if resp, b = postRaw(t, forced.url+"/v1/chat/completions", `{`+user+`,`+tools+`,"max_tokens":2}`); resp.StatusCode != 200 {
		t.Errorf("forced format: %d %s", resp.StatusCode, b)
	}
}

func postRaw(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestToolCallIDsAndArguments: with a template that shows what it gets
// (tool_calls through tojson, tool_call_id) and the Mistral format, the
// string arguments arrive as an object and a foreign call id arrives
// mapped to the 9 alphanumerics Mistral needs, the same in the call and in
// the tool result that answers it.
func TestToolCallIDsAndArguments(t *testing.T) {
	sc := &script{replies: []string{"ok"}}
	ts := newTestServer(t, func(o *Options) {
		tmpl, err := chat.Parse(`{% for m in messages %}{{ m.role }}:{% if m.tool_calls %}{{ m.tool_calls|tojson }}{% endif %}{% if m.tool_call_id %}#{{ m.tool_call_id }}{% endif %}{{ m.content }}|{% endfor %}`)
		if err != nil {
			t.Fatal(err)
		}
		o.Template, o.ToolFormat = tmpl, chat.ToolFormatMistral
	})
	ts.gen = scripted(sc.gen)
	status, _, b := ts.post(t, "/v1/chat/completions", `{"messages":[
	  {"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]},
	  {"role":"tool","tool_call_id":"call_1","content":"x"}]}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	id := chat.ToolFormatMistral.TemplateID("call_1")
	want := `assistant:[{"id": "` + id + `", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]|tool:#` + id + "x|"
	if got := sc.prompt(0); got != want || len(id) != 9 {
		t.Errorf("prompt %q, want %q", got, want)
	}
}

// TestToolFormatsWire: each format's reply comes back as the same call,
// streamed and not, with ids in the format's form (Mistral: 9
// alphanumerics), and a Mistral id sent back in the conversation reaches
// the template unchanged.
func TestToolFormatsWire(t *testing.T) {
	replies := map[chat.ToolFormat]string{
		chat.ToolFormatHermes:  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
		chat.ToolFormatLlama3:  "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
		chat.ToolFormatMistral: "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]",
	}
	for f, reply := range replies {
		t.Run(string(f), func(t *testing.T) {
			sc := &script{replies: []string{reply}}
			ts := newTestServer(t, func(o *Options) {
				tmpl, err := chat.Parse(`{% for m in messages %}{{ m.role }}:{% for c in m.tool_calls %}{{ c.id }}{% endfor %}{{ m.tool_call_id }}{{ m.content }}|{% endfor %}`)
				if err != nil {
					t.Fatal(err)
				}
				o.Template, o.ToolFormat = tmpl, f
			})
			ts.gen = scripted(sc.gen)
			req := `{"messages":[{"role":"user","content":"x"}],"tools":[` + weatherTool + `]`
			_, _, body := ts.post(t, "/v1/chat/completions", req+`}`)
			r := decode[toolReply](t, body)
			var calls []struct {
				ID       string      `json:"id"`
				Function functionOut `json:"function"`
			}
			json.Unmarshal(r.Choices[0].Message.ToolCalls, &calls)
			if len(calls) != 1 || calls[0].Function != (functionOut{Name: "get_weather", Arguments: `{"city": "Oslo"}`}) ||
				r.Choices[0].FinishReason != "tool_calls" || r.Choices[0].Message.Content != nil {
				t.Fatalf("reply %s", body)
			}
			id := calls[0].ID
			if (f == chat.ToolFormatMistral) != (len(id) == 9 && !strings.HasPrefix(id, "call_")) {
				t.Errorf("id %q for format %s", id, f)
			}
			_, _, sbody := ts.post(t, "/v1/chat/completions", req+`,"stream":true}`)
			content, deltas, _, finish := streamed(t, sbody)
			if content != "" || finish != "tool_calls" || len(deltas) != 2 || deltas[0]["function"].(map[string]any)["name"] != "get_weather" ||
				deltas[1]["function"].(map[string]any)["arguments"] != `{"city": "Oslo"}` {
				t.Errorf("stream %q %q %v", content, finish, deltas)
			}
			back := `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"` + id +
				`","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}}]},{"role":"tool","tool_call_id":"` + id + `","content":"5"}],"tools":[` + weatherTool + `]}`
			if status, _, b := ts.post(t, "/v1/chat/completions", back); status != 200 {
				t.Fatalf("round trip: %d %s", status, b)
			}
			if got, want := sc.prompt(2), "user:x|assistant:"+id+"|tool:"+id+"5|"; got != want {
				t.Errorf("round-trip prompt %q, want %q", got, want)
			}
		})
	}
}
