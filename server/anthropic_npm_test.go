//go:build !race

package server

import (
	"encoding/json"
	"fmt"
	"net/http"
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
		InputTokens     int `json:"input_tokens"`
		CacheReadTokens int `json:"cache_read_input_tokens"`
		OutputTokens    int `json:"output_tokens"`
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
// request ("" when it does not): text, token counts (Anthropic's
// input_tokens leave out the prompt the cache held), how it ended.
func (m msgSummary) same(c chatReply) string {
	reason := map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}[c.Finish]
	if m.Text != c.Content || m.Thinking != c.Reasoning || m.Usage.InputTokens+m.Usage.CacheReadTokens != c.Usage.PromptTokens || m.Usage.OutputTokens != c.Usage.CompletionTokens ||
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

// TestAnthropicNPMThinking: on a (scripted) Qwen3 reply that thinks, then
// calls a tool, the official @anthropic-ai/sdk client gets a thinking
// block carrying a signature, whole and streamed alike (streamed: a
// signature_delta closes the block, as Anthropic's API sends it); the
// streamed content sent back as is — thinking block, signature and all —
// with the tool's result is accepted, and its thinking reaches the
// template (Qwen3 keeps the reasoning of the turn in progress).
func TestAnthropicNPMThinking(t *testing.T) {
	dir := npmClientDir(t, "@anthropic-ai/sdk", anthropicNPMVersion, "anthropic_thinking.mjs")
	think := "<think>\nI need the weather.\n</think>\n\n"
	sc := &script{replies: []string{think + callReply, think + callReply, "It is 21 degrees."}}
	ts := reasoningServer(t, "Qwen-Qwen3-0.6B", nil)
	ts.gen = scripted(sc.gen)
	if resp, err := http.Get(ts.url + "/health"); err == nil { // orders ts.gen before the handlers' reads (TestOllamaNPMThink)
		resp.Body.Close()
	}
	out := runNode(t, dir, "anthropic_thinking.mjs", ts.url, qwenModel)
	type block struct {
		Type, Thinking, Text, Name string
		Signature                  *string
	}
	type message struct {
		Content    []block
		StopReason string `json:"stop_reason"`
	}
	var got struct {
		Whole, Stream, Answer message
		Events                []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, m := range []message{got.Whole, got.Stream} {
		if len(m.Content) != 3 || m.Content[0].Type != "thinking" || m.Content[0].Thinking != "I need the weather." ||
			m.Content[0].Signature == nil || *m.Content[0].Signature == "" || m.Content[2].Name != "get_weather" || m.StopReason != "tool_use" {
			t.Fatalf("message %+v", m)
		}
	}
	if *got.Whole.Content[0].Signature != *got.Stream.Content[0].Signature {
		t.Errorf("signature whole %q, streamed %q", *got.Whole.Content[0].Signature, *got.Stream.Content[0].Signature)
	}
	if i := slices.Index(got.Events, "signature_delta"); i < 0 || got.Events[i+1] != "content_block_stop" || slices.Index(got.Events, "thinking_delta") > i {
		t.Errorf("stream events %v: want a signature_delta right before the thinking block's content_block_stop", got.Events)
	}
	if len(got.Answer.Content) == 0 || got.Answer.Content[len(got.Answer.Content)-1].Text != "It is 21 degrees." {
		t.Errorf("answer %+v", got.Answer)
	}
	if p := sc.prompt(2); !strings.Contains(p, "<think>\nI need the weather.\n</think>") {
		t.Errorf("the thinking sent back is not in the prompt:\n%s", p)
	}
}
