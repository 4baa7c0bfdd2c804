//go:build !race

package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// chatReply is what /v1/chat/completions answers to body (a JSON object).
type chatReply struct {
	Content   string
	Reasoning string // reasoning_content
	Finish    string
	Calls     []toolCallOut
	Usage     usage
}

func chatCompletion(t *testing.T, ts *testServer, body string) chatReply {
	t.Helper()
	return chatCompletionKey(t, ts, "", body)
}

// chatCompletionKey is chatCompletion with an API key ("": none).
func chatCompletionKey(t *testing.T, ts *testServer, key, body string) chatReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/chat/completions %s: %d %s", body, resp.StatusCode, b)
	}
	var r struct {
		Choices []struct {
			Message struct {
				Content          *string
				ReasoningContent string        `json:"reasoning_content"`
				ToolCalls        []toolCallOut `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage usage
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	c := r.Choices[0]
	out := chatReply{Finish: c.FinishReason, Calls: c.Message.ToolCalls, Usage: r.Usage, Reasoning: c.Message.ReasoningContent}
	if c.Message.Content != nil {
		out.Content = *c.Message.Content
	}
	return out
}

// respSummary is responses_client.mjs's summary of a response.
type respSummary struct {
	ID         string
	Status     string
	Text       string
	Reasoning  string
	Incomplete *string
	Usage      struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
	Output []struct {
		Type      string
		CallID    string `json:"call_id"`
		Name      string
		Arguments string
	}
}

// same reports how a response differs from the chat reply to the same
// request ("" when it does not): text, token counts, how it ended.
func (r respSummary) same(c chatReply) string {
	status := "completed"
	if c.Finish == "length" {
		status = "incomplete"
	}
	if r.Text != c.Content || r.Reasoning != c.Reasoning || r.Usage.InputTokens != c.Usage.PromptTokens || r.Usage.OutputTokens != c.Usage.CompletionTokens || r.Status != status {
		return fmt.Sprintf("response %+v\nchat %+v", r, c)
	}
	return ""
}

// TestResponsesNPMClient drives /v1/responses with the official openai npm
// client (responses.create whole and streamed, the responses.stream
// helper, a forced function call and its output sent back — with the whole
// input and through previous_response_id —, text.format json_schema, a
// forgotten previous_response_id) on the random-weight Qwen2 model with its
// Hermes template, and replays each request on /v1/chat/completions: at
// temperature 0 the text, the call and the token counts must be the same.
func TestResponsesNPMClient(t *testing.T) {
	dir := npmClientDir(t, "openai", openaiNPMVersion, "responses_client.mjs")
	ts := qwenToolServer(t, nil)
	out := runNode(t, dir, "responses_client.mjs", ts.url+"/v1", qwenModel)
	var got struct {
		Plain  respSummary
		Stream struct {
			Events []string
			Text   string
			Final  respSummary
		}
		Helper struct {
			respSummary
			Deltas string
		}
		Call       respSummary
		CallStream struct {
			Events   []string
			Args     string
			ArgsDone string
		}
		Answer, AnswerPrev, JSON respSummary
		Gone                     struct {
			Status  int
			Message string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	msgs := `[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me a story"}]`
	plain := chatCompletion(t, ts, `{"messages":`+msgs+`,"max_tokens":12,"temperature":0}`)
	if d := got.Plain.same(plain); d != "" || plain.Content == "" {
		t.Errorf("plain: %s", d)
	}
	if got.Stream.Text != plain.Content || got.Stream.Final.same(plain) != "" {
		t.Errorf("streamed text %q, final %+v; chat %+v", got.Stream.Text, got.Stream.Final, plain)
	}
	wantEvents := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	if len(got.Stream.Events) < 8 || !slices.Equal(got.Stream.Events[:4], wantEvents) ||
		!slices.Equal(got.Stream.Events[len(got.Stream.Events)-4:], []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"}) {
		t.Errorf("stream events %v", got.Stream.Events)
	}
	if got.Helper.same(plain) != "" || got.Helper.Deltas != plain.Content {
		t.Errorf("stream helper %+v; chat %+v", got.Helper, plain)
	}

	tools := `[{"type":"function","function":{"name":"get_weather","description":"Current weather in a city.","strict":true,` +
		`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}]`
	ask := `[{"role":"user","content":"What's the weather in Zurich?"}]`
	call := chatCompletion(t, ts, `{"messages":`+ask+`,"tools":`+tools+`,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"max_tokens":120,"temperature":0}`)
	if len(call.Calls) != 1 || call.Finish != "tool_calls" {
		t.Fatalf("chat forced call: %+v", call)
	}
	// The output: the reasoning (this template thinks first) and the call.
	fc := got.Call.Output
	if n := len(fc); n > 0 {
		fc = fc[n-1:]
	}
	if len(fc) != 1 || fc[0].Type != "function_call" || fc[0].Name != "get_weather" || fc[0].Arguments != call.Calls[0].Function.Arguments ||
		!strings.HasPrefix(fc[0].CallID, "call_") || got.Call.same(call) != "" {
		t.Errorf("call %+v; chat %+v", got.Call, call)
	}
	if got.CallStream.Args != call.Calls[0].Function.Arguments || got.CallStream.ArgsDone != got.CallStream.Args ||
		!slices.Contains(got.CallStream.Events, "response.function_call_arguments.delta") || got.CallStream.Events[len(got.CallStream.Events)-1] != "response.completed" {
		t.Errorf("streamed call %+v; chat %+v", got.CallStream, call)
	}
	if len(fc) == 1 {
		thinking, _ := json.Marshal(got.Call.Reasoning)
		turn := fmt.Sprintf(`[{"role":"user","content":"What's the weather in Zurich?"},{"role":"assistant","content":"","reasoning_content":%s,"tool_calls":[{"id":%q,"type":"function","function":{"name":"get_weather","arguments":%q}}]},{"role":"tool","tool_call_id":%q,"content":"{\"temp\": 21}"}]`,
			thinking, fc[0].CallID, fc[0].Arguments, fc[0].CallID)
		answer := chatCompletion(t, ts, `{"messages":`+turn+`,"tools":`+tools+`,"max_tokens":12,"temperature":0}`)
		if d := got.Answer.same(answer); d != "" {
			t.Errorf("answer after the call: %s", d)
		}
		if d := got.AnswerPrev.same(answer); d != "" {
			t.Errorf("answer through previous_response_id: %s", d)
		}
	}

	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}`
	js := chatCompletion(t, ts, `{"messages":[{"role":"user","content":"Describe a person as JSON."}],"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":`+schema+`,"strict":true}},"max_tokens":60,"temperature":0}`)
	var person struct {
		Name *string
		Age  *int
	}
	if d := got.JSON.same(js); d != "" || json.Unmarshal([]byte(got.JSON.Text), &person) != nil || person.Name == nil || person.Age == nil {
		t.Errorf("text.format json_schema: %q %s", got.JSON.Text, d)
	}

	if got.Gone.Status != 404 || !strings.Contains(got.Gone.Message, "resp_forgotten") {
		t.Errorf("forgotten previous_response_id: %+v", got.Gone)
	}
}
