//go:build !race

package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// anthropicNPMVersion is the official Anthropic npm client the test installs.
const anthropicNPMVersion = "1.17.0"

// msgSummary is anthropic_client.mjs's summary of a message.
type msgSummary struct {
	ID           string
	Role         string
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
	Text     string
	Thinking string
	Content  []contentBlock
}

type contentBlock struct {
	Type  string
	ID    string
	Name  string
	Input json.RawMessage
}

// same reports how a message differs from the chat reply to the same
// request ("" when it does not): text, token counts, how it ended.
func (m msgSummary) same(c chatReply) string {
	reason := map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}[c.Finish]
	if m.Text != c.Content || m.Thinking != c.Reasoning || m.Usage.InputTokens != c.Usage.PromptTokens || m.Usage.OutputTokens != c.Usage.CompletionTokens ||
		m.StopReason != reason || m.Role != "assistant" || !strings.HasPrefix(m.ID, "msg_") {
		return fmt.Sprintf("message %+v\nchat %+v", m, c)
	}
	return ""
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// TestAnthropicNPMClient drives /v1/messages with the official
// @anthropic-ai/sdk npm client, authenticated by x-api-key
// (messages.create, messages.stream with its accumulator, stop_sequences,
// a forced tool call whole and streamed and its result sent back,
// count_tokens, a bad request and a wrong key in Anthropic's error shape)
// on the random-weight Qwen2 model with its Hermes template, and replays
// each request on /v1/chat/completions: at temperature 0 the text, the
// call and the token counts must be the same.
func TestAnthropicNPMClient(t *testing.T) {
	dir := npmClientDir(t, "@anthropic-ai/sdk", anthropicNPMVersion, "anthropic_client.mjs")
	const key = "sk-nanoserve-test"
	ts := qwenToolServer(t, func(o *Options) { o.APIKey = key })
	out := runNode(t, dir, "anthropic_client.mjs", ts.url, qwenModel, key)
	var got struct {
		Plain  msgSummary
		Stream struct {
			msgSummary
			Deltas string
			Events []string
		}
		Stop struct {
			msgSummary
			Seq string
		}
		Call, Answer msgSummary
		CallStream   struct {
			msgSummary
			Partial string
		}
		Count, CountTools struct {
			InputTokens int `json:"input_tokens"`
		}
		Bad struct {
			Status        int
			Type, Message string
		}
		Unauthorized struct {
			Status int
			Type   string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	chat := func(body string) chatReply { return chatCompletionKey(t, ts, key, body) }

	msgs := `[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me a story"}]`
	plain := chat(`{"messages":` + msgs + `,"max_tokens":12,"temperature":0}`)
	if d := got.Plain.same(plain); d != "" || plain.Content == "" {
		t.Errorf("plain: %s", d)
	}
	if d := got.Stream.same(plain); d != "" || got.Stream.Deltas != plain.Content {
		t.Errorf("stream (deltas %q): %s", got.Stream.Deltas, d)
	}
	ev := got.Stream.Events
	if len(ev) < 6 || !slices.Equal(ev[:2], []string{"message_start", "content_block_start"}) ||
		!slices.Equal(ev[len(ev)-3:], []string{"content_block_stop", "message_delta", "message_stop"}) {
		t.Errorf("stream events %v", ev)
	}
	if got.Count.InputTokens != plain.Usage.PromptTokens {
		t.Errorf("count_tokens %d, chat prompt_tokens %d", got.Count.InputTokens, plain.Usage.PromptTokens)
	}

	stopBody, _ := json.Marshal(got.Stop.Seq)
	stopped := chat(`{"messages":` + msgs + `,"max_tokens":12,"temperature":0,"stop":[` + string(stopBody) + `]}`)
	if got.Stop.Seq == "" || got.Stop.Text != stopped.Content || got.Stop.StopReason != "stop_sequence" || got.Stop.StopSequence == nil ||
		*got.Stop.StopSequence != got.Stop.Seq || !strings.HasPrefix(plain.Content, got.Stop.Text+got.Stop.Seq) {
		t.Errorf("stop_sequences %q: %+v; chat %+v", got.Stop.Seq, got.Stop.msgSummary, stopped)
	}

	tools := `[{"type":"function","function":{"name":"get_weather","description":"Current weather in a city.",` +
		`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	ask := `{"role":"user","content":"What's the weather in Zurich?"}`
	call := chat(`{"messages":[` + ask + `],"tools":` + tools + `,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"max_tokens":120,"temperature":0}`)
	if len(call.Calls) != 1 {
		t.Fatalf("chat forced call: %+v", call)
	}
	args := call.Calls[0].Function.Arguments
	for _, m := range []msgSummary{got.Call, got.CallStream.msgSummary} {
		uses := slices.DeleteFunc(slices.Clone(m.Content), func(b contentBlock) bool { return b.Type != "tool_use" })
		if len(uses) != 1 || uses[0].Name != "get_weather" || !sameJSON(string(uses[0].Input), args) ||
			!strings.HasPrefix(uses[0].ID, "toolu_") || m.same(call) != "" {
			t.Errorf("call %+v; chat %+v", m, call)
		}
	}
	if got.CallStream.Partial != args {
		t.Errorf("streamed input_json %q, chat arguments %q", got.CallStream.Partial, args)
	}
	if got.CountTools.InputTokens != call.Usage.PromptTokens {
		t.Errorf("count_tokens with tools %d, chat prompt_tokens %d", got.CountTools.InputTokens, call.Usage.PromptTokens)
	}
	if n := len(got.Call.Content); n > 0 && got.Call.Content[n-1].Type == "tool_use" {
		use := got.Call.Content[n-1]
		thinking, _ := json.Marshal(got.Call.Thinking)
		turn := fmt.Sprintf(`[%s,{"role":"assistant","content":"","reasoning_content":%s,"tool_calls":[{"id":%q,"type":"function","function":{"name":"get_weather","arguments":%q}}]},{"role":"tool","tool_call_id":%q,"content":"{\"temp\": 21}"}]`,
			ask, thinking, use.ID, string(use.Input), use.ID)
		answer := chat(`{"messages":` + turn + `,"tools":` + tools + `,"max_tokens":12,"temperature":0}`)
		if d := got.Answer.same(answer); d != "" {
			t.Errorf("answer after the tool result: %s", d)
		}
	}

	if got.Bad.Status != 400 || got.Bad.Type != "invalid_request_error" || !strings.Contains(got.Bad.Message, "max_tokens") {
		t.Errorf("bad request: %+v", got.Bad)
	}
	if got.Unauthorized.Status != 401 || got.Unauthorized.Type != "authentication_error" {
		t.Errorf("wrong key: %+v", got.Unauthorized)
	}
}
