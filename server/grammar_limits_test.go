package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"nanoserve/chat"
	"nanoserve/engine"
	"nanoserve/grammar"
)

// limitedServer serves its own aidreams260K engine whose grammar limits
// are lim.
func limitedServer(t *testing.T, lim grammar.Limits) *testServer {
	t.Helper()
	return newEngineServer(t, engine.Options{Grammar: engine.GrammarOptions{Limits: lim}}, nil)
}

// TestGrammarBombs: issue 29's hostile constraints through every dialect
// answer 400 at once (a cycle through allOf is left recursion; a compile
// past a limit names the limit and the flag raising it), never a hang.
func TestGrammarBombs(t *testing.T) {
	ts := newTestServer(t, nil)
	cycle := `{"allOf":[{"$ref":"#"}]}`
	defs := `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`
	for _, tc := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + cycle + `}}}`, "response_format"},
		{"/v1/completions", `{"prompt":"Once","guided_json":` + defs + `}`, "guided_json"},
		{"/v1/completions", `{"prompt":"Once","json_schema":` + cycle + `}`, "json_schema"},
		{"/api/generate", `{"model":"` + testModel + `","prompt":"Once","stream":false,"format":` + cycle + `}`, ""},
		{"/api/chat", `{"model":"` + testModel + `","messages":[{"role":"user","content":"hi"}],"stream":false,"format":` + defs + `}`, ""},
	} {
		start := time.Now()
		code, _, b := ts.post(t, tc.path, tc.body)
		if code != 400 || !strings.Contains(string(b), "cycle") {
			t.Errorf("%s %s: %d %s, want 400 naming the cycle", tc.path, tc.body, code, b)
		}
		if tc.param != "" && !strings.Contains(string(b), `"param":"`+tc.param+`"`) {
			t.Errorf("%s: %s does not name param %s", tc.path, b, tc.param)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %v to refuse", tc.path, d)
		}
	}

	lim := limitedServer(t, grammar.Limits{Steps: 20_000})
	choices, _ := json.Marshal(func() []string {
		var cs []string
		for i := range 20_000 {
			cs = append(cs, fmt.Sprintf("choice %d", i))
		}
		return cs
	}())
	code, _, b := lim.post(t, "/v1/completions", `{"prompt":"Once","max_tokens":8,"guided_choice":`+string(choices)+`}`)
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(b, &e)
	if code != 400 || e.Error.Code == nil || *e.Error.Code != "grammar_limit_exceeded" || !strings.Contains(e.Error.Message, "steps limit") ||
		!strings.Contains(e.Error.Message, "--grammar-max-steps") || e.Error.Param == nil || *e.Error.Param != "guided_choice" {
		t.Errorf("choices past the steps limit: %d %s", code, b)
	}
	// Within the limits the same server constrains normally.
	code, _, b = lim.post(t, "/v1/completions", `{"prompt":"Once","max_tokens":8,"guided_choice":["yes","no"]}`)
	if code != 200 || !(strings.Contains(string(b), `"text":"yes"`) || strings.Contains(string(b), `"text":"no"`)) {
		t.Errorf("small choice under the limits: %d %s", code, b)
	}
}

// pydanticTool is a tool whose parameters carry $defs, as Pydantic writes
// them.
const pydanticTool = `{"type":"function","function":{"name":"add_person","parameters":{"$defs":{"Address":{"properties":{"city":{"type":"string","maxLength":8}},"required":["city"],"title":"Address","type":"object"}},` +
	`"properties":{"home":{"$ref":"#/$defs/Address"}},"required":["home"],"title":"Person","type":"object"}}}`

// TestForcedCallBudget (issue 29, item 6): under tool_choice "required"
// with no max_tokens, a tool whose parameters use $defs gets a call (not a
// 400 about an unresolved reference), the grammar's budget is the context
// the prompt leaves, so every sampled reply ends as a complete call (not
// finish_reason "length" with raw <tool_call> text), and a forced call
// that cannot fit in what the prompt leaves is a 400 before any work.
func TestForcedCallBudget(t *testing.T) {
	ts := newTestServer(t, func(o *Options) { o.ToolFormat = chat.ToolFormatHermes })
	for seed := range 6 {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Add Ann"}],"tools":[%s],"tool_choice":"required","temperature":1.5,"seed":%d}`, pydanticTool, seed)
		code, _, b := ts.post(t, "/v1/chat/completions", body)
		var r struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct{ Name, Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if code != 200 || json.Unmarshal(b, &r) != nil || len(r.Choices) != 1 {
			t.Fatalf("seed %d: %d %s", seed, code, b)
		}
		c := r.Choices[0]
		if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) == 0 {
			t.Fatalf("seed %d: finish %q, calls %+v, content %v: want a complete call", seed, c.FinishReason, c.Message.ToolCalls, c.Message.Content)
		}
		var args struct {
			Home *struct {
				City *string `json:"city"`
			} `json:"home"`
		}
		if err := json.Unmarshal([]byte(c.Message.ToolCalls[0].Function.Arguments), &args); err != nil || args.Home == nil || args.Home.City == nil {
			t.Errorf("seed %d: arguments %s do not follow the $defs schema", seed, c.Message.ToolCalls[0].Function.Arguments)
		}
	}
	// A prompt that leaves less context than the shortest call needs.
	long := strings.Repeat("Once upon a time there was a cat. ", 4)
	tool := `{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"s":{"type":"string","minLength":60}},"required":["s"]}}}`
	start := time.Now()
	code, _, b := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"`+long+`"}],"tools":[`+tool+`],"tool_choice":"required"}`)
	if code != 400 || !strings.Contains(string(b), "context left after the prompt") || !strings.Contains(string(b), `"param":"max_tokens"`) {
		t.Errorf("a forced call that cannot fit: %d %s", code, b)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%v to refuse", d)
	}
}
