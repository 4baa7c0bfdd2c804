//go:build !race

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesOpenAIGo drives /v1/responses with OpenAI's official Go
// client (v3): Responses.New with instructions and a string input,
// NewStreaming (the deltas and the completed response), and a function
// tool round trip (the forced call after the template's reasoning, then
// its output with the reasoning item and the call in the input list); each answer equals /v1/chat/completions' to the same
// request at temperature 0, token counts included.
func TestResponsesOpenAIGo(t *testing.T) {
	ts := qwenToolServer(t, nil)
	client := openai.NewClient(option.WithBaseURL(ts.url+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
	ctx := context.Background()
	check := func(name string, r *responses.Response, c chatReply) {
		t.Helper()
		status := responses.ResponseStatusCompleted
		if c.Finish == "length" {
			status = responses.ResponseStatusIncomplete
		}
		var reasoning string
		for _, o := range r.Output {
			if o.Type == "reasoning" {
				for _, c := range o.AsReasoning().Content {
					reasoning += c.Text
				}
			}
		}
		if r.OutputText() != c.Content || reasoning != c.Reasoning || r.Usage.InputTokens != int64(c.Usage.PromptTokens) || r.Usage.OutputTokens != int64(c.Usage.CompletionTokens) || r.Status != status {
			t.Errorf("%s: response %q %s %+v; chat %+v", name, r.OutputText(), r.Status, r.Usage, c)
		}
	}

	params := responses.ResponseNewParams{
		Model:           qwenModel,
		Instructions:    openai.String("Be brief."),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("Tell me a story")},
		MaxOutputTokens: openai.Int(12),
		Temperature:     openai.Float(0),
	}
	plain := chatCompletion(t, ts, `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell me a story"}],"max_tokens":12,"temperature":0}`)
	r, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	check("New", r, plain)

	stream := client.Responses.NewStreaming(ctx, params)
	var deltas string
	var final *responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			deltas += ev.Delta
		case "response.incomplete", "response.completed":
			final = &ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if final == nil || deltas != plain.Content {
		t.Fatalf("streamed deltas %q (final %v), chat %q", deltas, final != nil, plain.Content)
	}
	// The streamed response has its output items (OutputText reads them).
	check("NewStreaming", final, plain)

	// A function-tool round trip.
	tool := responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required": []string{"city"}, "additionalProperties": false}, true)
	tool.OfFunction.Description = openai.String("Current weather in a city.")
	ask := responses.ResponseInputItemParamOfMessage("What's the weather in Zurich?", responses.EasyInputMessageRoleUser)
	callParams := responses.ResponseNewParams{
		Model: qwenModel, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{ask}},
		Tools:           []responses.ToolUnionParam{tool},
		ToolChoice:      responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
		MaxOutputTokens: openai.Int(120), Temperature: openai.Float(0),
	}
	// The client writes a function tool's fields in this order.
	tools := `[{"type":"function","function":{"strict":true,"parameters":{"additionalProperties":false,"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"name":"get_weather","description":"Current weather in a city."}}]`
	chatCall := chatCompletion(t, ts, `{"messages":[{"role":"user","content":"What's the weather in Zurich?"}],"tools":`+tools+`,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"max_tokens":120,"temperature":0}`)
	call, err := client.Responses.New(ctx, callParams)
	if err != nil {
		t.Fatal(err)
	}
	// The output: the reasoning (this template thinks first), the call.
	n := len(call.Output)
	if n == 0 || call.Output[n-1].Type != "function_call" || len(chatCall.Calls) != 1 {
		t.Fatalf("call output %+v; chat %+v", call.Output, chatCall)
	}
	check("call", call, chatCall)
	fc := call.Output[n-1].AsFunctionCall()
	if fc.Name != "get_weather" || fc.Arguments != chatCall.Calls[0].Function.Arguments {
		t.Errorf("call %+v; chat %+v", fc, chatCall)
	}
	reasoning := ""
	for _, o := range call.Output[:n-1] {
		rs := o.AsReasoning()
		for _, c := range rs.Content {
			reasoning += c.Text
		}
		p := rs.ToParam()
		callParams.Input.OfInputItemList = append(callParams.Input.OfInputItemList, responses.ResponseInputItemUnionParam{OfReasoning: &p})
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp": 21}`)
	out.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
	callParams.Input.OfInputItemList = append(callParams.Input.OfInputItemList,
		responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name), out)
	callParams.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{}
	callParams.MaxOutputTokens = openai.Int(12)
	answer, err := client.Responses.New(ctx, callParams)
	if err != nil {
		t.Fatal(err)
	}
	thinking, _ := json.Marshal(reasoning)
	turn := fmt.Sprintf(`[{"role":"user","content":"What's the weather in Zurich?"},{"role":"assistant","content":"","reasoning_content":%s,"tool_calls":[{"id":%q,"type":"function","function":{"name":"get_weather","arguments":%q}}]},{"role":"tool","tool_call_id":%q,"content":"{\"temp\": 21}"}]`,
		thinking, fc.CallID, fc.Arguments, fc.CallID)
	check("answer", answer, chatCompletion(t, ts, `{"messages":`+turn+`,"tools":`+tools+`,"max_tokens":12,"temperature":0}`))
	if !strings.HasPrefix(answer.ID, "resp_") || answer.Object != "response" {
		t.Errorf("answer id %q object %q", answer.ID, answer.Object)
	}
}
