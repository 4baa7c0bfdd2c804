package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"nanoserve/chat"
)

// sseChat posts a streamed chat request and accumulates its deltas the way
// a client does: content, and tool calls by index (name and arguments).
func sseChat(t *testing.T, url, body string) (content string, calls []toolCallOut, finish string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   *string       `json:"content"`
					ToolCalls []toolCallOut `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				content += *c.Delta.Content
			}
			for _, d := range c.Delta.ToolCalls {
				for *d.Index >= len(calls) {
					calls = append(calls, toolCallOut{})
				}
				calls[*d.Index].Function.Name += d.Function.Name
				calls[*d.Index].Function.Arguments += d.Function.Arguments
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	return content, calls, finish
}

type wholeChat struct {
	Choices []struct {
		Message struct {
			Content   *string       `json:"content"`
			ToolCalls []toolCallOut `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// TestGenericTools: a template without tool syntax (the test template)
// gets the generic format: the tools are described in a system message
// (joined to the client's own), the reply object is read back into calls
// or content, streamed = whole, an earlier call is shown to the model as
// the object it wrote; tool_choice none leaves prompt and reply alone; an
// explicit --tool-call-format none keeps the 400. (Before the generic
// format every request here but the last two was a 400.)
func TestGenericTools(t *testing.T) {
	ts := newTestServer(t, nil)
	sc := &script{}
	ts.gen = scripted(sc.gen)
	url := ts.url + "/v1/chat/completions"
	tools := `"tools":[` + weatherTool + `]`
	user := `"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Weather in Paris?"}]`
	call := `{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}`
	cases := []struct {
		name, reply, extra string
		content            string
		calls              []string // name + arguments
		finish             string
	}{
		{"call", call, "", "", []string{`get_weather{"city": "Paris"}`}, "tool_calls"},
		{"calls", `{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "arguments": {}}]}`, "",
			"", []string{`get_weather{"city": "Paris"}`, `get_weather{}`}, "tool_calls"},
		{"response", `{"response": "Sunny, \"22\" °C."}`, "", `Sunny, "22" °C.`, nil, "stop"},
		{"none", call, `,"tool_choice":"none"`, call, nil, "stop"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{` + user + `,` + tools + tc.extra + `,"max_tokens":50`
			sc.set(tc.reply)
			resp, b := postRaw(t, url, body+`}`)
			var w wholeChat
			if resp.StatusCode != 200 || json.Unmarshal(b, &w) != nil || len(w.Choices) != 1 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			m := w.Choices[0].Message
			content := ""
			if m.Content != nil {
				content = *m.Content
			}
			var got []string
			for _, c := range m.ToolCalls {
				got = append(got, c.Function.Name+c.Function.Arguments)
			}
			if content != tc.content || strings.Join(got, "|") != strings.Join(tc.calls, "|") || w.Choices[0].FinishReason != tc.finish {
				t.Errorf("whole: content %q calls %q finish %q", content, got, w.Choices[0].FinishReason)
			}
			p := sc.prompt(2 * i)
			described := strings.Contains(p, "Be brief.\n\nYou have access to the following tools") && strings.Contains(p, `"name":"get_weather"`)
			if described != (tc.extra == "") {
				t.Errorf("tools described %v in prompt %q", described, p)
			}
			sc.set(tc.reply)
			sContent, sCalls, sFinish := sseChat(t, url, body+`,"stream":true}`)
			var sGot []string
			for _, c := range sCalls {
				sGot = append(sGot, c.Function.Name+c.Function.Arguments)
			}
			if sContent != content || strings.Join(sGot, "|") != strings.Join(got, "|") || sFinish != w.Choices[0].FinishReason {
				t.Errorf("streamed content %q calls %q finish %q, whole %q %q %q", sContent, sGot, sFinish, content, got, w.Choices[0].FinishReason)
			}
		})
	}
	// History: an earlier call is shown as the object the model wrote.
	sc.set(`{"response": "22 °C."}`)
	hist := `"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"22"}]`
	if resp, b := postRaw(t, url, `{`+hist+`,`+tools+`}`); resp.StatusCode != 200 {
		t.Fatalf("history: %d %s", resp.StatusCode, b)
	}
	if p := sc.prompt(len(cases) * 2); !strings.Contains(p, `{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}`) {
		t.Errorf("history prompt %q", p)
	}
	// --tool-call-format none: no tools unless tool_choice is none.
	off := newTestServer(t, func(o *Options) { o.ToolFormat = chat.ToolFormatNone })
	resp, b := postRaw(t, off.url+"/v1/chat/completions", `{`+user+`,`+tools+`}`)
	checkError(t, resp, b, 400, "tools", "", "no tool-call format")
}

// TestGenericToolsConstrained: on a real (random-weight) model whose
// template has no tool syntax, the generic reply is constrained: with
// tool_choice auto it always reads back as a call or an answer (never the
// raw object), with a named function it is a call to that function, and a
// streamed reply equals the whole one. (Forced calls in every format:
// TestOpenAIToolChoiceRequired.)
func TestGenericToolsConstrained(t *testing.T) {
	ts := qwenToolServer(t, func(o *Options) { o.ToolFormat = chat.ToolFormatGeneric })
	url := ts.url + "/v1/chat/completions"
	tools := `"tools":[` + weatherTool + `]`
	user := `"messages":[{"role":"user","content":"Weather in Paris?"}]`
	for _, tc := range []struct{ name, extra string }{
		{"auto", `,"temperature":0`},
		{"auto sampled", `,"temperature":1,"seed":3`},
		{"named", `,"temperature":0,"tool_choice":{"type":"function","function":{"name":"get_weather"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"` + qwenModel + `",` + user + `,` + tools + tc.extra + `,"max_tokens":200,"reasoning_budget_tokens":0`
			resp, b := postRaw(t, url, body+`,"verbose":true}`)
			var w wholeChat
			var raw struct {
				Verbose struct {
					Content string `json:"content"`
				} `json:"__verbose"`
			}
			if resp.StatusCode != 200 || json.Unmarshal(b, &w) != nil || json.Unmarshal(b, &raw) != nil || len(w.Choices) != 1 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			m := w.Choices[0].Message
			// The model wrote one of the format's objects.
			if _, after, ok := strings.Cut(raw.Verbose.Content, "</think>"); ok {
				raw.Verbose.Content = after // the reasoning gate closed the (empty) thinking
			}
			var obj map[string]json.RawMessage
			if !strings.HasPrefix(raw.Verbose.Content, `{"`) {
				t.Errorf("the reply %q does not begin an object", raw.Verbose.Content)
			}
			if err := json.Unmarshal([]byte(raw.Verbose.Content), &obj); err != nil && w.Choices[0].FinishReason != "length" {
				t.Errorf("the reply %q is not a JSON object: %v", raw.Verbose.Content, err)
			} else if err == nil && obj["tool_call"] == nil && obj["tool_calls"] == nil && obj["response"] == nil {
				t.Errorf("the reply %q is not a generic-format object", raw.Verbose.Content)
			}
			switch {
			case w.Choices[0].FinishReason == "length" && len(m.ToolCalls) == 0 && m.Content != nil && strings.HasPrefix(*m.Content, `{"`):
				t.Skipf("the model ran out of tokens inside the object: %s", b)
			case len(m.ToolCalls) > 0:
				var args map[string]any
				if m.ToolCalls[0].Function.Name != "get_weather" || json.Unmarshal([]byte(m.ToolCalls[0].Function.Arguments), &args) != nil {
					t.Errorf("call %+v", m.ToolCalls[0])
				}
				if _, ok := args["city"].(string); !ok {
					t.Errorf("arguments %s lack the required city", m.ToolCalls[0].Function.Arguments)
				}
			case tc.name == "named":
				t.Errorf("a named function got no call: %s", b)
			case m.Content == nil || bytes.HasPrefix([]byte(strings.TrimSpace(*m.Content)), []byte(`{"`)):
				t.Errorf("the reply object was not read back: %s", b)
			}
			content, calls, finish := sseChat(t, url, body+`,"stream":true}`)
			if tc.name == "auto sampled" {
				return // a sampled stream need not repeat the reply
			}
			whole := ""
			if m.Content != nil {
				whole = *m.Content
			}
			same := content == whole && len(calls) == len(m.ToolCalls) && finish == w.Choices[0].FinishReason
			for i := 0; same && i < len(calls); i++ {
				same = calls[i].Function == m.ToolCalls[i].Function
			}
			if !same {
				t.Errorf("streamed %q %+v %q, whole %s", content, calls, finish, b)
			}
		})
	}
}

// TestGenericToolsOtherAPIs: the Anthropic Messages API and the Responses
// API read generic-format calls through the same pipeline.
func TestGenericToolsOtherAPIs(t *testing.T) {
	ts := newTestServer(t, nil)
	sc := &script{replies: []string{`{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}`}}
	ts.gen = scripted(sc.gen)
	resp, b := postRaw(t, ts.url+"/v1/messages", `{"max_tokens":50,"messages":[{"role":"user","content":"Weather in Paris?"}],`+
		`"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`)
	var msg struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string          `json:"type"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &msg) != nil || msg.StopReason != "tool_use" || len(msg.Content) != 1 ||
		msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "get_weather" || string(msg.Content[0].Input) != `{"city":"Paris"}` {
		t.Errorf("anthropic: %d %s", resp.StatusCode, b)
	}
	resp, b = postRaw(t, ts.url+"/v1/responses", `{"input":"Weather in Paris?","max_output_tokens":50,`+
		`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`)
	var r struct {
		Output []struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"output"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil || len(r.Output) != 1 || r.Output[0].Type != "function_call" ||
		r.Output[0].Name != "get_weather" || r.Output[0].Arguments != `{"city": "Paris"}` {
		t.Errorf("responses: %d %s", resp.StatusCode, b)
	}
}
