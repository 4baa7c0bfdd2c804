//go:build !race

package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"nanoserve/chat"

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

// TestOpenAIToolChoiceRequired: with the llama3-json format (a bare JSON
// call, which the grammar engine enforces from the call's JSON Schema),
// tool_choice "required" and a named function make the random-weight
// Qwen2 model itself — no script — answer with a call that parses and
// fits the function's schema, greedy and sampled.
func TestOpenAIToolChoiceRequired(t *testing.T) {
	ts := qwenToolServer(t, func(o *Options) { o.ToolFormat = chat.ToolFormatLlama3 })
	client := openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
	tool := func(name string, props map[string]any, required []string) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name,
			Parameters: shared.FunctionParameters{"type": "object", "properties": props, "required": required, "additionalProperties": false}})
	}
	tools := []openai.ChatCompletionToolUnionParam{
		tool("get_weather", map[string]any{"city": map[string]any{"type": "string", "maxLength": 12}, "unit": map[string]any{"enum": []string{"celsius", "fahrenheit"}}}, []string{"city", "unit"}),
		tool("add", map[string]any{"a": map[string]any{"type": "integer", "minimum": 0, "maximum": 99}, "b": map[string]any{"type": "integer", "minimum": 0, "maximum": 99}}, []string{"a", "b"}),
	}
	choices := []openai.ChatCompletionToolChoiceOptionUnionParam{
		{OfAuto: openai.String("required")},
		openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "add"}),
	}
	// Greedy, the streamed call accumulated by the client equals the
	// non-streamed one.
	params := openai.ChatCompletionNewParams{Model: qwenModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
		Tools: tools, ToolChoice: choices[0], Temperature: openai.Float(0), MaxTokens: openai.Int(120)}
	whole, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(whole.Choices[0].Message.ToolCalls) != 1 || len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 1 ||
		acc.Choices[0].Message.ToolCalls[0].Function.Name != whole.Choices[0].Message.ToolCalls[0].Function.Name ||
		acc.Choices[0].Message.ToolCalls[0].Function.Arguments != whole.Choices[0].Message.ToolCalls[0].Function.Arguments ||
		acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("streamed %+v, whole %+v", acc.Choices, whole.Choices)
	}
	for ci, choice := range choices {
		for _, temp := range []float64{0, 1} {
			for seed := range int64(2) {
				resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model: qwenModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
					Tools: tools, ToolChoice: choice, Temperature: openai.Float(temp), Seed: openai.Int(seed), MaxTokens: openai.Int(120),
				})
				if err != nil {
					t.Fatal(err)
				}
				ch := resp.Choices[0]
				if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
					t.Fatalf("choice %d T=%v seed %d: %+v", ci, temp, seed, ch)
				}
				c := ch.Message.ToolCalls[0]
				var args map[string]any
				if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
					t.Fatalf("arguments %q: %v", c.Function.Arguments, err)
				}
				switch c.Function.Name {
				case "get_weather":
					city, ok := args["city"].(string)
					unit := args["unit"]
					if ci == 1 || !ok || len([]rune(city)) > 12 || (unit != "celsius" && unit != "fahrenheit") || len(args) != 2 {
						t.Errorf("get_weather call %s", c.Function.Arguments)
					}
				case "add":
					a, aok := args["a"].(float64)
					b, bok := args["b"].(float64)
					if !aok || !bok || a != float64(int(a)) || a < 0 || a > 99 || b < 0 || b > 99 || len(args) != 2 {
						t.Errorf("add call %s", c.Function.Arguments)
					}
				default:
					t.Errorf("call to %q", c.Function.Name)
				}
			}
		}
	}
}
