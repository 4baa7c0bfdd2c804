//go:build !race

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"nanoserve/chat"

	"github.com/santhosh-tekuri/jsonschema/v6"

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
func TestOpenAIToolConversation(t *testing.T) {
	call := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"celsius\"}}\n</tool_call>"
	sc := &script{replies: []string{call, call, "It is 21 °C in Zürich."}}
	ts := qwenToolServer(t, nil)
	ts.gen = scripted(sc.gen)
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

}

// TestOpenAIToolChoiceRequired: in every tool-call format — llama3-json's
// bare JSON, Hermes' <tool_call> blocks (the Qwen2 template's own format)
// Mistral's [TOOL_CALLS] array (which this vocabulary spells as text) and
// the generic format's {"tool_call"} / {"tool_calls": [...]} object
// — tool_choice "required" and a named function make the random-weight
// Qwen2 model itself, with no script, answer with calls that parse and
// validate against the function's schema (an independent JSON Schema
// validator), greedy and sampled, with and without parallel calls; a
// streamed reply accumulated by the client equals the non-streamed one.
func TestOpenAIToolChoiceRequired(t *testing.T) {
	for _, format := range []chat.ToolFormat{chat.ToolFormatLlama3, chat.ToolFormatHermes, chat.ToolFormatMistral, chat.ToolFormatGeneric} {
		t.Run(string(format), func(t *testing.T) { testForcedCalls(t, format) })
	}
}

func testForcedCalls(t *testing.T, format chat.ToolFormat) {
	ts := qwenToolServer(t, func(o *Options) {
		if format != chat.ToolFormatHermes { // Hermes: detected from the template
			o.ToolFormat = format
		}
	})
	client := openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
	schemas := map[string]map[string]any{}
	tool := func(name string, props map[string]any, required []string) openai.ChatCompletionToolUnionParam {
		schemas[name] = map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name, Parameters: shared.FunctionParameters(schemas[name])})
	}
	tools := []openai.ChatCompletionToolUnionParam{
		tool("get_weather", map[string]any{"city": map[string]any{"type": "string", "maxLength": 12}, "unit": map[string]any{"enum": []string{"celsius", "fahrenheit"}}}, []string{"city", "unit"}),
		tool("add", map[string]any{"a": map[string]any{"type": "integer", "minimum": 0, "maximum": 99}, "b": map[string]any{"type": "integer", "minimum": 0, "maximum": 99}}, []string{"a", "b"}),
	}
	validators := map[string]*jsonschema.Schema{}
	for name, sch := range schemas {
		raw, _ := json.Marshal(sch)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(name+".json", doc); err != nil {
			t.Fatal(err)
		}
		v, err := c.Compile(name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		validators[name] = v
	}
	check := func(what string, ch openai.ChatCompletionChoice, named string, parallel bool) {
		t.Helper()
		calls := ch.Message.ToolCalls
		if ch.FinishReason != "tool_calls" || len(calls) == 0 || (!parallel && len(calls) != 1) {
			t.Fatalf("%s: finish %q, %d calls (parallel %v): %+v", what, ch.FinishReason, len(calls), parallel, ch.Message)
		}
		t.Logf("%s: %d call(s), first %s%s", what, len(calls), calls[0].Function.Name, calls[0].Function.Arguments)
		for _, c := range calls {
			v := validators[c.Function.Name]
			if v == nil || (named != "" && c.Function.Name != named) {
				t.Fatalf("%s: call to %q", what, c.Function.Name)
			}
			args, err := jsonschema.UnmarshalJSON(strings.NewReader(c.Function.Arguments))
			if err != nil {
				t.Fatalf("%s: arguments %q: %v", what, c.Function.Arguments, err)
			}
			if err := v.Validate(args); err != nil {
				t.Errorf("%s: %s arguments %s: %v", what, c.Function.Name, c.Function.Arguments, err)
			}
		}
	}
	choices := []openai.ChatCompletionToolChoiceOptionUnionParam{
		{OfAuto: openai.String("required")},
		openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "add"}),
	}
	// Greedy, the streamed calls accumulated by the client equal the
	// non-streamed ones.
	params := openai.ChatCompletionNewParams{Model: qwenModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
		Tools: tools, ToolChoice: choices[0], Temperature: openai.Float(0), MaxTokens: openai.Int(120)}
	whole, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	check("greedy", whole.Choices[0], "", true)
	stream := client.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	wc := whole.Choices[0].Message.ToolCalls
	same := len(acc.Choices) == 1 && len(acc.Choices[0].Message.ToolCalls) == len(wc) && acc.Choices[0].FinishReason == "tool_calls"
	for i := 0; same && i < len(wc); i++ {
		ac := acc.Choices[0].Message.ToolCalls[i]
		same = ac.Function.Name == wc[i].Function.Name && ac.Function.Arguments == wc[i].Function.Arguments
	}
	if !same {
		t.Errorf("streamed %+v, whole %+v", acc.Choices, whole.Choices)
	}
	for ci, choice := range choices {
		named := []string{"", "add"}[ci]
		for _, temp := range []float64{0, 1} {
			for seed := range int64(2) {
				parallel := seed == 0
				resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model: qwenModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
					Tools: tools, ToolChoice: choice, Temperature: openai.Float(temp), Seed: openai.Int(seed), MaxTokens: openai.Int(120),
					ParallelToolCalls: openai.Bool(parallel),
				})
				if err != nil {
					t.Fatal(err)
				}
				check(fmt.Sprintf("choice %d T=%v seed %d", ci, temp, seed), resp.Choices[0], named, parallel)
			}
		}
	}
}
