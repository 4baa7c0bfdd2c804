//go:build !race

package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// TestOpenAIToolConversation drives a tool conversation with OpenAI's
// official Go client: user → the model calls get_weather (a scripted
// Hermes reply: the random-weight model cannot write one) → the client
// sends the call back with the tool result → the model answers. The
// client reads the call non-streamed and streamed (its accumulator must
// rebuild the same call), and the second prompt holds the call exactly as
// the model wrote it plus the tool result, as the template renders them.
// tool_choice "required" is refused with a 400 naming the field.
func TestOpenAIToolConversation(t *testing.T) {
	call := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"celsius\"}}\n</tool_call>"
	sc := &script{replies: []string{call, call, "It is 21 °C in Zürich."}}
	ts := qwenToolServer(t, nil)
	ts.gen = sc.gen
	client := openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
	ctx := context.Background()

	params := openai.ChatCompletionNewParams{
		Model:    qwenModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Zürich?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        "get_weather",
			Description: openai.String("Current weather in a city."),
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{
				"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}}},
				"required": []string{"city"}},
		})},
	}
	whole, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	ch := whole.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.Content != "" {
		t.Fatalf("reply %+v", ch)
	}
	tc := ch.Message.ToolCalls[0]
	var args struct{ City, Unit string }
	if tc.Type != "function" || tc.Function.Name != "get_weather" || json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil ||
		args.City != "Zürich" || args.Unit != "celsius" || !strings.HasPrefix(tc.ID, "call_") {
		t.Fatalf("tool call %+v", tc)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	finished := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		if _, ok := acc.JustFinishedToolCall(); ok {
			finished++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 1 || acc.Choices[0].FinishReason != ch.FinishReason {
		t.Fatalf("accumulated %+v", acc.Choices)
	}
	st := acc.Choices[0].Message.ToolCalls[0]
	if st.Function.Name != tc.Function.Name || st.Function.Arguments != tc.Function.Arguments || st.Type != tc.Type ||
		!strings.HasPrefix(st.ID, "call_") || acc.Choices[0].Message.Content != ch.Message.Content || finished != 1 {
		t.Errorf("streamed call %+v (finished %d), non-streamed %+v", st, finished, tc)
	}

	// Round trip: the call goes back with its result.
	params.Messages = append(params.Messages, ch.Message.ToParam(), openai.ToolMessage(`{"temp": 21}`, tc.ID))
	answer, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if answer.Choices[0].Message.Content != "It is 21 °C in Zürich." || answer.Choices[0].FinishReason != "stop" || len(answer.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("answer %+v", answer.Choices[0])
	}
	if p := sc.prompt(2); !strings.HasSuffix(p, "<|im_start|>assistant\n"+call+"<|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n") {
		t.Errorf("second prompt does not end with the call and its result:\n%s", p)
	}

	params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	_, err = client.Chat.Completions.New(ctx, params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "tool_choice" || !strings.Contains(apiErr.Message, "constrained decoding") {
		t.Errorf("tool_choice required: %v", err)
	}
}
